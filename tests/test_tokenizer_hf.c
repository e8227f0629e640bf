/*
 * test_tokenizer_hf.c — tokenizers read from Hugging Face tokenizer.json
 * files (tokenizer_create_from_hf) against the GGUF path and llama.cpp.
 *
 *   test_tokenizer_hf              the tiny Gemma 1/2/3 folders
 *                                  (tests/data/tiny/gemma{1,2,3}-hf, written by
 *                                  tools/golden/make_hf_tokenizers.py) against
 *                                  their GGUFs: vocabulary, special ids, ids in
 *                                  all four modes and decodes on the tokenizer
 *                                  corpus and on random strings; then
 *                                  hand-made tokenizer.json files, good ones
 *                                  and hostile ones (each must fail with
 *                                  SW_ERR_FORMAT / SW_ERR_UNSUPPORTED and a
 *                                  message, leaking nothing).
 *   test_tokenizer_hf --model DIR  the default model's tokenizer.json
 *                                  (unpacked into DIR by CTest) against
 *                                  llama.cpp's ids in tokenizer_golden.bin (all
 *                                  strings, all four modes, decodes) and
 *                                  against the GGUF's vocabulary.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tok_golden_reader.h"
#include "format/gguf.h"
#include "format/json_util.h"
#include "tokenizer/tokenizer.h"

#define MARK "\xe2\x96\x81" /* U+2581 */
#define GEMMA_BOS 2

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint8_t *read_whole(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    uint8_t *data = NULL;
    long size;
    if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (size = ftell(fp)) < 0 ||
        fseek(fp, 0, SEEK_SET) != 0 || (data = malloc((size_t)size + 1)) == NULL ||
        fread(data, 1, (size_t)size, fp) != (size_t)size) {
        free(data);
        data = NULL;
    }
    if (fp != NULL)
        fclose(fp);
    *n = data ? (size_t)size : 0;
    return data;
}

static tokenizer *gguf_tokenizer(const char *path) {
    gguf_file *f = NULL;
    tokenizer *t = NULL;
    SW_CHECK_OK(gguf_open(path, &f));
    if (f != NULL)
        SW_CHECK_OK(tokenizer_create_from_gguf(f, &t));
    gguf_close(f);
    return t;
}

/* Ids of text in mode (bit 1: BOS, bit 0: parse special); NULL on error. */
static int32_t *encode(const tokenizer *t, const uint8_t *text, size_t len, int mode,
                       size_t *n) {
    unsigned flags = (mode & 2 ? SW_TOK_ADD_BOS : 0) | (mode & 1 ? SW_TOK_PARSE_SPECIAL : 0);
    size_t cap = 3 * len + 8;
    int32_t *ids = malloc(cap * sizeof *ids);
    *n = 0;
    if (ids == NULL)
        return NULL;
    sw_status st = tokenizer_encode(t, (const char *)text, len, flags, ids, cap, n);
    SW_CHECK(st == SW_OK && *n <= cap, "encode of %zu bytes: %s %s", len, sw_status_name(st),
             sw_last_error());
    if (st != SW_OK || *n > cap) {
        free(ids);
        return NULL;
    }
    return ids;
}

static bool same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return a != NULL && b != NULL && na == nb && memcmp(a, b, na * sizeof *a) == 0;
}

/* Decodes ids with t into a malloc'd buffer. */
static char *decode(const tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    size_t cap = 40 * n + 64;
    char *buf = malloc(cap);
    *len = 0;
    if (buf == NULL || tokenizer_decode(t, ids, n, buf, cap, len) != SW_OK || *len > cap) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- vocabulary comparison ------------------------------------------------------- */

typedef struct vocab_diff {
    size_t text, type, piece;
    int32_t first_type; /* first id whose type differs, -1 none */
} vocab_diff;

static bool same_piece(const tokenizer *g, const tokenizer *h, int32_t id, int special) {
    char a[512], b[512];
    size_t la = 0, lb = 0;
    sw_status s1 = special ? tokenizer_token_to_piece_special(g, id, a, sizeof a, &la)
                           : tokenizer_token_to_piece(g, id, a, sizeof a, &la);
    sw_status s2 = special ? tokenizer_token_to_piece_special(h, id, b, sizeof b, &lb)
                           : tokenizer_token_to_piece(h, id, b, sizeof b, &lb);
    return s1 == s2 && la == lb && (la > sizeof a || memcmp(a, b, la) == 0);
}

/* Texts, types and printed pieces of the ids both tokenizers have. */
static vocab_diff compare_vocab(const tokenizer *g, const tokenizer *h, const char *what) {
    vocab_diff d = {0, 0, 0, -1};
    size_t n = tokenizer_n_vocab(g) < tokenizer_n_vocab(h) ? tokenizer_n_vocab(g)
                                                           : tokenizer_n_vocab(h);
    for (int32_t id = 0; (size_t)id < n; id++) {
        size_t lg, lh;
        const char *tg = tokenizer_token_text(g, id, &lg), *th = tokenizer_token_text(h, id, &lh);
        if (lg != lh || memcmp(tg, th, lg) != 0) {
            if (d.text++ < 3)
                fprintf(stderr, "%s: id %d is '%.40s' in the GGUF, '%.40s' from tokenizer.json\n",
                        what, id, tg, th);
        }
        if (tokenizer_token_type(g, id) != tokenizer_token_type(h, id)) {
            if (d.type++ < 3)
                fprintf(stderr, "%s: id %d '%.40s' has type %d in the GGUF, %d from "
                        "tokenizer.json\n", what, id, tg, tokenizer_token_type(g, id),
                        tokenizer_token_type(h, id));
            if (d.first_type < 0)
                d.first_type = id;
        }
        d.piece += !same_piece(g, h, id, 0) + !same_piece(g, h, id, 1);
    }
    return d;
}

static void check_same_special(const tokenizer *g, const tokenizer *h, const char *what) {
    sw_special_tokens a, b;
    tokenizer_special(g, &a);
    tokenizer_special(h, &b);
    SW_CHECK(a.bos == b.bos && a.eos == b.eos && a.unk == b.unk && a.pad == b.pad &&
             a.start_of_turn == b.start_of_turn && a.end_of_turn == b.end_of_turn &&
             a.add_bos == b.add_bos,
             "%s: special ids bos %d/%d eos %d/%d unk %d/%d pad %d/%d turn %d/%d %d/%d "
             "add_bos %d/%d (GGUF/tokenizer.json)", what, a.bos, b.bos, a.eos, b.eos, a.unk,
             b.unk, a.pad, b.pad, a.start_of_turn, b.start_of_turn, a.end_of_turn,
             b.end_of_turn, a.add_bos, b.add_bos);
}

/* ---- (a) the default model against llama.cpp's golden ids --------------------------- */

#define SAME_WITH_BOS 0xFFFFFFFFu
#define SAME_AS_NO_SPECIAL 0xFFFFFFFEu
#define REFUSED 0xFFFFFFFDu
#define RT_IS_TEXT 0xFFFFFFFFu

/* The golden list of variant v, resolving the file's markers. */
static int32_t *variant_ids(reader *r, int v, int32_t *const lists[4], const size_t n[4],
                            size_t *n_out, bool *refused) {
    uint32_t k = rd_u32(r);
    *refused = k == REFUSED;
    *n_out = 0;
    if (k == REFUSED)
        return calloc(1, sizeof(int32_t));
    if (k == SAME_WITH_BOS || k == SAME_AS_NO_SPECIAL) {
        int from = k == SAME_WITH_BOS ? v - 2 : v - 1;
        size_t extra = k == SAME_WITH_BOS ? 1 : 0;
        if (from < 0 || lists[from] == NULL) {
            r->bad = true;
            return NULL;
        }
        int32_t *ids = malloc((n[from] + 1) * sizeof *ids);
        if (ids == NULL)
            return NULL;
        ids[0] = GEMMA_BOS;
        memcpy(ids + extra, lists[from], n[from] * sizeof *ids);
        *n_out = n[from] + extra;
        return ids;
    }
    *n_out = k;
    return rd_ids(r, k);
}

typedef struct golden_stats {
    size_t n_encode, n_identical, n_rt, n_decode, n_decode_ok;
    int printed;
} golden_stats;

static void golden_encode_entry(const tokenizer *t, reader *r, const char *name,
                                golden_stats *s) {
    size_t len, n_want[4] = {0}, n_got[4] = {0};
    const uint8_t *text = rd_blob(r, &len);
    int32_t *want[4] = {NULL}, *got[4] = {NULL};
    bool all = true;
    for (int v = 0; v < 4 && !r->bad; v++) {
        bool refused;
        if ((want[v] = variant_ids(r, v, want, n_want, &n_want[v], &refused)) == NULL)
            break;
        got[v] = encode(t, text, len, v, &n_got[v]);
        bool same = refused || same_ids(got[v], n_got[v], want[v], n_want[v]);
        if (!same && s->printed++ < 5)
            fprintf(stderr, "MISMATCH '%s' mode %d: llama.cpp %zu ids, tokenizer.json %zu\n",
                    name, v, n_want[v], n_got[v]);
        SW_CHECK(same, "entry '%s' mode %d: ids differ from llama.cpp", name, v);
        all = all && same;
    }
    size_t rt_len = rd_u32(r);
    const uint8_t *rt = rt_len == RT_IS_TEXT ? text : rd_bytes(r, rt_len);
    rt_len = rt_len == RT_IS_TEXT ? len : rt_len;
    if (!r->bad && got[0] != NULL) {
        size_t dlen;
        char *back = decode(t, got[0], n_got[0], &dlen);
        bool same = back != NULL && dlen == rt_len && memcmp(back, rt, rt_len) == 0;
        SW_CHECK(same, "entry '%s': decode differs from llama.cpp's", name);
        s->n_rt += same;
        s->n_encode++;
        s->n_identical += all;
        free(back);
    }
    for (int v = 0; v < 4; v++) {
        free(want[v]);
        free(got[v]);
    }
}

static void golden_decode_entry(const tokenizer *t, reader *r, const char *name,
                                golden_stats *s) {
    size_t n = rd_u32(r), want_len, got_len;
    int32_t *ids = rd_ids(r, n);
    const uint8_t *want = rd_blob(r, &want_len);
    if (ids != NULL && !r->bad) {
        char *got = decode(t, ids, n, &got_len);
        bool same = got != NULL && got_len == want_len && memcmp(got, want, want_len) == 0;
        SW_CHECK(same, "decode entry '%s' differs from llama.cpp", name);
        s->n_decode++;
        s->n_decode_ok += same;
        free(got);
    }
    free(ids);
}

static void check_golden(const tokenizer *t) {
    size_t size = 0, info_len, name_len;
    uint8_t *data = read_whole(sw_test_data("tokenizer_golden.bin"), &size);
    SW_CHECK(data != NULL, "cannot read %s", sw_test_data("tokenizer_golden.bin"));
    if (data == NULL)
        return;
    reader r = {data, data + size, false};
    const uint8_t *magic = rd_bytes(&r, 4);
    SW_CHECK(magic && memcmp(magic, "SWTK", 4) == 0 && rd_u32(&r) == 1, "golden magic/version");
    rd_blob(&r, &info_len);
    uint32_t n_entries = rd_u32(&r);
    golden_stats s = {0};
    for (uint32_t i = 0; i < n_entries && !r.bad; i++) {
        uint32_t kind = rd_u32(&r);
        const uint8_t *name_p = rd_blob(&r, &name_len);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)name_len, name_p ? (const char *)name_p : "");
        if (kind == 0)
            golden_encode_entry(t, &r, name, &s);
        else
            golden_decode_entry(t, &r, name, &s);
    }
    SW_CHECK(!r.bad && r.p == r.end, "golden file truncated or malformed");
    SW_CHECK(s.n_encode >= 500, "golden has only %zu strings", s.n_encode);
    printf("tokenizer.json vs llama.cpp: %zu/%zu strings identical in all 4 modes; decode "
           "identical %zu/%zu; decode-only lists %zu/%zu\n", s.n_identical, s.n_encode, s.n_rt,
           s.n_encode, s.n_decode_ok, s.n_decode);
    free(data);
}

static void check_real(const char *dir) {
    const char *path = sw_test_default_model();
    struct stat sb;
    tokenizer *g = NULL, *h = NULL;
    if (path[0] == '\0' || stat(path, &sb) != 0) {
        SW_CHECK(0, "default model '%s' is missing: run `spillway fetch` first", path);
        return;
    }
    g = gguf_tokenizer(path);
    double t0 = now_ms();
    SW_CHECK_OK(tokenizer_create_from_hf(dir, &h));
    printf("tokenizer.json of %s loaded in %.0f ms\n", dir, now_ms() - t0);
    if (g != NULL && h != NULL) {
        SW_CHECK(tokenizer_n_vocab(g) == tokenizer_n_vocab(h), "n_vocab %zu vs %zu",
                 tokenizer_n_vocab(g), tokenizer_n_vocab(h));
        vocab_diff d = compare_vocab(g, h, "gemma3-270m");
        SW_CHECK(d.text == 0 && d.type == 0 && d.piece == 0, "vocabulary differs: %zu texts, "
                 "%zu types, %zu pieces", d.text, d.type, d.piece);
        check_same_special(g, h, "gemma3-270m");
        SW_CHECK(tokenizer_max_piece_bytes(g) == tokenizer_max_piece_bytes(h), "max piece");
        printf("vocabulary: %zu tokens; differing from the GGUF's: %zu texts, %zu types, %zu "
               "pieces\n", tokenizer_n_vocab(h), d.text, d.type, d.piece);
        check_golden(h);
    }
    tokenizer_destroy(g);
    tokenizer_destroy(h);
}

/* ---- (b) tiny models against their GGUFs ------------------------------------------- */

static bool contains(const uint8_t *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, needle, k) == 0)
            return true;
    return false;
}

typedef struct tiny_stats {
    size_t strings, identical, mask_only, decodes;
    int printed;
} tiny_stats;

/* Both tokenizers on one text in all modes. The one known difference:
 * tokenizer.json has <mask> as an extra control token (transformers adds
 * GemmaTokenizer's default mask token), so with special parsing "<mask>"
 * is one id there. */
static void tiny_compare(const tokenizer *g, const tokenizer *h, const uint8_t *text,
                         size_t len, const char *name, tiny_stats *s) {
    bool all = true, mask = false;
    for (int v = 0; v < 4; v++) {
        size_t na, nb;
        int32_t *a = encode(g, text, len, v, &na), *b = encode(h, text, len, v, &nb);
        bool same = same_ids(a, na, b, nb);
        bool known = !same && (v & 1) && contains(text, len, "<mask>");
        if (!same && !known && s->printed++ < 5)
            fprintf(stderr, "MISMATCH tiny '%s' mode %d: GGUF %zu ids, tokenizer.json %zu\n",
                    name, v, na, nb);
        SW_CHECK(same || known, "tiny '%s' mode %d: ids differ", name, v);
        if (v == 0 && same) {
            size_t la, lb;
            char *da = decode(g, a, na, &la), *db = decode(h, b, nb, &lb);
            bool ok = da && db && la == lb && memcmp(da, db, la) == 0;
            SW_CHECK(ok, "tiny '%s': decodes differ", name);
            s->decodes += ok;
            free(da);
            free(db);
        }
        all = all && same;
        mask = mask || known;
        free(a);
        free(b);
    }
    s->strings++;
    s->identical += all;
    s->mask_only += !all && mask;
}

static uint8_t *hex_bytes(const char *hex, size_t *n) {
    size_t len = strlen(hex) / 2;
    uint8_t *out = malloc(len + 1);
    for (size_t i = 0; out != NULL && i < len; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    *n = len;
    return out;
}

static void tiny_corpus(const tokenizer *g, const tokenizer *h, json_object *corpus,
                        tiny_stats *s) {
    json_object *entries;
    SW_CHECK(jsonu_get_arr(corpus, "entries", "corpus", &entries) == SW_OK, "corpus entries");
    for (size_t i = 0; entries && i < json_object_array_length(entries); i++) {
        json_object *e = json_object_array_get_idx(entries, i);
        const char *name = "", *text;
        size_t len;
        jsonu_get_str(e, "name", "corpus", &name, NULL);
        if (jsonu_get_str(e, "text", "corpus", &text, &len) == SW_OK) {
            tiny_compare(g, h, (const uint8_t *)text, len, name, s);
        } else if (jsonu_get_str(e, "hex", "corpus", &text, NULL) == SW_OK) {
            uint8_t *bytes = hex_bytes(text, &len);
            if (bytes != NULL)
                tiny_compare(g, h, bytes, len, name, s);
            free(bytes);
        }
    }
}

/* Strings glued from random tokens of g, spaces and random bytes. */
static void tiny_random(const tokenizer *g, const tokenizer *h, tiny_stats *s) {
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    uint8_t buf[1024];
    for (int k = 0; k < 300; k++) {
        size_t len = 0, parts = 1 + sw_test_rng_next(&rng) % 24;
        for (size_t p = 0; p < parts && len + 64 < sizeof buf; p++) {
            uint64_t r = sw_test_rng_next(&rng);
            size_t tl;
            const char *t = tokenizer_token_text(g, (int32_t)(r % tokenizer_n_vocab(g)), &tl);
            if (r % 7 == 0) {
                buf[len++] = (uint8_t)(r >> 32);
            } else if (r % 5 == 0) {
                buf[len++] = ' ';
            } else if (tl < 60) {
                for (size_t i = 0; i < tl; i++) /* '▁' typed as a space, as users do */
                    if (i + 2 < tl && memcmp(t + i, MARK, 3) == 0) {
                        buf[len++] = ' ';
                        i += 2;
                    } else {
                        buf[len++] = (uint8_t)t[i];
                    }
            }
        }
        tiny_compare(g, h, buf, len, "random", s);
    }
}

static void check_tiny(int which, json_object *corpus) {
    char gguf[64], dir[64], what[16];
    snprintf(gguf, sizeof gguf, "tiny/gemma%d.gguf", which);
    snprintf(dir, sizeof dir, "tiny/gemma%d-hf", which);
    snprintf(what, sizeof what, "tiny gemma%d", which);
    tokenizer *g = gguf_tokenizer(sw_test_data(gguf)), *h = NULL;
    SW_CHECK_OK(tokenizer_create_from_hf(sw_test_data(dir), &h));
    if (g == NULL || h == NULL)
        goto done;
    size_t n = tokenizer_n_vocab(g);
    SW_CHECK(tokenizer_n_vocab(h) == n + 1, "%s: %zu tokens, GGUF %zu + <mask>", what,
             tokenizer_n_vocab(h), n);
    const char *extra = tokenizer_token_text(h, (int32_t)n, NULL);
    SW_CHECK(extra && strcmp(extra, "<mask>") == 0 &&
             tokenizer_token_type(h, (int32_t)n) == TOK_TYPE_CONTROL, "%s: extra token", what);
    vocab_diff d = compare_vocab(g, h, what);
    /* <unk>: UNKNOWN in the GGUF make_tiny_models.py writes, CONTROL from
     * tokenizer.json's special=true (llama.cpp's converter rule); both are
     * cut out only when parsing special tokens and print nothing. */
    SW_CHECK(d.text == 0 && d.piece == 0 && d.type == 1 && d.first_type == 3 &&
             tokenizer_token_type(g, 3) == TOK_TYPE_UNKNOWN &&
             tokenizer_token_type(h, 3) == TOK_TYPE_CONTROL,
             "%s: %zu texts, %zu pieces, %zu types differ (first %d)", what, d.text, d.piece,
             d.type, d.first_type);
    check_same_special(g, h, what);
    tiny_stats s = {0};
    if (corpus != NULL)
        tiny_corpus(g, h, corpus, &s);
    size_t n_corpus = s.strings;
    tiny_random(g, h, &s);
    SW_CHECK(n_corpus >= 500 && s.identical + s.mask_only == s.strings, "%s: compared", what);
    printf("%s: %zu/%zu strings (%zu corpus + %zu random) identical in all 4 modes, %zu differ "
           "only by <mask> (id %zu in tokenizer.json); %zu decodes identical\n", what,
           s.identical, s.strings, n_corpus, s.strings - n_corpus, s.mask_only, n, s.decodes);
done:
    tokenizer_destroy(g);
    tokenizer_destroy(h);
}

/* ---- (c) hand-made tokenizer.json files -------------------------------------------- */

static char g_dir[64];

static char *file_path(const char *name) {
    static char buf[128];
    snprintf(buf, sizeof buf, "%s/%s", g_dir, name);
    return buf;
}

static void write_file(const char *name, const char *text, size_t len) {
    FILE *f = fopen(file_path(name), "wb");
    bool ok = f != NULL && fwrite(text, 1, len, f) == len;
    ok = f != NULL && fclose(f) == 0 && ok;
    SW_CHECK(ok, "cannot write %s", file_path(name));
}

static void write_str(const char *name, const char *text) {
    write_file(name, text, strlen(text));
}

static void remove_file(const char *name) {
    unlink(file_path(name));
}

/* A small Gemma-like tokenizer.json: specials, "▁", "a", "b", "▁a", "ab",
 * <start_of_turn>, "\n" and "▁▁" as added non-special tokens, and 256 byte
 * tokens (ids 12..267). */
static char *base_json(void) {
    static const char head[] =
        "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":["
        "{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,"
        "\"rstrip\":false,\"normalized\":false,\"special\":true},"
        "{\"id\":1,\"content\":\"<eos>\",\"special\":true},"
        "{\"id\":2,\"content\":\"<bos>\",\"special\":true},"
        "{\"id\":3,\"content\":\"<unk>\",\"special\":true},"
        "{\"id\":9,\"content\":\"<start_of_turn>\",\"special\":true},"
        "{\"id\":10,\"content\":\"\\n\",\"special\":false},"
        "{\"id\":11,\"content\":\"" MARK MARK "\",\"special\":false}],"
        "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
        "\"content\":\"" MARK "\"},"
        "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},"
        "\"behavior\":\"MergedWithPrevious\",\"invert\":false},"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
        "{\"id\":\"<bos>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
        "\"pair\":[],\"special_tokens\":{\"<bos>\":{\"id\":\"<bos>\",\"ids\":[2],"
        "\"tokens\":[\"<bos>\"]}}},"
        "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"ByteFallback\"}]},"
        "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"<unk>\","
        "\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":true,"
        "\"byte_fallback\":true,\"ignore_merges\":false,\"vocab\":{\"<pad>\":0,\"<eos>\":1,"
        "\"<bos>\":2,\"<unk>\":3,\"" MARK "\":4,\"a\":5,\"b\":6,\"" MARK "a\":7,\"ab\":8,"
        "\"<start_of_turn>\":9,\"\\n\":10,\"" MARK MARK "\":11";
    static const char tail[] = "},\"merges\":[[\"" MARK "\",\"a\"],[\"a\",\"b\"],[\"" MARK
                               "\",\"" MARK "\"]]}}";
    char *s = malloc(sizeof head + 256 * 16 + sizeof tail);
    if (s == NULL)
        return NULL;
    size_t n = (size_t)sprintf(s, "%s", head);
    for (int b = 0; b < 256; b++)
        n += (size_t)sprintf(s + n, ",\"<0x%02X>\":%d", b, 12 + b);
    sprintf(s + n, "%s", tail);
    return s;
}

static const char BASE_CONFIG[] =
    "{\"add_bos_token\":true,\"bos_token\":\"<bos>\",\"eos_token\":\"<eos>\","
    "\"pad_token\":\"<pad>\",\"unk_token\":{\"content\":\"<unk>\",\"special\":true},"
    "\"tokenizer_class\":\"GemmaTokenizer\"}";

/* base with the first `from` replaced by `to`; NULL (and a failed check)
 * when `from` is not there. */
static char *with_sub(const char *base, const char *from, const char *to) {
    const char *at = strstr(base, from);
    SW_CHECK(at != NULL, "test bug: '%s' is not in the base file", from);
    if (at == NULL)
        return NULL;
    size_t a = (size_t)(at - base), f = strlen(from), t = strlen(to), rest = strlen(at + f);
    char *s = malloc(a + t + rest + 1);
    if (s != NULL) {
        memcpy(s, base, a);
        memcpy(s + a, to, t);
        memcpy(s + a + t, at + f, rest + 1);
    }
    return s;
}

/* Loads g_dir; SW_OK and a tokenizer, or the failure checked. */
static tokenizer *load(const char *what, sw_status want) {
    static char sentinel;
    tokenizer *t = (tokenizer *)&sentinel; /* must be reset to NULL on failure */
    sw_status st = tokenizer_create_from_hf(g_dir, &t);
    const char *msg = sw_last_error();
    SW_CHECK(st == want, "%s: got %s, want %s (%s)", what, sw_status_name(st),
             sw_status_name(want), msg);
    if (st != SW_OK && getenv("SW_TEST_VERBOSE") != NULL)
        printf("  %-36s %s: %s\n", what, sw_status_name(st), msg);
    if (st != SW_OK) {
        SW_CHECK(t == NULL, "%s: *out not cleared on failure", what);
        SW_CHECK(strstr(msg, ".json") != NULL, "%s: message names no file: %s", what, msg);
        return NULL;
    }
    return t;
}

static void expect_ids(const tokenizer *t, const char *text, int mode, const int32_t *want,
                       size_t n_want, const char *what) {
    size_t n;
    int32_t *ids = t ? encode(t, (const uint8_t *)text, strlen(text), mode, &n) : NULL;
    SW_CHECK(same_ids(ids, n, want, n_want), "%s: ids of '%s' (mode %d)", what, text, mode);
    free(ids);
}

static void check_base(const char *base) {
    write_str("tokenizer.json", base);
    write_str("tokenizer_config.json", BASE_CONFIG);
    tokenizer *t = load("base", SW_OK);
    if (t == NULL)
        return;
    static const int32_t ab_a[] = {2, 8, 7}, a_sp_b[] = {5, 11, 6}, sot[] = {9}, nl[] = {10},
                         c[] = {12 + 'c'};
    expect_ids(t, "ab a", 2, ab_a, 3, "base");
    expect_ids(t, "a  b", 0, a_sp_b, 3, "base");
    expect_ids(t, "<start_of_turn>", 1, sot, 1, "base");
    expect_ids(t, "\n", 0, nl, 1, "base");
    expect_ids(t, "c", 0, c, 1, "base");
    const char *sp = tokenizer_token_text(t, 11, NULL);
    SW_CHECK(tokenizer_n_vocab(t) == 268 && sp && strcmp(sp, "  ") == 0 &&
             tokenizer_token_type(t, 11) == TOK_TYPE_USER_DEFINED &&
             tokenizer_token_type(t, 10) == TOK_TYPE_USER_DEFINED &&
             tokenizer_token_type(t, 3) == TOK_TYPE_CONTROL &&
             tokenizer_token_type(t, 9) == TOK_TYPE_CONTROL &&
             tokenizer_token_type(t, 12) == TOK_TYPE_BYTE &&
             tokenizer_token_type(t, 7) == TOK_TYPE_NORMAL, "base: texts and types");
    sw_special_tokens s;
    tokenizer_special(t, &s);
    SW_CHECK(s.bos == 2 && s.eos == 1 && s.unk == 3 && s.pad == 0 && s.add_bos &&
             s.start_of_turn == 9, "base: special ids");
    tokenizer_destroy(t);
}

/* Variants that must load, each with what it changes. */
static void check_good_variants(const char *base) {
    static const int32_t ab_a[] = {2, 8, 7}, ab_a_nobos[] = {8, 7}, a[] = {7}, b[] = {4, 6};
    char *s;
    tokenizer *t;
    /* merges as "a b" strings (older files) */
    s = with_sub(base, "[[\"" MARK "\",\"a\"],[\"a\",\"b\"],[\"" MARK "\",\"" MARK "\"]]",
                 "[\"" MARK " a\",\"a b\",\"" MARK " " MARK "\"]");
    write_str("tokenizer.json", s ? s : "");
    t = load("string merges", SW_OK);
    expect_ids(t, "ab a", 2, ab_a, 3, "string merges");
    tokenizer_destroy(t);
    free(s);
    /* Prepend("▁") then Replace: a space prefix */
    s = with_sub(base, "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                 "\"content\":\"" MARK "\"}", "\"normalizer\":{\"type\":\"Sequence\","
                 "\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"" MARK "\"},{\"type\":"
                 "\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" MARK "\"}]}");
    write_str("tokenizer.json", s ? s : "");
    t = load("prepend", SW_OK);
    expect_ids(t, "a", 0, a, 1, "prepend");
    expect_ids(t, "b", 0, b, 2, "prepend");
    tokenizer_destroy(t);
    free(s);
    /* no normalizer, Metaspace that only replaces */
    s = with_sub(base, "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
                 "\"content\":\"" MARK "\"},\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":"
                 "{\"String\":\" \"},\"behavior\":\"MergedWithPrevious\",\"invert\":false}",
                 "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":"
                 "\"" MARK "\",\"prepend_scheme\":\"never\",\"split\":false}");
    write_str("tokenizer.json", s ? s : "");
    t = load("metaspace", SW_OK);
    expect_ids(t, "ab a", 2, ab_a, 3, "metaspace");
    tokenizer_destroy(t);
    free(s);
    /* tokenizer_config turns BOS off; specials as {"content": ...} */
    write_str("tokenizer.json", base);
    write_str("tokenizer_config.json", "{\"add_bos_token\":false,\"bos_token\":{\"content\":"
              "\"<bos>\"},\"eos_token\":null}");
    t = load("add_bos_token false", SW_OK);
    expect_ids(t, "ab a", 2, ab_a_nobos, 2, "add_bos_token false");
    tokenizer_destroy(t);
    write_str("tokenizer_config.json", BASE_CONFIG);
}

static void check_fallbacks(const char *base) {
    static const int32_t ab_a[] = {2, 8, 7};
    sw_special_tokens sp;
    tokenizer *t;
    char *s;
    /* no tokenizer_config.json: BOS from the template, EOS from config.json */
    remove_file("tokenizer_config.json");
    write_str("config.json", "{\"bos_token_id\":2,\"eos_token_id\":[1,106],\"pad_token_id\":"
              "null}");
    t = load("config.json fallback", SW_OK);
    expect_ids(t, "ab a", 2, ab_a, 3, "config.json fallback");
    if (t != NULL) {
        tokenizer_special(t, &sp);
        SW_CHECK(sp.bos == 2 && sp.eos == 1 && sp.pad == -1 && sp.add_bos, "fallback ids");
    }
    tokenizer_destroy(t);
    remove_file("config.json");
    /* nothing names a BOS token: none is added, and that is no error */
    s = with_sub(base, "\"post_processor\":{", "\"post_processor\":null,\"pp\":{");
    write_str("tokenizer.json", s ? s : "");
    t = load("no BOS anywhere", SW_OK);
    static const int32_t ab_a_nobos[] = {8, 7};
    expect_ids(t, "ab a", 2, ab_a_nobos, 2, "no BOS anywhere");
    if (t != NULL) {
        tokenizer_special(t, &sp);
        SW_CHECK(sp.bos == -1 && !sp.add_bos && sp.unk == 3, "no BOS: ids");
    }
    tokenizer_destroy(t);
    free(s);
    write_str("tokenizer_config.json", BASE_CONFIG);
    /* an added token beyond model.vocab (Gemma 3's <image_soft_token>) */
    s = with_sub(base, "\"added_tokens\":[", "\"added_tokens\":[{\"id\":268,\"content\":"
                 "\"<image_soft_token>\",\"special\":true},");
    write_str("tokenizer.json", s ? s : "");
    t = load("added beyond vocab", SW_OK);
    SW_CHECK(t && tokenizer_n_vocab(t) == 269 && tokenizer_token_type(t, 268) == TOK_TYPE_CONTROL,
             "added token beyond the vocabulary");
    tokenizer_destroy(t);
    free(s);
    /* a plain "▁▁▁" piece: user-defined "   " for a Gemma tokenizer (the
     * converter quirk), a normal piece otherwise */
    s = with_sub(base, "},\"merges\":[", ",\"" MARK MARK MARK "\":268},\"merges\":[[\"" MARK
                 MARK "\",\"" MARK "\"],[\"" MARK "\",\"" MARK MARK "\"],");
    write_str("tokenizer.json", s ? s : "");
    t = load("space run", SW_OK);
    const char *run = t ? tokenizer_token_text(t, 268, NULL) : NULL;
    SW_CHECK(run && strcmp(run, "   ") == 0 && tokenizer_token_type(t, 268) ==
             TOK_TYPE_USER_DEFINED, "Gemma space run");
    tokenizer_destroy(t);
    write_str("tokenizer_config.json", "{\"tokenizer_class\":\"LlamaTokenizer\"}");
    t = load("space run, not Gemma", SW_OK);
    run = t ? tokenizer_token_text(t, 268, NULL) : NULL;
    SW_CHECK(run && strcmp(run, MARK MARK MARK) == 0 && tokenizer_token_type(t, 268) ==
             TOK_TYPE_NORMAL, "plain space run");
    tokenizer_destroy(t);
    free(s);
    write_str("tokenizer_config.json", BASE_CONFIG);
}

typedef struct bad_case {
    const char *what;
    const char *file; /* which file gets the change */
    const char *from; /* NULL: the file's whole text is `to` */
    const char *to;
    sw_status want;
} bad_case;

#define TJ "tokenizer.json"
#define TC "tokenizer_config.json"
#define CJ "config.json"
#define F SW_ERR_FORMAT
#define U SW_ERR_UNSUPPORTED
#define NORM "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"" \
             MARK "\"}"
#define PRE "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":" \
            "\"MergedWithPrevious\",\"invert\":false}"
#define DEEP8 "[[[[[[[["
#define DEEP_END8 "]]]]]]]]"
#define DEEP DEEP8 DEEP8 DEEP8 DEEP8 DEEP8 DEEP8 DEEP8 DEEP8 DEEP8 DEEP_END8 DEEP_END8 DEEP_END8 \
             DEEP_END8 DEEP_END8 DEEP_END8 DEEP_END8 DEEP_END8 DEEP_END8
#define SINGLE "\"single\":[{\"SpecialToken\":{\"id\":\"<bos>\",\"type_id\":0}},"

static const bad_case BAD[] = {
    {"not JSON", TJ, NULL, "{\"model\": {", F},
    {"root is an array", TJ, NULL, "[]", F},
    {"document is null", TJ, NULL, "null", F},
    {"trailing data", TJ, "]]}}", "]]}} x", F},
    {"invalid UTF-8", TJ, "\"a\":5", "\"\xff\":5", F},
    {"nesting too deep", TJ, "\"truncation\":null", "\"truncation\":" DEEP, F},
    {"model not an object", TJ, "\"model\":{", "\"model\":5,\"m\":{", F},
    {"model missing", TJ, "\"model\":{", "\"m\":{", F},
    {"vocab missing", TJ, "\"vocab\":{", "\"v\":{", F},
    {"vocab not an object", TJ, "\"vocab\":{", "\"vocab\":[1],\"v\":{", F},
    {"vocab id a string", TJ, "\"a\":5", "\"a\":\"5\"", F},
    {"vocab id a float", TJ, "\"a\":5", "\"a\":5.5", F},
    {"vocab id null", TJ, "\"a\":5", "\"a\":null", F},
    {"duplicate id", TJ, "\"b\":6", "\"b\":5", F},
    {"gap in ids", TJ, "\"b\":6", "\"b\":269", F},
    {"negative id", TJ, "\"b\":6", "\"b\":-6", F},
    {"huge id", TJ, "\"b\":6", "\"b\":99999999999", F},
    {"id beyond 64 bits", TJ, "\"b\":6", "\"b\":123456789012345678901234567890", F},
    {"empty vocabulary", TJ, NULL, "{" NORM ",\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,"
     "\"vocab\":{},\"merges\":[]}}", F},
    {"merges missing", TJ, "\"merges\":[", "\"m\":[", F},
    {"merges not an array", TJ, "\"merges\":[", "\"merges\":{},\"m\":[", F},
    {"merge names an unknown piece", TJ, "[\"a\",\"b\"]", "[\"a\",\"zz\"]", F},
    {"merge of a number", TJ, "[\"a\",\"b\"]", "[\"a\",6]", F},
    {"merge of three pieces", TJ, "[\"a\",\"b\"]", "[\"a\",\"b\",\"c\"]", F},
    {"merge string without a space", TJ, "[\"a\",\"b\"]", "\"ab\"", F},
    {"merge makes no token", TJ, "[\"a\",\"b\"]", "[\"b\",\"a\"]", F},
    {"merge listed twice", TJ, "[\"a\",\"b\"]", "[\"a\",\"b\"],[\"a\",\"b\"]", F},
    {"added_tokens not an array", TJ, "\"added_tokens\":[", "\"added_tokens\":{},\"x\":[", F},
    {"added token not an object", TJ, "\"added_tokens\":[", "\"added_tokens\":[5,", F},
    {"added token without id", TJ, "{\"id\":9,\"content\"", "{\"content\"", F},
    {"added token id taken", TJ, "\"added_tokens\":[", "\"added_tokens\":[{\"id\":5,"
     "\"content\":\"<new>\",\"special\":true},", F},
    {"added token id differs from vocab", TJ, "{\"id\":9,", "{\"id\":3,", F},
    {"added special not a bool", TJ, "\"<start_of_turn>\",\"special\":true",
     "\"<start_of_turn>\",\"special\":\"yes\"", F},
    {"unk_token not in vocab", TJ, "\"unk_token\":\"<unk>\"", "\"unk_token\":\"<nope>\"", F},
    {"unk_token not a string", TJ, "\"unk_token\":\"<unk>\"", "\"unk_token\":3", F},
    {"normalizer without type", TJ, NORM, "\"normalizer\":{\"x\":1}", F},
    {"normalizer a number", TJ, NORM, "\"normalizer\":5", F},
    {"template token undefined", TJ, "{\"SpecialToken\":{\"id\":\"<bos>\"",
     "{\"SpecialToken\":{\"id\":\"<s>\"", F},
    {"template id out of range", TJ, "\"ids\":[2]", "\"ids\":[9999]", F},
    {"config: not JSON", TC, NULL, "{", F},
    {"config: an array", TC, NULL, "[]", F},
    {"config: bos_token unknown", TC, NULL, "{\"bos_token\":\"<s>\"}", F},
    {"config: bos_token a number", TC, NULL, "{\"bos_token\":2}", F},
    {"config: bos_token without content", TC, NULL, "{\"bos_token\":{\"id\":2}}", F},
    {"config: add_bos_token a string", TC, NULL, "{\"add_bos_token\":\"yes\"}", F},
    {"config.json: eos_token_id a string", CJ, NULL, "{\"eos_token_id\":\"1\"}", F},
    {"config.json: bos_token_id too big", CJ, NULL, "{\"bos_token_id\":100000}", F},
    {"model type Unigram", TJ, "\"type\":\"BPE\"", "\"type\":\"Unigram\"", U},
    {"model type WordPiece", TJ, "\"type\":\"BPE\"", "\"type\":\"WordPiece\"", U},
    {"byte_fallback false", TJ, "\"byte_fallback\":true", "\"byte_fallback\":false", U},
    {"byte_fallback absent", TJ, "\"byte_fallback\":true,", "", U},
    {"dropout", TJ, "\"dropout\":null", "\"dropout\":0.1", U},
    {"subword prefix", TJ, "\"continuing_subword_prefix\":null",
     "\"continuing_subword_prefix\":\"##\"", U},
    {"ignore_merges", TJ, "\"ignore_merges\":false", "\"ignore_merges\":true", U},
    {"normalizer NFKC", TJ, NORM, "\"normalizer\":{\"type\":\"NFKC\"}", U},
    {"normalizer with Lowercase", TJ, NORM, "\"normalizer\":{\"type\":\"Sequence\","
     "\"normalizers\":[{\"type\":\"Lowercase\"}]}", U},
    {"normalizer regex", TJ, "{\"String\":\" \"},\"content\"", "{\"Regex\":\" \"},\"content\"",
     U},
    {"spaces left alone", TJ, NORM, "\"normalizer\":null", U},
    {"pre_tokenizer ByteLevel", TJ, PRE, "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}", U},
    {"pre_tokenizer Metaspace split", TJ, PRE, "\"pre_tokenizer\":{\"type\":\"Metaspace\","
     "\"replacement\":\"" MARK "\",\"prepend_scheme\":\"never\",\"split\":true}", U},
    {"pre_tokenizer Metaspace first", TJ, PRE, "\"pre_tokenizer\":{\"type\":\"Metaspace\","
     "\"replacement\":\"" MARK "\",\"prepend_scheme\":\"first\",\"split\":false}", U},
    {"template with two tokens before", TJ, SINGLE, SINGLE "{\"SpecialToken\":{\"id\":"
     "\"<bos>\",\"type_id\":0}},", U},
    {"post_processor RobertaProcessing", TJ, "\"type\":\"TemplateProcessing\"",
     "\"type\":\"RobertaProcessing\"", U},
    {"added token lstrip", TJ, "\"lstrip\":false", "\"lstrip\":true", U},
    {"merges incomplete", TJ, "[\"a\",\"b\"],", "", U},
    {"template and config disagree", TC, NULL, "{\"bos_token\":\"<eos>\"}", U},
};

static void run_bad_case(const char *base, const bad_case *c) {
    char *s = NULL;
    if (c->from != NULL)
        s = with_sub(base, c->from, c->to);
    const char *text = c->from != NULL ? s : c->to;
    if (text == NULL)
        return;
    if (strcmp(c->file, CJ) == 0)
        remove_file(TC);
    write_str(c->file, text);
    tokenizer *t = load(c->what, c->want);
    tokenizer_destroy(t);
    free(s);
    write_str(TJ, base);
    write_str(TC, BASE_CONFIG);
    remove_file(CJ);
}

/* Every 5th prefix of the base file, and 300 random one-byte changes: a
 * status, never a crash; whatever loads must encode. */
static void check_damage(const char *base) {
    size_t len = strlen(base), n_ok = 0, n_fail = 0;
    char *s = malloc(len + 1);
    uint64_t rng = 42;
    static const char bytes[] = "{}[]\",:0123456789 -.etnrufalsx\\\xe2\xff";
    for (size_t cut = 0; s != NULL && cut < len; cut += 5) {
        write_file(TJ, base, cut);
        tokenizer *t = NULL;
        sw_status st = tokenizer_create_from_hf(g_dir, &t);
        SW_CHECK(st == SW_ERR_FORMAT && t == NULL, "truncated at %zu: %s", cut,
                 sw_status_name(st));
        tokenizer_destroy(t);
    }
    for (int k = 0; s != NULL && k < 300; k++) {
        memcpy(s, base, len + 1);
        uint64_t r = sw_test_rng_next(&rng);
        s[r % len] = bytes[(r >> 32) % (sizeof bytes - 1)];
        write_file(TJ, s, len);
        tokenizer *t = NULL;
        sw_status st = tokenizer_create_from_hf(g_dir, &t);
        SW_CHECK((st == SW_OK) == (t != NULL) && (st == SW_OK || sw_last_error()[0] != '\0'),
                 "damaged file: status %s", sw_status_name(st));
        if (t != NULL) {
            int32_t ids[32];
            size_t n;
            SW_CHECK_OK(tokenizer_encode(t, "ab a\n", 5, SW_TOK_ADD_BOS, ids, 32, &n));
        }
        n_ok += st == SW_OK;
        n_fail += st != SW_OK;
        tokenizer_destroy(t);
    }
    printf("damaged files: %zu truncations refused; of 300 one-byte changes %zu load, %zu "
           "refused\n", len / 5 + (len % 5 != 0), n_ok, n_fail);
    write_str(TJ, base);
    free(s);
}

static void check_handmade(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/sw_hf_XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    char *base = base_json();
    SW_CHECK(mkdtemp(g_dir) != NULL && base != NULL, "scratch folder %s", g_dir);
    if (base == NULL)
        return;
    tokenizer *t = NULL;
    sw_status st = tokenizer_create_from_hf(g_dir, &t);
    SW_CHECK(st == SW_ERR_IO && t == NULL && strstr(sw_last_error(), "tokenizer.json"),
             "missing tokenizer.json: %s %s", sw_status_name(st), sw_last_error());
    SW_CHECK(tokenizer_create_from_hf(NULL, &t) == SW_ERR_ARG, "NULL dir");
    check_base(base);
    check_good_variants(base);
    check_fallbacks(base);
    size_t n_bad = sizeof BAD / sizeof BAD[0];
    for (size_t i = 0; i < n_bad; i++)
        run_bad_case(base, &BAD[i]);
    printf("hand-made tokenizer.json: %zu hostile cases refused with a message\n", n_bad);
    check_damage(base);
    remove_file(TJ);
    remove_file(TC);
    remove_file(CJ);
    rmdir(g_dir);
    free(base);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--model") == 0) {
        check_real(argv[2]);
        return sw_check_finish("test_tokenizer_hf --model");
    }
    json_object *corpus = NULL;
    const char *corpus_path = sw_test_data("../../tools/golden/tokenizer_corpus.json");
    SW_CHECK_OK(jsonu_parse_file(corpus_path, JSONU_MAX_FILE_BYTES, &corpus));
    for (int g = 1; g <= 3; g++)
        check_tiny(g, corpus);
    json_object_put(corpus);
    check_handmade();
    return sw_check_finish("test_tokenizer_hf");
}

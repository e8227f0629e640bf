/*
 * test_tokenizer_golden.c — the default model's tokenizer against llama.cpp.
 *
 * tests/data/tokenizer_golden.bin (tools/golden/make_tokenizer_golden.py)
 * holds, for every corpus string, llama.cpp's ids with BOS on/off and
 * special-token parsing on/off, and llama.cpp's detokenization of the plain
 * ids; plus id lists (byte tokens forming invalid UTF-8, control tokens)
 * with their detokenized bytes. Every id must match, every decode must
 * match byte for byte, the streaming UTF-8 printer must reproduce each
 * decode, and 100 KB inputs (the corpus's and adversarial ones) must encode
 * in well under a second. The first differing entry is printed in full.
 *
 * Needs the default model (run `spillway fetch`); without it the test fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "check.h"
#include "tok_golden_reader.h"
#include "tokenizer/tokenizer.h"

#define MAGIC "SWTK"
#define SAME_WITH_BOS 0xFFFFFFFFu
#define SAME_AS_NO_SPECIAL 0xFFFFFFFEu
#define REFUSED 0xFFFFFFFDu
#define RT_IS_TEXT 0xFFFFFFFFu
#define GEMMA_BOS 2

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct stats {
    size_t n_encode, n_identical, n_decode, n_decode_ok, n_rt_match, n_rt_exact, n_stream_ok;
    size_t n_refused;
    int printed; /* detailed mismatch reports so far */
    double big_ms;
} stats;

/* Prints bytes C-escaped, at most `max` of them. */
static void print_escaped(const uint8_t *s, size_t n, size_t max) {
    for (size_t i = 0; i < n && i < max; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\' && s[i] != '"')
            fputc(s[i], stderr);
        else
            fprintf(stderr, "\\x%02x", s[i]);
    }
    if (n > max)
        fprintf(stderr, "... (%zu bytes)", n);
}

static void print_ids(const sw_model *m, const int32_t *ids, size_t n, size_t from) {
    size_t lo = from > 3 ? from - 3 : 0, hi = from + 5 < n ? from + 5 : n;
    fprintf(stderr, "    [%zu..%zu):", lo, hi);
    for (size_t i = lo; i < hi; i++) {
        const char *t = sw_token_text(m, ids[i]);
        fprintf(stderr, " %d '", ids[i]);
        if (t != NULL)
            print_escaped((const uint8_t *)t, strlen(t), 40);
        fputc('\'', stderr);
    }
    fputc('\n', stderr);
}

static void report_mismatch(const sw_model *m, const char *name, const uint8_t *text,
                            size_t len, int variant, const int32_t *want, size_t n_want,
                            const int32_t *got, size_t n_got) {
    size_t at = 0;
    while (at < n_want && at < n_got && want[at] == got[at])
        at++;
    fprintf(stderr, "MISMATCH entry '%s' (bos=%d, parse_special=%d): first difference at "
                    "id %zu; llama.cpp %zu ids, spillway %zu\n  text: \"", name,
            variant >> 1, variant & 1, at, n_want, n_got);
    print_escaped(text, len, 200);
    fprintf(stderr, "\"\n  llama.cpp:\n");
    print_ids(m, want, n_want, at);
    fprintf(stderr, "  spillway:\n");
    print_ids(m, got, n_got, at);
}

/* The golden list for a variant, resolving the file's markers. */
static int32_t *variant_ids(reader *r, int v, int32_t *const lists[4], const size_t n[4],
                            size_t *n_out, bool *refused) {
    uint32_t k = rd_u32(r);
    *refused = k == REFUSED;
    if (k == REFUSED) {
        *n_out = 0;
        return calloc(1, sizeof(int32_t));
    }
    if (k == SAME_WITH_BOS || k == SAME_AS_NO_SPECIAL) {
        int from = k == SAME_WITH_BOS ? v - 2 : v - 1; /* (0, sp) or (bos, 0) */
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

/* Feeds every piece through a utf8_stream; true when the output equals
 * `want` (the decode of the same ids). */
static bool stream_matches(const sw_model *m, const int32_t *ids, size_t n,
                           const char *want, size_t want_len) {
    char piece[256], out[256 + 3];
    utf8_stream s = {0};
    size_t pos = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t len = 0;
        ok = sw_token_to_piece(m, ids[i], piece, sizeof piece, &len) == SW_OK &&
             len <= sizeof piece;
        size_t k = ok ? utf8_stream_feed(&s, piece, len, out) : 0;
        ok = ok && pos + k <= want_len && memcmp(want + pos, out, k) == 0;
        pos += k;
    }
    size_t k = utf8_stream_flush(&s, out);
    ok = ok && pos + k == want_len && memcmp(want + pos, out, k) == 0;
    return ok;
}

/* Is s[0..n) valid UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF)? */
static bool valid_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (k == 0 || k > n - i)
            return false;
        for (size_t j = 1; j < k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return false;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
            return false;
        i += k;
    }
    return true;
}

/* Our ids for `text` in variant v (bit 1: BOS, bit 0: parse special).
 * Also checks the size bound Gemma gives: len + 2 ids for valid UTF-8;
 * 3 * len + 2 for any bytes (a broken lead byte before a space swallows
 * the three bytes of its U+2581, which then fall back to byte tokens:
 * "\xE2 x" is 3 bytes but 5 ids, as in llama.cpp). */
static int32_t *encode(const sw_model *m, const uint8_t *text, size_t len, int v, size_t *n) {
    unsigned flags = (v & 2 ? SW_TOK_ADD_BOS : 0) | (v & 1 ? SW_TOK_PARSE_SPECIAL : 0);
    size_t cap = 3 * len + 2;
    int32_t *ids = malloc(cap * sizeof *ids);
    *n = 0;
    if (ids == NULL)
        return NULL;
    sw_status st = sw_tokenize(m, (const char *)text, len, flags, ids, cap, n);
    SW_CHECK_OK(st);
    SW_CHECK(*n <= (valid_utf8(text, len) ? len + 2 : cap), "%zu ids for %zu bytes", *n, len);
    if (st != SW_OK || *n > cap)
        *n = 0;
    return ids;
}

static void check_roundtrip(const sw_model *m, const char *name, const int32_t *ids, size_t n,
                            const uint8_t *text, size_t len, const uint8_t *rt, size_t rt_len,
                            stats *s) {
    size_t cap = 4 * len + 64, got = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return;
    SW_CHECK_OK(sw_detokenize(m, ids, n, buf, cap, &got));
    bool same = got == rt_len && memcmp(buf, rt, rt_len) == 0;
    s->n_rt_match += same;
    s->n_rt_exact += rt_len == len && memcmp(rt, text, len) == 0;
    SW_CHECK(same, "entry '%s': decode gives %zu bytes, llama.cpp %zu", name, got, rt_len);
    bool stream_ok = got <= cap && stream_matches(m, ids, n, buf, got);
    s->n_stream_ok += stream_ok;
    SW_CHECK(stream_ok, "entry '%s': streamed pieces differ from the decode", name);
    free(buf);
}

static void check_encode_entry(const sw_model *m, reader *r, const char *name, stats *s) {
    size_t len, n_want[4] = {0}, rt_len;
    const uint8_t *text = rd_blob(r, &len);
    int32_t *want[4] = {NULL}, *got[4] = {NULL};
    size_t n_got[4] = {0};
    bool all_same = true;
    for (int v = 0; v < 4 && !r->bad; v++) {
        bool refused;
        want[v] = variant_ids(r, v, want, n_want, &n_want[v], &refused);
        if (want[v] == NULL || r->bad)
            break;
        double t0 = now_ms();
        got[v] = encode(m, text, len, v, &n_got[v]);
        double ms = now_ms() - t0;
        if (len >= 100 * 1000 && ms > s->big_ms)
            s->big_ms = ms;
        s->n_refused += refused;
        bool same = refused || (got[v] && n_got[v] == n_want[v] &&
                                memcmp(got[v], want[v], n_want[v] * sizeof(int32_t)) == 0);
        if (!same && s->printed++ < 3)
            report_mismatch(m, name, text, len, v, want[v], n_want[v], got[v], n_got[v]);
        SW_CHECK(same, "entry '%s' variant %d: ids differ from llama.cpp", name, v);
        all_same = all_same && same;
    }
    const uint8_t *rt;
    rt_len = rd_u32(r);
    if (rt_len == RT_IS_TEXT) {
        rt = text;
        rt_len = len;
    } else {
        rt = rd_bytes(r, rt_len);
    }
    if (!r->bad && got[0] != NULL) {
        s->n_encode++;
        s->n_identical += all_same;
        check_roundtrip(m, name, got[0], n_got[0], text, len, rt, rt_len, s);
    }
    for (int v = 0; v < 4; v++) {
        free(want[v]);
        free(got[v]);
    }
}

static void check_decode_entry(const sw_model *m, reader *r, const char *name, stats *s) {
    size_t n = rd_u32(r), want_len, got = 0;
    int32_t *ids = rd_ids(r, n);
    const uint8_t *want = rd_blob(r, &want_len);
    char buf[1024];
    if (ids != NULL && !r->bad) {
        s->n_decode++;
        SW_CHECK_OK(sw_detokenize(m, ids, n, buf, sizeof buf, &got));
        bool same = got == want_len && memcmp(buf, want, want_len) == 0;
        s->n_decode_ok += same;
        if (!same) {
            fprintf(stderr, "MISMATCH decode entry '%s':\n  llama.cpp \"", name);
            print_escaped(want, want_len, 200);
            fprintf(stderr, "\"\n  spillway  \"");
            print_escaped((const uint8_t *)buf, got < sizeof buf ? got : sizeof buf, 200);
            fprintf(stderr, "\"\n");
        }
        SW_CHECK(same, "decode entry '%s' differs from llama.cpp", name);
        SW_CHECK(stream_matches(m, ids, n, buf, got), "decode entry '%s': stream differs", name);
    }
    free(ids);
}

static uint8_t *read_file(const char *path, size_t *n) {
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

static void check_golden(const sw_model *m) {
    size_t size = 0;
    uint8_t *data = read_file(sw_test_data("tokenizer_golden.bin"), &size);
    SW_CHECK(data != NULL, "cannot read %s", sw_test_data("tokenizer_golden.bin"));
    if (data == NULL)
        return;
    reader r = {data, data + size, false};
    const uint8_t *magic = rd_bytes(&r, 4);
    uint32_t version = rd_u32(&r);
    SW_CHECK(magic && memcmp(magic, MAGIC, 4) == 0 && version == 1, "golden magic/version");
    size_t info_len;
    const uint8_t *info = rd_blob(&r, &info_len);
    if (info != NULL)
        printf("golden: %.*s\n", (int)info_len, (const char *)info);
    uint32_t n_entries = rd_u32(&r);
    stats s = {0};
    for (uint32_t i = 0; i < n_entries && !r.bad; i++) {
        uint32_t kind = rd_u32(&r);
        size_t name_len;
        const uint8_t *name_p = rd_blob(&r, &name_len);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)name_len, name_p ? (const char *)name_p : "");
        if (kind == 0)
            check_encode_entry(m, &r, name, &s);
        else
            check_decode_entry(m, &r, name, &s);
    }
    SW_CHECK(!r.bad && r.p == r.end, "golden file truncated or malformed");
    printf("encode: %zu/%zu strings identical to llama.cpp in all 4 modes (%zu lists "
           "llama.cpp refused)\n", s.n_identical, s.n_encode, s.n_refused);
    printf("decode(encode(x)): %zu/%zu match llama.cpp's bytes; %zu/%zu give x back exactly\n",
           s.n_rt_match, s.n_encode, s.n_rt_exact, s.n_encode);
    printf("decode-only lists: %zu/%zu match; streamed pieces match decode: %zu/%zu\n",
           s.n_decode_ok, s.n_decode, s.n_stream_ok, s.n_encode);
    printf("100 KB corpus string: slowest mode %.1f ms\n", s.big_ms);
    SW_CHECK(s.n_encode >= 300, "corpus has only %zu strings", s.n_encode);
    free(data);
}

/* Adversarial 100 KB inputs: each must encode fast in both modes and decode
 * back to itself (Gemma has byte fallback and no normalization). */
static void check_speed(const sw_model *m) {
    static const char *units[] = {
        " ", "\n", "\t", "<", "<unused", "<start_of_turn", "a", "ab", "\xe7\x9a\x84",
        "\xf0\x9f\x98\x80", "\xe2", "\xff", "\xe2\x96\x81", "x ", "<td>", "  \n",
    };
    size_t len = 100 * 1024;
    char *text = malloc(len);
    char *back = malloc(len + 16);
    int32_t *ids = malloc((len + 2) * sizeof *ids);
    if (text == NULL || back == NULL || ids == NULL)
        goto done;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u]);
        for (size_t i = 0; i < len; i++)
            text[i] = units[u][i % ul];
        double worst = 0;
        for (int sp = 0; sp < 2; sp++) {
            size_t n = 0, got = 0;
            double t0 = now_ms();
            SW_CHECK_OK(sw_tokenize(m, text, len, sp ? SW_TOK_PARSE_SPECIAL : 0, ids, len + 2,
                                    &n));
            double ms = now_ms() - t0;
            worst = ms > worst ? ms : worst;
            SW_CHECK_OK(sw_detokenize(m, ids, n, back, len + 16, &got));
            /* a literal U+2581 comes back as a space, as in llama.cpp */
            bool u2581 = strstr(units[u], "\xe2\x96\x81") != NULL;
            SW_CHECK(u2581 || (got == len && memcmp(back, text, len) == 0),
                     "100 KB of '%s': decode(encode(x)) != x", units[u]);
        }
        /* Printed, not asserted: speed belongs to bench/, and the CTest
         * TIMEOUT stops a quadratic blow-up. */
        printf("100 KB of unit %zu (%zu bytes): %.1f ms\n", u, ul, worst);
    }
done:
    free(text);
    free(back);
    free(ids);
}

static void check_model_api(const sw_model *m) {
    sw_special_tokens sp;
    SW_CHECK_OK(sw_model_special_tokens(m, &sp));
    SW_CHECK(sp.bos == 2 && sp.eos == 1 && sp.unk == 3 && sp.pad == 0 && sp.add_bos == 1,
             "special ids: bos %d eos %d unk %d pad %d add_bos %d", sp.bos, sp.eos, sp.unk,
             sp.pad, sp.add_bos);
    SW_CHECK(sp.start_of_turn == 105 && sp.end_of_turn == 106, "turn tokens %d %d",
             sp.start_of_turn, sp.end_of_turn);
    SW_CHECK(sw_vocab_size(m) == 262144, "vocab size %zu", sw_vocab_size(m));
    const char *bos = sw_token_text(m, 2);
    SW_CHECK(bos && strcmp(bos, "<bos>") == 0, "text of 2: %s", bos ? bos : "(null)");
    SW_CHECK(sw_token_text(m, 262144) == NULL && sw_token_text(m, -1) == NULL, "range");
    char buf[8];
    size_t len = 0;
    SW_CHECK_OK(sw_token_to_piece(m, 2, buf, sizeof buf, &len));
    SW_CHECK(len == 0, "<bos> prints nothing");
    SW_CHECK_OK(sw_token_to_piece(m, 107, buf, sizeof buf, &len));
    SW_CHECK(len == 1 && buf[0] == '\n', "107 prints a newline");
    SW_CHECK(sw_token_to_piece(m, 262144, buf, sizeof buf, &len) == SW_ERR_ARG, "bad id");
    int32_t ids[4];
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, "Hello world", 11, SW_TOK_ADD_BOS, ids, 4, &n));
    SW_CHECK(n == 3 && ids[0] == 2 && ids[1] == 9259 && ids[2] == 1902, "Hello world");
    SW_CHECK(sw_tokenize(NULL, "a", 1, 0, ids, 4, &n) == SW_ERR_ARG, "NULL model");
}

int main(void) {
    const char *path = sw_test_default_model();
    struct stat st;
    sw_model *m = NULL;
    if (path[0] == '\0' || stat(path, &st) != 0) {
        SW_CHECK(0, "default model '%s' is missing: run `spillway fetch` first", path);
        return sw_check_finish("test_tokenizer_golden");
    }
    SW_CHECK_OK(sw_model_open(path, &m));
    if (m != NULL) {
        check_model_api(m);
        check_golden(m);
        check_speed(m);
    }
    sw_model_close(m);
    return sw_check_finish("test_tokenizer_golden");
}

/*
 * test_tokenizer.c — the tokenizer on tiny hand-made vocabularies, no model
 * file needed: merge order and ties, byte fallback, llama.cpp's character
 * split, the special-token partition (longest first, USER_DEFINED always,
 * CONTROL only when asked), space prefix, BOS/EOS, short output buffers,
 * pieces and decoding, streaming UTF-8, and GGUF loading including broken
 * tokenizer metadata. The real vocabulary is test_tokenizer_golden.c's job.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/gguf.h"
#include "gguf_build.h"
#include "tokenizer/tokenizer.h"

#define MAX_TOKENS 400

/* A vocabulary under construction: byte tokens <0x00>..<0xFF> first (ids
 * 0..255, as Gemma has them, though at 238..493), then whatever a test adds. */
typedef struct vocab {
    tokenizer_token tok[MAX_TOKENS];
    char text[MAX_TOKENS][16];
    size_t n;
} vocab;

static int32_t add(vocab *v, const char *text, float score, int32_t type) {
    size_t len = strlen(text);
    memcpy(v->text[v->n], text, len + 1);
    v->tok[v->n] = (tokenizer_token){v->text[v->n], len, score, type};
    return (int32_t)v->n++;
}

static void vocab_init(vocab *v) {
    v->n = 0;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        add(v, name, 0.0f, TOK_TYPE_BYTE);
    }
}

static tokenizer *build(vocab *v, const tokenizer_config *cfg) {
    tokenizer *t = NULL;
    SW_CHECK_OK(tokenizer_create(cfg, v->tok, v->n, &t));
    return t;
}

static const tokenizer_config PLAIN = {"llama", -1, -1, -1, -1, false, false, false};

/* Encodes text and compares with the expected ids (terminated by -2). */
static void expect(const tokenizer *t, const char *text, size_t len, unsigned flags,
                   const int32_t *want, const char *what) {
    int32_t ids[64];
    size_t n = 0, n_want = 0;
    while (want[n_want] != -2)
        n_want++;
    SW_CHECK_OK(tokenizer_encode(t, text, len, flags, ids, 64, &n));
    int same = n == n_want;
    for (size_t i = 0; same && i < n; i++)
        same = ids[i] == want[i];
    SW_CHECK(same, "%s: got %zu ids (first %d), want %zu (first %d)", what, n,
             n ? ids[0] : -1, n_want, n_want ? want[0] : -1);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__, -2})
#define NONE ((const int32_t[]){-2})

static void test_merges(void) {
    vocab v;
    vocab_init(&v);
    int32_t a = add(&v, "a", -10, 1), b = add(&v, "b", -10, 1), c = add(&v, "c", -10, 1);
    int32_t ab = add(&v, "ab", -3, 1), bc = add(&v, "bc", -2, 1);
    int32_t abc = add(&v, "abc", -5, 1);
    (void)ab;
    tokenizer *t = build(&v, &PLAIN);
    /* "bc" scores higher than "ab": a + bc; "abc" then cannot form ("a"+"bc"
     * spells it, so it does: merging keeps going while pairs spell tokens) */
    expect(t, "abc", 3, 0, IDS(abc), "a+bc merges on into abc");
    expect(t, "cab", 3, 0, IDS(c, ab), "cab");
    expect(t, "bca", 3, 0, IDS(bc, a), "bca");
    expect(t, "", 0, 0, NONE, "empty text");
    expect(t, "b", 1, 0, IDS(b), "single char");
    tokenizer_destroy(t);

    /* Equal scores: the leftmost pair merges first. */
    vocab_init(&v);
    a = add(&v, "a", -10, 1);
    b = add(&v, "b", -10, 1);
    c = add(&v, "c", -10, 1);
    ab = add(&v, "ab", -2, 1);
    bc = add(&v, "bc", -2, 1);
    t = build(&v, &PLAIN);
    expect(t, "abc", 3, 0, IDS(ab, c), "tie goes left");
    expect(t, "abcabc", 6, 0, IDS(ab, c, ab, c), "tie goes left, twice");
    tokenizer_destroy(t);
}

static void test_bytes_and_chars(void) {
    vocab v;
    vocab_init(&v);
    int32_t A = add(&v, "A", -1, 1), B = add(&v, "B", -1, 1);
    add(&v, "AB", -0.5f, 1);
    int32_t e_acute = add(&v, "\xc3\xa9", -1, 1);
    int32_t sp = add(&v, "\xe2\x96\x81", -1, 1), spA = add(&v, "\xe2\x96\x81" "A", -0.1f, 1);
    tokenizer *t = build(&v, &PLAIN);
    expect(t, "x", 1, 0, IDS('x'), "no token: byte fallback");
    expect(t, "\xc3\xa9", 2, 0, IDS(e_acute), "two-byte char token");
    expect(t, "\xc3\xa8", 2, 0, IDS(0xc3, 0xa8), "two-byte char, byte fallback");
    /* llama.cpp sizes a character from its lead byte alone: E2 takes the
     * next two bytes whatever they are, so "AB" never forms here. */
    expect(t, "\xe2" "AB", 3, 0, IDS(0xe2, 'A', 'B'), "lead byte swallows ASCII");
    expect(t, "AB\xe2", 3, 0, IDS(A + 2, 0xe2), "truncated lead at the end");
    expect(t, "\x80" "A", 2, 0, IDS(0x80, A), "continuation byte alone");
    expect(t, " A", 2, 0, IDS(spA), "space becomes U+2581");
    expect(t, "  ", 2, 0, IDS(sp, sp), "spaces");
    expect(t, "B A", 3, 0, IDS(B, spA), "word space word");
    /* a raw U+2581 in the text is the same as a space */
    expect(t, "\xe2\x96\x81" "A", 4, 0, IDS(spA), "literal U+2581");
    tokenizer_destroy(t);
}

static void test_partition(void) {
    vocab v;
    vocab_init(&v);
    int32_t a = add(&v, "a", -1, 1), d = add(&v, "d", -1, 1), x = add(&v, "x", -1, 1);
    int32_t bcd = add(&v, "bcd", 0, TOK_TYPE_USER_DEFINED);
    int32_t ab = add(&v, "ab", 0, TOK_TYPE_USER_DEFINED);
    int32_t nl = add(&v, "\n", 0, TOK_TYPE_USER_DEFINED);
    int32_t nl2 = add(&v, "\n\n", 0, TOK_TYPE_USER_DEFINED);
    int32_t ctl = add(&v, "<c>", 0, TOK_TYPE_CONTROL);
    int32_t eos_like = add(&v, "</s>", 0, TOK_TYPE_USER_DEFINED); /* forced CONTROL */
    int32_t lt = add(&v, "<", -1, 1), gt = add(&v, ">", -1, 1), c = add(&v, "c", -1, 1);
    tokenizer *t = build(&v, &PLAIN);
    /* longest special first anywhere in the text, not leftmost-longest */
    expect(t, "abcd", 4, 0, IDS(a, bcd), "bcd beats ab");
    expect(t, "abab", 4, 0, IDS(ab, ab), "repeated special");
    expect(t, "\n\n\n", 3, 0, IDS(nl2, nl), "newline run");
    expect(t, "x\nx", 3, 0, IDS(x, nl, x), "user-defined always cut");
    expect(t, "<c>", 3, 0, IDS(lt, c, gt), "control kept as text without parse_special");
    expect(t, "<c>", 3, SW_TOK_PARSE_SPECIAL, IDS(ctl), "control cut with parse_special");
    expect(t, "a<c>d", 5, SW_TOK_PARSE_SPECIAL, IDS(a, ctl, d), "control between text");
    expect(t, "</s>", 4, SW_TOK_PARSE_SPECIAL, IDS(eos_like), "</s> is control");
    int32_t ids[8];
    size_t n = 0;
    SW_CHECK_OK(tokenizer_encode(t, "</s>", 4, 0, ids, 8, &n));
    SW_CHECK(n == 4 && ids[0] == lt, "</s> without parse_special is plain text (n=%zu)", n);
    tokenizer_destroy(t);
}

/* Merging looks pairs up in the whole vocabulary, as llama.cpp's
 * try_add_bigram does: a CONTROL or UNUSED token can be the result when its
 * text is typed as plain text and its prefixes are tokens. (Gemma 3 has no
 * such prefixes, so there it never happens.) */
static void test_merge_into_any_type(void) {
    vocab v;
    vocab_init(&v);
    add(&v, "<", -1, 1);
    add(&v, "c", -1, 1);
    add(&v, ">", -1, 1);
    add(&v, "<c", -2, 1);
    int32_t ctl = add(&v, "<c>", -3, TOK_TYPE_CONTROL);
    add(&v, "u", -1, 1);
    add(&v, "<u", -2, 1);
    int32_t unused = add(&v, "<u>", -3, TOK_TYPE_UNUSED);
    tokenizer *t = build(&v, &PLAIN);
    expect(t, "<c>", 3, 0, IDS(ctl), "plain text merges into a control token");
    expect(t, "<u>", 3, 0, IDS(unused), "plain text merges into an unused token");
    char buf[8];
    size_t len = 9;
    int32_t ids[] = {ctl, unused};
    SW_CHECK_OK(tokenizer_decode(t, ids, 2, buf, sizeof buf, &len));
    SW_CHECK(len == 0, "both decode to nothing (%zu bytes)", len);
    tokenizer_destroy(t);
}

static void test_config(void) {
    vocab v;
    vocab_init(&v);
    int32_t pad = add(&v, "<pad>", 0, TOK_TYPE_CONTROL), eos = add(&v, "<eos>", 0, 3);
    int32_t bos = add(&v, "<bos>", 0, TOK_TYPE_CONTROL), unk = add(&v, "<unk>", 0, 2);
    int32_t spa = add(&v, "\xe2\x96\x81" "a", -1, 1), a = add(&v, "a", -2, 1);
    add(&v, "\xe2\x96\x81", -3, 1);
    tokenizer_config cfg = {"llama", bos, eos, unk, pad, true, false, false};
    tokenizer *t = build(&v, &cfg);
    expect(t, "a", 1, SW_TOK_ADD_BOS, IDS(bos, a), "BOS added");
    expect(t, "a", 1, 0, IDS(a), "BOS not asked for");
    expect(t, "", 0, SW_TOK_ADD_BOS, IDS(bos), "empty text with BOS");
    expect(t, "<bos>a", 6, SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL, IDS(bos, bos, a),
           "double BOS is kept, as in llama.cpp");
    sw_special_tokens sp;
    tokenizer_special(t, &sp);
    SW_CHECK(sp.bos == bos && sp.eos == eos && sp.unk == unk && sp.pad == pad && sp.add_bos,
             "special ids");
    SW_CHECK(sp.start_of_turn == -1 && sp.end_of_turn == -1, "no turn tokens");
    tokenizer_destroy(t);

    cfg = (tokenizer_config){"llama", bos, eos, unk, pad, true, true, true};
    t = build(&v, &cfg);
    expect(t, "a", 1, SW_TOK_ADD_BOS, IDS(bos, spa, eos), "space prefix and EOS");
    expect(t, "a<eos>a", 7, SW_TOK_PARSE_SPECIAL, IDS(spa, eos, spa),
           "space prefix again after a special token");
    /* decoding drops the first token's leading space (llama.cpp remove_space) */
    char buf[32];
    size_t len = 0;
    int32_t ids[] = {spa, spa};
    SW_CHECK_OK(tokenizer_decode(t, ids, 2, buf, sizeof buf, &len));
    SW_CHECK(len == 3 && memcmp(buf, "a a", 3) == 0, "decode with space prefix: '%.*s'",
             (int)len, buf);
    tokenizer_destroy(t);

    /* special ids out of range are dropped, and BOS with them */
    cfg = (tokenizer_config){"llama", 9999, -5, 9999, 9999, true, true, false};
    t = build(&v, &cfg);
    expect(t, "a", 1, SW_TOK_ADD_BOS, IDS(a), "no BOS when its id is invalid");
    tokenizer_destroy(t);
}

static void test_capacity_and_errors(void) {
    vocab v;
    vocab_init(&v);
    tokenizer *t = build(&v, &PLAIN);
    int32_t ids[4] = {-7, -7, -7, -7};
    size_t n = 0;
    SW_CHECK_OK(tokenizer_encode(t, "hello", 5, 0, ids, 2, &n));
    SW_CHECK(n == 5 && ids[0] == 'h' && ids[1] == 'e' && ids[2] == -7,
             "short buffer: full count, only cap written (n=%zu)", n);
    SW_CHECK_OK(tokenizer_encode(t, "hello", 5, 0, NULL, 0, &n));
    SW_CHECK(n == 5, "counting only: n=%zu", n);
    SW_CHECK(tokenizer_encode(t, NULL, 3, 0, ids, 4, &n) == SW_ERR_ARG, "NULL text");
    SW_CHECK(tokenizer_encode(NULL, "a", 1, 0, ids, 4, &n) == SW_ERR_ARG, "NULL tokenizer");
    tokenizer_destroy(t);

    /* a vocabulary of another kind loads but does not encode */
    tokenizer_config gpt2 = PLAIN;
    gpt2.model = "gpt2";
    t = build(&v, &gpt2);
    SW_CHECK(tokenizer_encode(t, "a", 1, 0, ids, 4, &n) == SW_ERR_UNSUPPORTED, "gpt2 refused");
    SW_CHECK(tokenizer_n_vocab(t) == 256, "gpt2 vocabulary still loaded");
    tokenizer_destroy(t);

    /* duplicate text: corrupt vocabulary */
    add(&v, "dup", 0, 1);
    add(&v, "dup", 0, 1);
    t = NULL;
    SW_CHECK(tokenizer_create(&PLAIN, v.tok, v.n, &t) == SW_ERR_FORMAT && t == NULL,
             "duplicate token rejected");
    SW_CHECK(strstr(sw_last_error(), "duplicate") != NULL, "message: %s", sw_last_error());

    /* an empty text is renamed, as llama.cpp does */
    v.n -= 2;
    int32_t empty = add(&v, "", 0, 1);
    t = build(&v, &PLAIN);
    size_t len = 0;
    const char *s = tokenizer_token_text(t, empty, &len);
    SW_CHECK(s && strcmp(s, "[EMPTY_256]") == 0 && len == 11, "empty token renamed: %s", s);
    SW_CHECK(tokenizer_token_text(t, 257, NULL) == NULL, "out of range text");
    SW_CHECK(tokenizer_find(t, "<0x41>", 6) == 0x41, "find byte token");
    tokenizer_destroy(t);

    /* no byte tokens and no <unk>: the byte cannot be encoded */
    vocab w = {.n = 0};
    add(&w, "a", 0, 1);
    t = build(&w, &PLAIN);
    SW_CHECK(tokenizer_encode(t, "b", 1, 0, ids, 4, &n) == SW_ERR_UNSUPPORTED,
             "unencodable byte");
    tokenizer_destroy(t);
    tokenizer_destroy(NULL);
}

static void expect_piece(const tokenizer *t, int32_t id, bool special, const char *want,
                         size_t want_len) {
    char buf[32];
    size_t len = 99;
    if (special)
        SW_CHECK_OK(tokenizer_token_to_piece_special(t, id, buf, sizeof buf, &len));
    else
        SW_CHECK_OK(tokenizer_token_to_piece(t, id, buf, sizeof buf, &len));
    SW_CHECK(len == want_len && memcmp(buf, want, len) == 0, "piece of %d: '%.*s' (%zu)", id,
             (int)(len < sizeof buf ? len : sizeof buf), buf, len);
}

static void test_pieces(void) {
    vocab v;
    vocab_init(&v);
    int32_t bos = add(&v, "<bos>", 0, TOK_TYPE_CONTROL);
    int32_t unk = add(&v, "<unk>", 0, TOK_TYPE_UNKNOWN);
    int32_t sp_the = add(&v, "\xe2\x96\x81the\xe2\x96\x81\xe2\x96\x81", -1, 1);
    int32_t ud = add(&v, "\xe2\x96\x81ud", 0, TOK_TYPE_USER_DEFINED);
    int32_t unused = add(&v, "<u>", 0, TOK_TYPE_UNUSED);
    int32_t undef = add(&v, "zz", 0, 77);
    int32_t ctl_unused = add(&v, "<unused3>", 0, TOK_TYPE_CONTROL);
    tokenizer *t = build(&v, &PLAIN);
    expect_piece(t, bos, false, "", 0);
    expect_piece(t, bos, true, "<bos>", 5);
    expect_piece(t, unk, false, "", 0);
    expect_piece(t, sp_the, false, " the  ", 6);
    expect_piece(t, ud, false, "\xe2\x96\x81ud", 5);
    expect_piece(t, 0x41, false, "A", 1);
    expect_piece(t, 0xE6, false, "\xe6", 1);
    expect_piece(t, 0x00, false, "\0", 1);
    expect_piece(t, unused, false, "", 0);
    expect_piece(t, undef, false, "", 0);
    expect_piece(t, ctl_unused, true, "<unused3>", 9);
    char buf[4];
    size_t len = 0;
    SW_CHECK_OK(tokenizer_token_to_piece(t, sp_the, buf, 2, &len));
    SW_CHECK(len == 6 && buf[0] == ' ' && buf[1] == 't', "short piece buffer: full length");
    SW_CHECK(tokenizer_token_to_piece(t, -1, buf, 4, &len) == SW_ERR_ARG, "negative id");
    SW_CHECK(tokenizer_token_to_piece(t, (int32_t)v.n, buf, 4, &len) == SW_ERR_ARG, "id = n");
    SW_CHECK(tokenizer_max_piece_bytes(t) == 12, "max piece %zu", tokenizer_max_piece_bytes(t));

    /* decode: bytes reassemble, control tokens vanish, no leading space dropped */
    int32_t ids[] = {bos, 0xE6, 0x97, 0xA5, sp_the, unk};
    char out[32];
    SW_CHECK_OK(tokenizer_decode(t, ids, 6, out, sizeof out, &len));
    SW_CHECK(len == 9 && memcmp(out, "\xe6\x97\xa5 the  ", 9) == 0, "decode: %zu", len);
    SW_CHECK_OK(tokenizer_decode(t, ids, 6, out, 4, &len));
    SW_CHECK(len == 9 && memcmp(out, "\xe6\x97\xa5 ", 4) == 0, "decode into a short buffer");
    int32_t bad[] = {0x41, 100000};
    SW_CHECK(tokenizer_decode(t, bad, 2, out, sizeof out, &len) == SW_ERR_ARG, "bad id");
    SW_CHECK(strstr(sw_last_error(), "ids[1]") != NULL, "message: %s", sw_last_error());
    tokenizer_destroy(t);
}

/* Feeds `in` to a stream in chunks of `step` bytes; checks the total output
 * equals the input and no output ever ends inside a valid character. */
static void stream_roundtrip(const char *in, size_t n, size_t step, const char *what) {
    utf8_stream s = {0};
    char out[256];
    size_t m = 0;
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        m += utf8_stream_feed(&s, in + i, k, out + m);
    }
    m += utf8_stream_flush(&s, out + m);
    SW_CHECK(m == n && memcmp(out, in, n) == 0, "%s (step %zu): %zu bytes out of %zu", what,
             step, m, n);
}

static void test_utf8_stream(void) {
    const char *text = "a\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80z";
    for (size_t step = 1; step <= 4; step++)
        stream_roundtrip(text, strlen(text), step, "valid text");
    const char *junk = "\xff\xe6\x97" "A\xed\xa0\x80\xf4\x90\x80\xc0\xaf\xe6";
    for (size_t step = 1; step <= 3; step++)
        stream_roundtrip(junk, strlen(junk), step, "invalid bytes");

    utf8_stream s = {0};
    char out[16];
    SW_CHECK(utf8_stream_feed(&s, "\xe6", 1, out) == 0, "lead byte held");
    SW_CHECK(utf8_stream_feed(&s, "\x97", 1, out) == 0, "second byte held");
    SW_CHECK(utf8_stream_feed(&s, "\xa5", 1, out) == 3 && memcmp(out, "\xe6\x97\xa5", 3) == 0,
             "character released when complete");
    SW_CHECK(utf8_stream_feed(&s, "\xf0\x9f", 2, out) == 0, "4-byte start held");
    SW_CHECK(utf8_stream_feed(&s, "x", 1, out) == 3 && memcmp(out, "\xf0\x9fx", 3) == 0,
             "broken sequence passes through");
    SW_CHECK(utf8_stream_feed(&s, "\xed\xa0", 2, out) == 2, "surrogate lead + A0 not held");
    SW_CHECK(utf8_stream_flush(&s, out) == 0, "nothing left");
}

/* ---- GGUF loading --------------------------------------------------------- */

enum { GOOD, SCORES_AS_STRINGS, SHORT_TYPES, NO_TOKENS, TOKENS_AS_U32, BAD_BOS_TYPE };

/* A GGUF with a 7-token vocabulary (or one broken as `how` says). */
static void write_vocab_gguf(gb *b, int how) {
    static const char *texts[] = {"<pad>", "<eos>", "<bos>", "hi", "x", "h", "i"};
    gb_header(b, 3, 0, how == NO_TOKENS ? 4 : 6);
    gb_kv_str(b, "tokenizer.ggml.model", "llama");
    if (how != NO_TOKENS) {
        gb_kv_begin(b, "tokenizer.ggml.tokens", GGUF_VT_ARRAY);
        if (how == TOKENS_AS_U32) {
            gb_array_begin(b, GGUF_VT_U32, 7);
            for (int i = 0; i < 7; i++)
                gb_u32(b, (uint32_t)i);
        } else {
            gb_array_begin(b, GGUF_VT_STRING, 7);
            for (int i = 0; i < 7; i++)
                gb_str(b, texts[i]);
        }
        gb_kv_begin(b, "tokenizer.ggml.scores", GGUF_VT_ARRAY);
        if (how == SCORES_AS_STRINGS) {
            gb_array_begin(b, GGUF_VT_STRING, 7);
            for (int i = 0; i < 7; i++)
                gb_str(b, "0");
        } else {
            gb_array_begin(b, GGUF_VT_F32, 7);
            for (int i = 0; i < 7; i++)
                gb_f32(b, -(float)i);
        }
    }
    gb_kv_begin(b, "tokenizer.ggml.token_type", GGUF_VT_ARRAY);
    int n_types = how == SHORT_TYPES ? 6 : 7;
    gb_array_begin(b, GGUF_VT_I32, (uint64_t)n_types);
    static const uint32_t types[] = {3, 3, 3, 1, 1, 1, 1};
    for (int i = 0; i < n_types; i++)
        gb_u32(b, types[i]);
    if (how == BAD_BOS_TYPE)
        gb_kv_str(b, "tokenizer.ggml.bos_token_id", "2");
    else
        gb_kv_u32(b, "tokenizer.ggml.bos_token_id", 2);
    gb_kv_begin(b, "tokenizer.ggml.add_space_prefix", GGUF_VT_BOOL);
    gb_u8(b, 0);
}

static sw_status load_vocab_gguf(int how, tokenizer **t) {
    gb b;
    gguf_file *f = NULL;
    gb_init(&b);
    write_vocab_gguf(&b, how);
    SW_CHECK(!b.failed, "gguf builder out of memory");
    sw_status st = gguf_open_memory(b.data, b.len, &f);
    SW_CHECK(st == SW_OK, "tiny gguf %d opens: %s", how, sw_last_error());
    *t = NULL;
    if (st == SW_OK)
        st = tokenizer_create_from_gguf(f, t);
    gguf_close(f);
    gb_free(&b);
    return st;
}

static void test_gguf(void) {
    tokenizer *t = NULL;
    SW_CHECK_OK(load_vocab_gguf(GOOD, &t));
    if (t != NULL) {
        /* "llama" defaults where keys are absent: EOS 2, UNK 0, BOS added;
         * BOS itself from its key */
        sw_special_tokens sp;
        tokenizer_special(t, &sp);
        SW_CHECK(sp.bos == 2 && sp.eos == 2 && sp.unk == 0 && sp.pad == -1 && sp.add_bos,
                 "gguf specials: bos %d eos %d unk %d pad %d", sp.bos, sp.eos, sp.unk, sp.pad);
        expect(t, "hix", 3, SW_TOK_ADD_BOS, IDS(2, 3, 4), "gguf vocabulary encodes");
        SW_CHECK(tokenizer_token_type(t, 3) == TOK_TYPE_NORMAL, "type kept");
    }
    tokenizer_destroy(t);
    static const struct { int how; const char *word; } bad[] = {
        {SCORES_AS_STRINGS, "scores"}, {SHORT_TYPES, "token_type"}, {NO_TOKENS, "tokens"},
        {TOKENS_AS_U32, "tokens"}, {BAD_BOS_TYPE, "bos_token_id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sw_status st = load_vocab_gguf(bad[i].how, &t);
        SW_CHECK(st == SW_ERR_FORMAT && t == NULL, "broken metadata %d: %s", bad[i].how,
                 sw_status_name(st));
        SW_CHECK(strstr(sw_last_error(), bad[i].word) != NULL, "message names '%s': %s",
                 bad[i].word, sw_last_error());
        tokenizer_destroy(t);
    }
}

int main(void) {
    test_merges();
    test_bytes_and_chars();
    test_partition();
    test_merge_into_any_type();
    test_config();
    test_capacity_and_errors();
    test_pieces();
    test_utf8_stream();
    test_gguf();
    return sw_check_finish("test_tokenizer");
}

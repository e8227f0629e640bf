/*
 * fuzz_codec.c — libFuzzer harness for the tokenizer's encoder and decoder
 * on arbitrary bytes (src/tokenizer/: partition.c, spm.c, encode.c,
 * decode.c), over two real vocabularies loaded once: Gemma 3's 262k-token
 * tokenizer.json (the build unpacks it; SW_FUZZ_GEMMA3_TOKENIZER names
 * another folder) and Gemma 4's from the tiny GGUF (merge-rule scores,
 * newline runs apart; SW_FUZZ_GEMMA4_GGUF names another file).
 *
 * Per vocabulary, the input is encoded as text (plain, and with BOS and
 * special tokens) and decoded as token ids: once as raw little-endian
 * int32s (mostly out of range: refused by SW_ERR_ARG exactly when one is),
 * once folded into [0, n_vocab] (mostly in range). What is checked is what
 * the tokenizer guarantees, nothing more:
 *   - ids in range, at most SW_TOKENIZE_MAX_IDS(len) of them (len + 2 for
 *     valid UTF-8), BOS first when asked for and the model adds it;
 *   - decode(encode(text)) == text for valid UTF-8 without U+2581 (which
 *     prints as a space) when special tokens are not parsed and no space
 *     prefix is added (Gemma's tokenizers add none);
 *   - a decode is its pieces concatenated, each piece at most
 *     tokenizer_max_piece_bytes, a short buffer gets a prefix, and
 *     utf8_stream gives back exactly the decode, in chunks of whole
 *     characters when the decode is valid UTF-8.
 * A broken invariant traps. Built as fuzz_codec with -fsanitize=fuzzer
 * (tools/fuzz.sh) and as fuzz_codec_replay (fuzz_replay.c) for CTest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/utf8.h"

#include "fuzz_common.h"

#ifndef SW_FUZZ_GEMMA3_DIR
#define SW_FUZZ_GEMMA3_DIR "build/tests/hf_tokenizer/gemma3-270m"
#endif
#ifndef SW_FUZZ_GEMMA4_FILE
#define SW_FUZZ_GEMMA4_FILE "tests/data/tiny/gemma4-ple.gguf"
#endif

enum { N_TOK = 2 };

static tokenizer *g_tok[N_TOK];
static bool g_prefix[N_TOK]; /* add_space_prefix: decode drops one leading space */

static const char *env_or(const char *name, const char *def) {
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static void load_failed(const char *what, const char *path) {
    fprintf(stderr, "fuzz_codec: cannot load the %s tokenizer from %s: %s\n", what, path,
            sw_last_error());
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *g3 = env_or("SW_FUZZ_GEMMA3_TOKENIZER", SW_FUZZ_GEMMA3_DIR);
    const char *g4 = env_or("SW_FUZZ_GEMMA4_GGUF", SW_FUZZ_GEMMA4_FILE);
    gguf_file *f = NULL;
    if (tokenizer_create_from_hf(g3, &g_tok[0]) != SW_OK)
        load_failed("Gemma 3", g3);
    if (gguf_open(g4, &f) != SW_OK || tokenizer_create_from_gguf(f, &g_tok[1]) != SW_OK)
        load_failed("Gemma 4", g4);
    gguf_close(f);
    for (int k = 0; k < N_TOK; k++) {
        /* add_space_prefix shows as an encode of "a" starting with a space */
        int32_t ids[8];
        size_t n = 0, len = 0;
        char piece[64];
        if (tokenizer_encode(g_tok[k], "a", 1, 0, ids, 8, &n) == SW_OK && n > 0 &&
            tokenizer_token_to_piece(g_tok[k], ids[0], piece, sizeof piece, &len) == SW_OK)
            g_prefix[k] = len > 0 && piece[0] == ' ';
    }
    return 0;
}

static bool valid_utf8(const char *s, size_t n) {
    return utf8_valid_prefix((const uint8_t *)s, n) == n;
}

/* Checks a successful decode of ids into out (len bytes) against the
 * pieces, a short buffer and the UTF-8 stream. */
static void check_decode(const tokenizer *t, bool prefix, const int32_t *ids, size_t n,
                         const char *out, size_t len) {
    const size_t max_piece = tokenizer_max_piece_bytes(t);
    char *piece = malloc(max_piece + 8), *streamed = malloc(len + 8);
    char *chunk = malloc(max_piece + 8);
    size_t total = 0, s_len = 0, half = 0;
    bool whole = valid_utf8(out, len);
    utf8_stream us = {0};
    if (piece == NULL || streamed == NULL || chunk == NULL)
        goto done;
    for (size_t i = 0; i < n; i++) {
        size_t p_len = 0;
        FUZZ_REQUIRE(tokenizer_token_to_piece(t, ids[i], piece, max_piece, &p_len) == SW_OK);
        FUZZ_REQUIRE(p_len <= max_piece);
        const char *p = piece;
        if (i == 0 && prefix && p_len > 0 && p[0] == ' ') { /* dropped by decode */
            p++;
            p_len--;
        }
        FUZZ_REQUIRE(total + p_len <= len && memcmp(out + total, p, p_len) == 0);
        total += p_len;
        size_t m = utf8_stream_feed(&us, p, p_len, chunk);
        FUZZ_REQUIRE(m <= p_len + 3 && s_len + m <= len);
        FUZZ_REQUIRE(!whole || valid_utf8(chunk, m)); /* whole characters only */
        memcpy(streamed + s_len, chunk, m);
        s_len += m;
    }
    FUZZ_REQUIRE(total == len);
    size_t m = utf8_stream_flush(&us, chunk);
    FUZZ_REQUIRE(m <= 4 && s_len + m == len);
    memcpy(streamed + s_len, chunk, m);
    FUZZ_REQUIRE(memcmp(streamed, out, len) == 0);
    /* a short buffer: the same length, a prefix of the text */
    FUZZ_REQUIRE(tokenizer_decode(t, ids, n, streamed, len / 2, &half) == SW_OK);
    FUZZ_REQUIRE(half == len && memcmp(streamed, out, len / 2) == 0);
done:
    free(piece);
    free(streamed);
    free(chunk);
}

/* Decodes ids: out of range must be refused, in range must decode (into
 * a new buffer, *len bytes, returned; NULL when refused). */
static char *decode_ids(const tokenizer *t, bool prefix, const int32_t *ids, size_t n,
                        size_t *len) {
    const size_t n_vocab = tokenizer_n_vocab(t), cap = n * tokenizer_max_piece_bytes(t);
    bool in_range = true;
    for (size_t i = 0; i < n; i++)
        in_range = in_range && ids[i] >= 0 && (size_t)ids[i] < n_vocab;
    char *out = malloc(cap + 1);
    *len = 0;
    if (out == NULL)
        return NULL;
    sw_status st = tokenizer_decode(t, ids, n, out, cap, len);
    if (!in_range) {
        FUZZ_REQUIRE(st == SW_ERR_ARG && sw_last_error()[0] != '\0');
        free(out);
        return NULL;
    }
    FUZZ_REQUIRE(st == SW_OK && *len <= cap);
    check_decode(t, prefix, ids, n, out, *len);
    return out;
}

static bool has_space_mark(const char *s, size_t n) {
    for (size_t i = 0; i + 2 < n; i++)
        if (s[i] == '\xe2' && s[i + 1] == '\x96' && s[i + 2] == '\x81')
            return true;
    return false;
}

/* Encodes text with flags into a new array (*n ids), checking the count
 * and the range. */
static int32_t *encode(const tokenizer *t, const char *text, size_t len, unsigned flags,
                       size_t *n) {
    const size_t cap = SW_TOKENIZE_MAX_IDS(len), n_vocab = tokenizer_n_vocab(t);
    int32_t *ids = malloc(cap * sizeof *ids);
    *n = 0;
    if (ids == NULL)
        return NULL;
    FUZZ_REQUIRE(tokenizer_encode(t, text, len, flags, ids, cap, n) == SW_OK);
    FUZZ_REQUIRE(*n <= cap && (!valid_utf8(text, len) || *n <= len + 2));
    for (size_t i = 0; i < *n; i++)
        FUZZ_REQUIRE(ids[i] >= 0 && (size_t)ids[i] < n_vocab);
    return ids;
}

/* Encodes text plainly (and round-trips it where that is guaranteed) and
 * with BOS and special tokens. */
static void encode_text(const tokenizer *t, bool prefix, const char *text, size_t len) {
    size_t n = 0, out_len = 0;
    int32_t *ids = encode(t, text, len, 0, &n);
    char *out = ids ? decode_ids(t, prefix, ids, n, &out_len) : NULL;
    if (out != NULL && !prefix && valid_utf8(text, len) && !has_space_mark(text, len))
        FUZZ_REQUIRE(out_len == len && memcmp(out, text, len) == 0);
    free(out);
    free(ids);
    sw_special_tokens sp;
    tokenizer_special(t, &sp);
    ids = encode(t, text, len, SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL, &n);
    if (ids != NULL && sp.add_bos)
        FUZZ_REQUIRE(n >= 1 && ids[0] == sp.bos);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const size_t n = size / 4;
    int32_t *raw = malloc((n ? n : 1) * sizeof *raw), *folded = malloc((n ? n : 1) * 4);
    if (raw == NULL || folded == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        raw[i] = (int32_t)((uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
                           (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24);
    for (int k = 0; k < N_TOK; k++) {
        const uint32_t n_vocab = (uint32_t)tokenizer_n_vocab(g_tok[k]);
        encode_text(g_tok[k], g_prefix[k], (const char *)data, size);
        size_t len = 0;
        free(decode_ids(g_tok[k], g_prefix[k], raw, n, &len));
        for (size_t i = 0; i < n; i++) /* mostly in range; n_vocab itself is not */
            folded[i] = (int32_t)((uint32_t)raw[i] % (n_vocab + 1));
        free(decode_ids(g_tok[k], g_prefix[k], folded, n, &len));
    }
done:
    free(raw);
    free(folded);
    return 0;
}

/*
 * tokenizer.h — Gemma's SentencePiece tokenizer, built from the GGUF
 * vocabulary (tokenizer.ggml.*) and reproducing llama.cpp's "SPM" tokenizer
 * id for id (golden-tested against llama.cpp on a multilingual corpus).
 *
 * Encoding (tokenizer_encode):
 *   1. special tokens are cut out of the text as literal strings, longest
 *      first (partition.c): USER_DEFINED always, CONTROL/UNKNOWN only with
 *      SW_TOK_PARSE_SPECIAL;
 *   2. every remaining stretch of raw text has ' ' replaced by U+2581 and is
 *      merged greedily, highest token score first (spm.c);
 *   3. a piece that is not a token falls back to <0xXX> byte tokens.
 * Decoding turns ids back into bytes (decode.c); utf8_stream holds back the
 * unfinished tail of a character split across byte tokens while streaming.
 *
 * A tokenizer is immutable once created: any number of threads may encode
 * and decode with it at once. It copies what it needs from the GGUF file and
 * does not borrow the mapping.
 *
 * Example
 *   tokenizer *t;
 *   if (tokenizer_create_from_gguf(file, &t) != SW_OK) return ...;
 *   int32_t ids[64]; size_t n;
 *   tokenizer_encode(t, "Hello world", 11, SW_TOK_ADD_BOS, ids, 64, &n);
 *   // Gemma 3: ids = {2, 9259, 1902}, n = 3
 *   tokenizer_destroy(t);
 */
#ifndef SW_TOKENIZER_TOKENIZER_H
#define SW_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/gguf.h"
#include "spillway.h"

typedef struct tokenizer tokenizer;

/* Token types as stored in tokenizer.ggml.token_type. */
enum {
    TOK_TYPE_UNDEFINED = 0,
    TOK_TYPE_NORMAL = 1,
    TOK_TYPE_UNKNOWN = 2,
    TOK_TYPE_CONTROL = 3,
    TOK_TYPE_USER_DEFINED = 4,
    TOK_TYPE_UNUSED = 5,
    TOK_TYPE_BYTE = 6
};

/* How the vocabulary behaves; what the GGUF keys say, or a test's choice. */
typedef struct tokenizer_config {
    const char *model;         /* "llama" = SentencePiece; others load but cannot encode */
    int32_t bos, eos, unk, pad; /* -1: none */
    bool add_bos;              /* SW_TOK_ADD_BOS prepends bos */
    bool add_eos;              /* SW_TOK_ADD_BOS also appends eos (never for Gemma) */
    bool add_space_prefix;     /* prepend ' ' to text at the start / after a special token */
} tokenizer_config;

/* One vocabulary entry handed to tokenizer_create (copied). */
typedef struct tokenizer_token {
    const char *text;          /* bytes as stored ("▁the", "<0x0A>"), not NUL-terminated */
    size_t len;
    float score;               /* merge priority: higher merges first */
    int32_t type;              /* TOK_TYPE_* */
} tokenizer_token;

/* Builds a tokenizer from the GGUF keys tokenizer.ggml.{model, tokens,
 * scores, token_type, bos/eos/unknown/padding_token_id, add_bos_token,
 * add_eos_token, add_space_prefix}, with llama.cpp's defaults for absent
 * keys. A model other than "llama" loads (texts, ids) but encoding answers
 * SW_ERR_UNSUPPORTED. Errors: SW_ERR_FORMAT (wrong key types, arrays shorter
 * than the vocabulary, duplicate tokens), SW_ERR_OOM_HOST. */
sw_status tokenizer_create_from_gguf(const gguf_file *f, tokenizer **out);

/* Builds a tokenizer from a Hugging Face model folder: DIR/tokenizer.json
 * (required) and DIR/tokenizer_config.json (optional: add_bos_token,
 * add_eos_token, bos/eos/unk/pad_token as strings or {"content": ...});
 * DIR/config.json's bos/eos/pad_token_id only fill in ids the others leave
 * unnamed. The result is the tokenizer tokenizer_create_from_gguf builds
 * from the GGUF that llama.cpp converts from the same folder (same texts,
 * types and special ids; scores taken from the merge ranks), so ids agree
 * with llama.cpp's. Accepted: BPE with byte fallback, spaces as "▁"
 * (normalizer Replace, optional Prepend), no pre-splitting, a BOS/EOS
 * template — what every Gemma tokenizer.json uses; hf_pipeline.c lists the
 * exact forms. A file may have added tokens beyond model.vocab (Gemma 3's
 * <image_soft_token>): they count as tokens, so ids must be dense over
 * model.vocab and added_tokens together.
 *
 *   tokenizer *t;
 *   if (tokenizer_create_from_hf("models/gemma-3-270m", &t) != SW_OK) ...
 *
 * Errors: SW_ERR_IO (tokenizer.json missing or unreadable: the message
 * names the path), SW_ERR_FORMAT (malformed JSON or values: wrong types,
 * ids not dense, duplicate ids, a merge naming an unknown piece...),
 * SW_ERR_UNSUPPORTED (a model type, normalizer, pre-tokenizer,
 * post-processor or merge list the SentencePiece encoder would not
 * reproduce; named), SW_ERR_OOM_HOST. The files are read whole and not
 * kept; the tokenizer owns copies. */
sw_status tokenizer_create_from_hf(const char *dir, tokenizer **out);

/* Builds a tokenizer from n entries (tests, other containers). Ids are the
 * indexes into `tokens`; out-of-range special ids in cfg become -1.
 * Errors: SW_ERR_ARG, SW_ERR_FORMAT (duplicate text; add_space_prefix
 * without a U+2581 token), SW_ERR_OOM_HOST. */
sw_status tokenizer_create(const tokenizer_config *cfg, const tokenizer_token *tokens,
                           size_t n, tokenizer **out);

/* Frees. Accepts NULL. */
void tokenizer_destroy(tokenizer *t);

size_t tokenizer_n_vocab(const tokenizer *t);

/* The stored text of id (NUL-terminated, *len bytes; an embedded NUL would
 * end the C string early, *len is exact), or NULL when id is out of range.
 * Borrowed from t. `len` may be NULL. */
const char *tokenizer_token_text(const tokenizer *t, int32_t id, size_t *len);

/* The id whose stored text is exactly text[0..len), or -1. */
int32_t tokenizer_find(const tokenizer *t, const char *text, size_t len);

/* TOK_TYPE_* of id as stored (TOK_TYPE_UNDEFINED when out of range). */
int32_t tokenizer_token_type(const tokenizer *t, int32_t id);

/* Special ids (-1 when absent) and whether BOS is added. */
void tokenizer_special(const tokenizer *t, sw_special_tokens *out);

/* Encodes len bytes (any bytes) with flags SW_TOK_ADD_BOS /
 * SW_TOK_PARSE_SPECIAL. Writes at most cap ids; *n_ids gets the full count
 * (retry with a larger buffer when it exceeds cap). O(len log len).
 * Errors: SW_ERR_ARG, SW_ERR_UNSUPPORTED (vocabulary type, or a byte with
 * neither a byte token nor <unk>), SW_ERR_OOM_HOST. */
sw_status tokenizer_encode(const tokenizer *t, const char *text, size_t len, unsigned flags,
                           int32_t *ids, size_t cap, size_t *n_ids);

/* The bytes id prints as: NORMAL tokens with U+2581 turned into ' ',
 * USER_DEFINED tokens verbatim, BYTE tokens their byte; CONTROL, UNKNOWN and
 * UNUSED tokens nothing (as llama.cpp's token_to_piece with special=false).
 * Writes at most cap bytes (no NUL); *len gets the full length.
 * Errors: SW_ERR_ARG (id out of range). */
sw_status tokenizer_token_to_piece(const tokenizer *t, int32_t id, char *buf, size_t cap,
                                   size_t *len);

/* Like tokenizer_token_to_piece but control/unknown tokens print their text
 * ("<bos>"): for showing token streams to people (`spillway tokenize`). */
sw_status tokenizer_token_to_piece_special(const tokenizer *t, int32_t id, char *buf,
                                           size_t cap, size_t *len);

/* The longest piece any token prints as, in bytes. */
size_t tokenizer_max_piece_bytes(const tokenizer *t);

/* Concatenated pieces of n ids: the text they stand for (llama.cpp's
 * llama_detokenize with remove_special=false, unparse_special=false; with
 * add_space_prefix the first token's leading space is dropped). Byte tokens
 * are reassembled as raw bytes, so the result may be invalid UTF-8 exactly
 * when the ids say so. Writes at most cap bytes; *len gets the full length.
 * Errors: SW_ERR_ARG (an id out of range; the message names its index). */
sw_status tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char *buf,
                           size_t cap, size_t *len);

/* Streaming UTF-8 reassembly for printing tokens as they are generated:
 * feed each token's piece, write out what comes back. A character split
 * over several byte tokens is held until complete; bytes that can never
 * become valid UTF-8 pass through unchanged, so the concatenated output of
 * all feeds plus the final flush equals the concatenated input exactly.
 *
 *   utf8_stream s = {0};
 *   size_t n = utf8_stream_feed(&s, piece, piece_len, out); // out: piece_len + 3 bytes
 *   ...
 *   n = utf8_stream_flush(&s, out);                          // out: 4 bytes
 */
typedef struct utf8_stream {
    unsigned char pending[4]; /* an unfinished character's leading bytes */
    size_t n_pending;         /* 0..3 */
} utf8_stream;

/* Appends in[0..n) and writes to out (room for n + 3 bytes) everything that
 * is complete; returns the bytes written. */
size_t utf8_stream_feed(utf8_stream *s, const char *in, size_t n, char *out);

/* Writes out (room for 4 bytes) whatever is held back; returns the count. */
size_t utf8_stream_flush(utf8_stream *s, char *out);


#endif

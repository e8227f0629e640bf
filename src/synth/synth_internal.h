/*
 * synth_internal.h — the parts of `spillway synth` shared between its
 * files: the model description (tensor list in both naming schemes), the
 * counter-based weight generator, the synthetic vocabulary and the atomic
 * output files. JSON goes through format/json_write.h (pretty layout).
 */
#ifndef SW_SYNTH_INTERNAL_H
#define SW_SYNTH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/gguf_write.h"
#include "format/json_write.h"
#include "model/config.h"
#include "synth/synth.h"

/* ---- model description (model.c) ---------------------------------------- */

/* SYNTH_NORM: Gemma 1-3's w, stored as 1 + w in GGUF; SYNTH_SCALE: a full
 * multiplier near 1 (Gemma 4's norms and scales), the same value in both
 * formats; SYNTH_ROPE: Gemma 4's rope_freqs, a constant (GGUF only);
 * SYNTH_INDEX: a seeded permutation of 0..ne0-1 stored as I64, a buffer
 * rather than a parameter (an assistant's token ordering, HF only). */
typedef enum {
    SYNTH_EMBD, SYNTH_MATRIX, SYNTH_NORM, SYNTH_SCALE, SYNTH_ROPE, SYNTH_INDEX
} synth_kind;

typedef struct synth_tensor {
    char gguf_name[48];     /* "blk.3.attn_q.weight" */
    char hf_name[80];       /* "model.layers.3.self_attn.q_proj.weight"; "": GGUF only */
    synth_kind kind;
    uint64_t ne0;           /* row length (GGUF ne[0], HF shape[-1]) */
    uint64_t ne1;           /* rows (of one matrix); 1 for vectors */
    uint64_t ne2;           /* matrices (Gemma 4's experts); 1 otherwise */
    uint32_t n_dims;        /* 1 (vectors), 2 or 3 */
    uint32_t n_ones;        /* SYNTH_ROPE: leading 1.0 values, 1e30 after */
    uint64_t stream;        /* generator key: (layer, role), independent of depth */
    float half_width;       /* uniform in [-half_width, half_width) */
    uint32_t gguf_type;     /* stored type in a GGUF file */
} synth_tensor;

typedef struct synth_model {
    char name[64];          /* catalog name */
    int family;             /* 1, 2, 3, 4 */
    model_config c;         /* n_layer already truncated */
    uint32_t n_layer_full;
    uint32_t query_pre_attn; /* HF query_pre_attn_scalar */
    synth_tensor *t;        /* HF state-dict order: embedding, layers, final norm
                             * (Gemma 4: its globals first, then the layers) */
    size_t n;
    uint32_t n_fallback;    /* matrices not stored in the requested type */
    char fallback_note[160];
    bool q4_k_m;            /* Q4_K with llama.cpp's Q4_K_M upgrades to Q6_K */
} synth_model;

/* Builds the description of catalog shape `shape` truncated to n_layers
 * (0: full) and n_vocab tokens (0: the shape's) with matrices in ggml
 * type `type` (GGUF), falling back to Q8_0 (or F16) for Q4_K rows that are
 * not a multiple of 256. Errors:
 * SW_ERR_ARG (unknown shape: lists the catalog; n_layers out of range),
 * SW_ERR_OOM_HOST. */
sw_status synth_model_build(const char *shape, uint32_t n_layers, uint32_t n_vocab,
                            uint32_t type, synth_model *out);
void synth_model_free(synth_model *m);

/* Turns a Q4_K description into llama.cpp's Q4_K_M mix: Q6_K for the tied
 * token embedding (the LM head), for the attention V and down projections
 * (experts' too) of the layers llama.cpp gives more bits (the first and
 * last eighth, and every third between), Q4_K elsewhere. Matrices that
 * fell back from Q4_K keep their fallback type. */
void synth_model_mix_q4_k_m(synth_model *m);

/* Fills out[0..n) with elements start..start+n of tensor t (f32), the HF
 * value for norms (w, not 1 + w). Not for SYNTH_INDEX. */
void synth_fill(uint64_t seed, const synth_tensor *t, uint64_t start, size_t n, float *out);

/* Element i of the generator's stream `stream`: 64 random bits, a function
 * of (seed, stream, i) only (the bits synth_fill draws its values from). */
uint64_t synth_random(uint64_t seed, uint64_t stream, uint64_t i);

/* Sets t's kind, shape (ne0 x ne1, 1-D for vectors), stream and GGUF type,
 * and the spread of its values: 0.1 around the base for vectors, std
 * 1/sqrt(ne0) for matrices and embeddings. Names are left to the caller. */
void synth_tensor_set(synth_tensor *t, synth_kind kind, uint64_t ne0, uint64_t ne1,
                      uint64_t stream, uint32_t gguf_type);

/* Appends Gemma 4 layer il's tensors (model/weights.c's table, as m->c
 * says: none of K, V and k_norm in a KV-shared layer) at m->t[m->n]. */
void synth_add_gemma4_layer(synth_model *m, uint32_t il, uint32_t type);

/* Whether t is a model parameter (counted in params), not a buffer. */
static inline bool synth_is_param(const synth_tensor *t) {
    return t->kind != SYNTH_ROPE && t->kind != SYNTH_INDEX;
}

/* ---- Gemma 4 assistants (assistant.c) ------------------------------------ */

/* Whether `shape` names an assistant ("<gemma 4 shape>-assistant"). */
bool synth_is_assistant(const char *shape);
/* The assistant shapes, comma-separated, into buf. */
void synth_assistant_list(char *buf, size_t cap);

/* Builds the description of assistant `shape` (4 KV-shared layers; head
 * shapes, window and RoPE of its target's catalog entry; widths in
 * assistant.c's table) with n_vocab tokens (0: 262144; a centroid head
 * then gets a number of centroids that divides n_vocab). m->c.assistant
 * is set. Errors: SW_ERR_ARG (unknown assistant: lists them; n_vocab out
 * of range), SW_ERR_OOM_HOST. */
sw_status synth_assistant_build(const char *shape, uint32_t n_vocab, uint32_t type,
                                synth_model *out);

/* Rows of all of t's matrices (ne1 * ne2). */
static inline uint64_t synth_rows(const synth_tensor *t) {
    return t->ne1 * t->ne2;
}

/* ---- vocabulary (vocab.c) ------------------------------------------------ */

enum { SYNTH_TOK_NORMAL = 1, SYNTH_TOK_UNKNOWN = 2, SYNTH_TOK_CONTROL = 3, SYNTH_TOK_BYTE = 6 };

typedef struct synth_vocab {
    uint32_t n;              /* tokens */
    char *text;              /* all pieces back to back */
    uint32_t *off;           /* (n + 1) offsets into text */
    uint8_t *type;           /* (n) SYNTH_TOK_* */
    int32_t *left, *right;   /* (n) the two pieces a merged piece joins; -1 */
    uint32_t *slot;          /* hash table of ids + 1 (0: empty) */
    uint32_t n_slot;         /* power of two */
    uint32_t first_normal;   /* first single-character piece */
    uint32_t first_merged;   /* first piece made by a merge */
    uint32_t sot, eot;       /* <start_of_turn>, <end_of_turn> (<|turn>, <turn|>) */
    bool gemma4;             /* Gemma 4's turn markers and chat template */
} synth_vocab;

/* Gemma's layout: <pad> <eos> <bos> <unk> <mask> [multimodal] <unusedK>...
 * <start_of_turn>=sot <end_of_turn> (Gemma 4: <|turn> <turn|>), 256 byte
 * tokens, "▁" "\n" "\t" and printable ASCII, then pieces that each join two
 * earlier pieces (fixed, independent of the seed). Errors: SW_ERR_ARG (n
 * too small), OOM. */
sw_status synth_vocab_build(uint32_t n, uint32_t sot, bool gemma4, synth_vocab *out);
void synth_vocab_free(synth_vocab *v);
static inline const char *synth_piece(const synth_vocab *v, uint32_t id, size_t *len) {
    *len = v->off[id + 1] - v->off[id];
    return v->text + v->off[id];
}
/* Id of piece s[0..len), or -1. */
int32_t synth_vocab_find(const synth_vocab *v, const char *s, size_t len);
/* SentencePiece score: 0 for control and byte tokens, -id otherwise. */
float synth_vocab_score(const synth_vocab *v, uint32_t id);
/* The BPE merge rules that make merged piece k, for each calling
 * rule(user, left, right): the two pieces it was made of first, then every
 * other split into two normal pieces (what SentencePiece's score-ordered
 * merging may also use), so BPE by rule rank and SentencePiece by score
 * reach the same pieces. Returns the number of rules (rule NULL: only
 * counts them). */
size_t synth_vocab_merges(const synth_vocab *v, uint32_t k,
                          void (*rule)(void *user, uint32_t a, uint32_t b), void *user);

/* ---- output files (out.c) ------------------------------------------------ */

/* A file written through a buffer; a byte_sink. */
typedef struct out_file {
    int fd;
    char *path;             /* owned */
    uint8_t *buf;
    size_t len, cap;
    uint64_t written;       /* bytes handed to the kernel */
    byte_sink sink;         /* writes into this file */
} out_file;

/* Creates `path` (must not exist; O_EXCL). Errors: SW_ERR_IO naming the
 * path and what to do, SW_ERR_OOM_HOST. */
sw_status out_file_create(out_file *f, const char *path);
/* Flushes, fsyncs and closes. Errors: SW_ERR_IO (disk full ...). */
sw_status out_file_close(out_file *f);
/* Closes (if open) and deletes the file; frees. Safe after close too. */
void out_file_discard(out_file *f);
/* Frees what create allocated (after close). */
void out_file_free(out_file *f);

/* Fails with SW_ERR_IO if the file system holding `path` has fewer than
 * need_bytes free. */
sw_status synth_check_space(const char *path, uint64_t need_bytes);
/* fsync a folder (after creating or renaming entries in it). */
void synth_sync_dir(const char *dir);
/* The folder part of path ("." when none) into buf. */
void synth_parent_dir(const char *path, char *buf, size_t cap);
/* malloc'ed printf, or NULL. */
char *synth_strf(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---- progress and streaming of one tensor (synth.c) ----------------------- */

/* Shared state while writing: options, generator buffers, progress. */
typedef struct synth_ctx {
    const synth_options *o;
    uint64_t total_bytes, done_bytes;
    float *f32;             /* chunk of generated values */
    uint8_t *bytes;         /* the chunk converted */
    size_t chunk_elems;
    int n_threads;          /* generating and converting a chunk */
} synth_ctx;

#define SYNTH_MAX_THREADS 16

/* Counts n bytes written; reports progress; SW_ERR_IO if cancelled. */
sw_status synth_advance(synth_ctx *x, uint64_t n);

/* Generates tensor t, converts it to ggml type `type` (F32/F16/BF16/Q8_0/
 * Q4_K), adds `add` to every value first (1 for GGUF norms), and passes the
 * bytes in row chunks to emit(user, bytes, n). */
typedef sw_status (*synth_emit_fn)(void *user, const void *bytes, size_t n);
sw_status synth_stream_tensor(synth_ctx *x, const synth_tensor *t, uint32_t type, float add,
                              synth_emit_fn emit, void *user);

/* tokenizer.json and tokenizer_config.json bodies for vocabulary ctx (a
 * const synth_vocab *), written through j (hf_tokenizer.c). */
void synth_tokenizer_json(jsonw *j, const void *ctx);
void synth_tokenizer_config_json(jsonw *j, const void *ctx);

/* Gemma's chat template (Jinja), as official files carry it (Gemma 4's
 * turns when gemma4). */
const char *synth_chat_template(bool gemma4);

/* config.json of a Gemma 4 model (hf_config4.c): ctx is the synth_model;
 * f16 picks the dtype named. */
void synth_gemma4_config_json(jsonw *j, const synth_model *m, bool f16);
/* config.json of a Gemma 4 assistant (m->c.assistant): its own keys
 * around the text model's config (text_config). */
void synth_gemma4_assistant_config_json(jsonw *j, const synth_model *m, bool f16);

/* Streams SYNTH_INDEX tensor t (a seeded permutation of 0..ne0-1) as
 * little-endian I64 through emit, in chunks (assistant.c). Errors:
 * SW_ERR_OOM_HOST, emit's, SW_ERR_IO (cancelled). */
sw_status synth_stream_index(synth_ctx *x, const synth_tensor *t, synth_emit_fn emit,
                             void *user);

/* The two output formats. v is NULL for an assistant (hf only), which has
 * no tokenizer of its own (it uses its target's). */
sw_status synth_write_gguf(synth_ctx *x, const synth_model *m, const synth_vocab *v,
                           uint32_t type, synth_result *r);
sw_status synth_write_hf(synth_ctx *x, const synth_model *m, const synth_vocab *v,
                         uint32_t type, synth_result *r);

#endif

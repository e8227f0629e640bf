/*
 * synth.h — synthetic Gemma models: a GGUF file or a Hugging Face folder
 * with the exact tensor names, shapes, metadata and vocabulary size of an
 * official Gemma configuration (the catalog `spillway plan -m NAME` uses),
 * random weights and a synthetic SentencePiece-BPE vocabulary. They stand
 * in for checkpoints that cannot be downloaded, for scale tests and
 * benchmarks (`spillway synth`). "<gemma 4 shape>-assistant" names a
 * Gemma 4 assistant (a 4-layer drafter that reads its target's caches;
 * Hugging Face folder only, no tokenizer: assistant.c).
 *
 *   synth_options o = synth_options_default();
 *   o.shape = "gemma2-9b"; o.type = "bf16"; o.format = "gguf";
 *   o.path = "/tmp/g2-9b.gguf";
 *   synth_result r;
 *   if (synth_write(&o, &r) != SW_OK) fprintf(stderr, "%s\n", sw_last_error());
 *
 * Weights: each element is a function of (seed, tensor identity, element
 * index) only (a counter-based generator), so the bytes do not depend on
 * the chunk size, and a model truncated with n_layers holds the same first
 * layers as the full one. Matrices are uniform with std 1/sqrt(row length),
 * the embedding with std 1/sqrt(n_embd) (Gemma scales looked-up rows by
 * sqrt(n_embd), so the residual stream starts at rms ~1), norm weights w
 * uniform in [-0.1, 0.1] rounded to bf16: GGUF stores 1 + w in f32 (as
 * llama.cpp's converter does), HF stores w. With the same seed the GGUF
 * file and the HF folder describe the same model.
 *
 * Output is streamed in row chunks (chunk_bytes of f32 at a time), written
 * to PATH.tmp.<pid> (a file, or a folder for HF), fsynced and renamed to
 * PATH at the end; on any failure the temporary output is removed. Memory
 * stays at a few MiB plus the vocabulary (~10 MiB for 262k tokens)
 * whatever the model size.
 */
#ifndef SW_SYNTH_SYNTH_H
#define SW_SYNTH_SYNTH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spillway.h"

#define SYNTH_MIN_VOCAB 512

/* Progress: bytes written of total, after every chunk. */
typedef void (*synth_progress_fn)(void *user, uint64_t done_bytes, uint64_t total_bytes);

typedef struct synth_options {
    const char *shape;    /* catalog name: "gemma2-9b", "gemma-3-27b", ..., or an
                           * assistant: "gemma4-31b-assistant" */
    const char *type;     /* "bf16", "f16", "q8_0", "q4_k", "q4_k_m" (hf: bf16, f16) */
    const char *format;   /* "gguf" (default) or "hf" */
    const char *path;     /* output file (gguf) or folder (hf) */
    uint32_t n_layers;    /* 0: the shape's depth; else 1..depth (assistants: 0) */
    uint32_t n_vocab;     /* 0: the shape's vocabulary; else >= SYNTH_MIN_VOCAB
                           * (small files for tests) */
    uint64_t seed;        /* default 1 */
    size_t chunk_bytes;   /* f32 generated per step; 0: 4 MiB */
    uint64_t shard_bytes; /* hf: most tensor bytes per safetensors file; 0: 5 GB */
    bool force;           /* replace an existing PATH */
    int n_threads;        /* generating threads; 0: the online CPUs (at most 16) */
    synth_progress_fn progress;
    void *progress_user;
    const volatile sig_atomic_t *cancel; /* non-zero: stop, clean up (SW_ERR_IO) */
} synth_options;

synth_options synth_options_default(void);

typedef struct synth_result {
    char shape[64];          /* canonical catalog name */
    char arch[16];           /* gemma, gemma2, gemma3 */
    uint32_t n_layer;        /* written */
    uint32_t n_layer_full;   /* of the official shape */
    uint32_t n_vocab;
    uint64_t n_params;
    uint64_t n_tensors;
    uint64_t bytes_written;  /* all files */
    uint32_t n_files;        /* 1 for gguf; shards + json files for hf */
    uint32_t n_fallback;     /* matrices stored in a fallback type */
    char fallback_note[160]; /* "" or what fell back to what, and why */
    double seconds;
} synth_result;

/* Writes the model described by *o. Errors: SW_ERR_ARG (unknown shape,
 * type or format, q8_0/q4_k with hf, --layers or --vocab out of range, an
 * assistant as gguf or with --layers: the message lists the valid
 * values), SW_ERR_IO (PATH exists without force, folder missing, not
 * enough space, disk full, interrupted: nothing is left behind),
 * SW_ERR_OOM_HOST. */
sw_status synth_write(const synth_options *o, synth_result *out);

/* Canonical lower-case name of a synth type ("q4_k"), or NULL. */
const char *synth_type_name(const char *type);

#endif

/*
 * synth.c — `spillway synth` in the library: checks the options, builds the
 * model description and vocabulary, and streams every tensor through the
 * chosen format writer (gguf.c, hf.c) in row chunks.
 *
 * Circle with the writers, on purpose: this file calls the writer of the
 * format asked for, and each writer calls back synth_stream_tensor() /
 * synth_advance() for its tensors' bytes: the generation stays here,
 * once, whatever the format.
 *
 * Each chunk is generated and converted by up to n_threads threads (rows
 * split between them), then written while nothing else runs: the disk and
 * the page cache overlap the next chunk's generation on their own.
 * Memory: one chunk of f32 values (chunk_bytes, at least one row) and its
 * converted bytes, the vocabulary, the writers' headers. Nothing scales
 * with the model's size except the tensor count.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "quant/quantize.h"
#include "quant/types.h"
#include "synth/synth_internal.h"
#include "util/error.h"
#include "util/clock.h"

#define DEFAULT_CHUNK_BYTES ((size_t)4 << 20)

synth_options synth_options_default(void) {
    synth_options o;
    memset(&o, 0, sizeof o);
    o.format = "gguf";
    o.seed = 1;
    return o;
}

/* q4_k_m: Q4_K matrices with llama.cpp's Q4_K_M upgrades (mix). */
static const struct { const char *name; uint32_t type; bool mix; } types[] = {
    {"bf16", SW_TYPE_BF16, false}, {"f16", SW_TYPE_F16, false}, {"q8_0", SW_TYPE_Q8_0, false},
    {"q4_k", SW_TYPE_Q4_K, false}, {"q4_k_m", SW_TYPE_Q4_K, true},
};

const char *synth_type_name(const char *type) {
    for (size_t i = 0; type && i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(type, types[i].name))
            return types[i].name;
    return NULL;
}

static bool type_mix(const char *type) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(type, types[i].name))
            return types[i].mix;
    return false;
}

static uint32_t type_id(const char *type) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(type, types[i].name))
            return types[i].type;
    return SW_TYPE_BF16;
}

sw_status synth_advance(synth_ctx *x, uint64_t n) {
    x->done_bytes += n;
    if (x->o->progress)
        x->o->progress(x->o->progress_user, x->done_bytes, x->total_bytes);
    if (x->o->cancel && *x->o->cancel)
        return sw_errorf(SW_ERR_IO, "interrupted; the partial output was removed");
    return SW_OK;
}

/* Rows [r0, r0 + rows) of a tensor, generated and converted into the
 * chunk buffers at row `at` — one thread's share of a chunk. Threads write
 * disjoint parts of the buffers and every value depends only on its index,
 * so the bytes do not depend on the number of threads. */
typedef struct chunk_part {
    const synth_ctx *x;
    const synth_tensor *t;
    uint32_t type;
    float add;
    uint64_t r0, rows, at, row_bytes;
    sw_status st;
} chunk_part;

static void *chunk_part_run(void *arg) {
    chunk_part *p = arg;
    size_t n = (size_t)(p->rows * p->t->ne0);
    float *f32 = p->x->f32 + p->at * p->t->ne0;
    synth_fill(p->x->o->seed, p->t, p->r0 * p->t->ne0, n, f32);
    if (p->add != 0.0f)
        for (size_t i = 0; i < n; i++)
            f32[i] += p->add;
    p->st = quant_quantize(p->type, f32, p->x->bytes + p->at * p->row_bytes, n);
    return NULL;
}

/* Fills and converts `rows` rows from r0 with up to x->n_threads threads
 * (a thread that cannot be started is run here instead). */
static sw_status chunk_run(const synth_ctx *x, const synth_tensor *t, uint32_t type, float add,
                           uint64_t r0, uint64_t rows, uint64_t row_bytes) {
    chunk_part parts[SYNTH_MAX_THREADS];
    pthread_t tid[SYNTH_MAX_THREADS];
    bool started[SYNTH_MAX_THREADS] = {false};
    uint64_t k = (uint64_t)x->n_threads < rows ? (uint64_t)x->n_threads : rows;
    if (rows * t->ne0 < (1u << 16))
        k = 1; /* not worth a thread */
    for (uint64_t i = 0; i < k; i++) {
        uint64_t a = rows * i / k, b = rows * (i + 1) / k;
        parts[i] = (chunk_part){x, t, type, add, r0 + a, b - a, a, row_bytes, SW_OK};
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, chunk_part_run, &parts[i]) == 0;
    }
    chunk_part_run(&parts[0]);
    sw_status st = parts[0].st;
    for (uint64_t i = 1; i < k; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            chunk_part_run(&parts[i]);
        if (parts[i].st != SW_OK)
            st = parts[i].st;
    }
    return st;
}

sw_status synth_stream_tensor(synth_ctx *x, const synth_tensor *t, uint32_t type, float add,
                              synth_emit_fn emit, void *user) {
    uint64_t row_bytes = 0;
    if (!type_row_bytes(type, t->ne0, &row_bytes))
        return sw_errorf(SW_ERR_ARG, "synth: rows of %llu do not fit %s",
                         (unsigned long long)t->ne0, type_name(type));
    uint64_t rows_per_chunk = x->chunk_elems / t->ne0;
    if (rows_per_chunk == 0)
        rows_per_chunk = 1; /* chunk_elems >= the longest row: cannot happen */
    const uint64_t n_rows = synth_rows(t);
    for (uint64_t r0 = 0; r0 < n_rows; r0 += rows_per_chunk) {
        uint64_t rows = n_rows - r0 < rows_per_chunk ? n_rows - r0 : rows_per_chunk;
        sw_status st = chunk_run(x, t, type, add, r0, rows, row_bytes);
        if (st == SW_OK)
            st = emit(user, x->bytes, (size_t)(rows * row_bytes));
        if (st == SW_OK)
            st = synth_advance(x, rows * row_bytes);
        if (st != SW_OK)
            return st;
    }
    return SW_OK;
}

/* Usage errors, before anything is built. */
static sw_status check_options(const synth_options *o) {
    if (o->path == NULL || o->path[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "no output path: pass -o PATH");
    if (o->shape == NULL || o->shape[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "no shape: pass --shape NAME (e.g. gemma2-9b)");
    if (synth_type_name(o->type) == NULL)
        return sw_errorf(SW_ERR_ARG, "unknown --type '%s'; choose bf16, f16, q8_0, q4_k or q4_k_m",
                         o->type ? o->type : "");
    const char *fmt = o->format ? o->format : "gguf";
    if (strcasecmp(fmt, "gguf") != 0 && strcasecmp(fmt, "hf") != 0)
        return sw_errorf(SW_ERR_ARG, "unknown --format '%s'; choose gguf or hf", fmt);
    uint32_t t = type_id(o->type);
    if (!strcasecmp(fmt, "hf") && t != SW_TYPE_BF16 && t != SW_TYPE_F16)
        return sw_errorf(SW_ERR_ARG, "--format hf takes --type bf16 or f16: Hugging Face "
                         "checkpoints hold float weights (use --format gguf for %s)",
                         synth_type_name(o->type));
    if (synth_is_assistant(o->shape) && strcasecmp(fmt, "hf") != 0)
        return sw_errorf(SW_ERR_ARG, "--shape %s: synth writes a Gemma 4 assistant only as a "
                         "Hugging Face folder (what transformers saves for "
                         "Gemma4AssistantForCausalLM); pass --format hf", o->shape);
    if (synth_is_assistant(o->shape) && o->n_layers != 0)
        return sw_errorf(SW_ERR_ARG, "--layers %u: a Gemma 4 assistant always has 4 layers "
                         "(3 sliding, 1 full, all reading its target's caches); drop --layers",
                         o->n_layers);
    if (o->chunk_bytes != 0 && o->chunk_bytes < 4)
        return sw_errorf(SW_ERR_ARG, "chunk of %zu bytes is too small", o->chunk_bytes);
    return SW_OK;
}

/* Generator buffers: chunk_bytes of f32, and at least the longest row. */
static sw_status ctx_init(synth_ctx *x, const synth_options *o, const synth_model *m) {
    memset(x, 0, sizeof *x);
    x->o = o;
    size_t elems = (o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK_BYTES) / sizeof(float);
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].ne0 > elems)
            elems = (size_t)m->t[i].ne0;
    x->chunk_elems = elems;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    x->n_threads = o->n_threads > 0 ? o->n_threads : cpus > 0 ? (int)cpus : 1;
    if (x->n_threads > SYNTH_MAX_THREADS)
        x->n_threads = SYNTH_MAX_THREADS;
    x->f32 = malloc(elems * sizeof(float));
    x->bytes = malloc(elems * sizeof(float)); /* no stored type is wider than f32 */
    if (x->f32 == NULL || x->bytes == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory for a %zu-element chunk",
                         elems);
    return SW_OK;
}


static void fill_result(const synth_model *m, synth_result *r) {
    snprintf(r->shape, sizeof r->shape, "%s", m->name);
    snprintf(r->arch, sizeof r->arch, "%s", m->c.arch);
    r->n_layer = m->c.n_layer;
    r->n_layer_full = m->n_layer_full;
    r->n_vocab = m->c.n_vocab;
    r->n_tensors = m->n;
    for (size_t i = 0; i < m->n; i++)
        r->n_params += synth_is_param(&m->t[i]) ? m->t[i].ne0 * synth_rows(&m->t[i]) : 0;
    r->n_fallback = m->n_fallback;
    snprintf(r->fallback_note, sizeof r->fallback_note, "%s", m->fallback_note);
}

sw_status synth_write(const synth_options *o, synth_result *r) {
    synth_model m;
    synth_vocab v;
    synth_ctx x;
    memset(&m, 0, sizeof m);
    memset(&v, 0, sizeof v);
    memset(&x, 0, sizeof x);
    if (o == NULL || r == NULL)
        return sw_errorf(SW_ERR_ARG, "synth_write: NULL argument");
    memset(r, 0, sizeof *r);
    double t0 = sw_clock_s();
    sw_status st = check_options(o);
    if (st != SW_OK)
        return st;
    uint32_t type = type_id(o->type);
    bool hf = o->format && !strcasecmp(o->format, "hf");
    const bool assistant = synth_is_assistant(o->shape); /* no tokenizer: its target's */
    st = assistant ? synth_assistant_build(o->shape, o->n_vocab, type, &m)
                   : synth_model_build(o->shape, o->n_layers, o->n_vocab, type, &m);
    if (st != SW_OK)
        goto done;
    if (type_mix(o->type))
        synth_model_mix_q4_k_m(&m);
    const uint32_t sot = m.family >= 3 ? 105 : 106;
    if ((!assistant && (st = synth_vocab_build(m.c.n_vocab, sot, m.family == 4, &v)) != SW_OK) ||
        (st = ctx_init(&x, o, &m)) != SW_OK)
        goto done;
    fill_result(&m, r);
    const synth_vocab *vp = assistant ? NULL : &v;
    st = hf ? synth_write_hf(&x, &m, vp, type, r) : synth_write_gguf(&x, &m, vp, type, r);
    r->seconds = sw_clock_s() - t0;
done:
    free(x.f32);
    free(x.bytes);
    synth_vocab_free(&v);
    synth_model_free(&m);
    return st;
}

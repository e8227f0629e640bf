/*
 * test_synth.c — the parts of `spillway synth` on their own: the
 * counter-based generator (same values whatever the chunking), the
 * synthetic vocabulary (Gemma's layout, unique pieces, every merged piece
 * the join of two earlier ones), the streaming GGUF and safetensors writers
 * (read back by our readers from memory, misuse refused), Gemma 4's tensor
 * lists at full size (never written here: KV-shared layers without keys,
 * per-layer embeddings, 3-D experts), Gemma 4 assistants' lists and
 * token ordering, and synth_write's errors (bad
 * options, existing or unwritable paths, cancellation), which must leave
 * nothing behind.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "format/gguf.h"
#include "format/gguf_write.h"
#include "format/safetensors.h"
#include "format/safetensors_write.h"
#include "quant/half.h"
#include "quant/types.h"
#include "synth/synth_internal.h"

/* ---- a memory sink ------------------------------------------------------------ */

typedef struct membuf {
    uint8_t *data;
    size_t len, cap;
} membuf;

static sw_status mem_write(void *ctx, const void *p, size_t n) {
    membuf *m = ctx;
    if (n > m->cap - m->len) {
        size_t cap = m->cap ? m->cap : 1024;
        while (cap - m->len < n)
            cap *= 2;
        uint8_t *g = realloc(m->data, cap);
        if (g == NULL)
            return SW_ERR_OOM_HOST;
        m->data = g;
        m->cap = cap;
    }
    memcpy(m->data + m->len, p, n);
    m->len += n;
    return SW_OK;
}

/* ---- generator ------------------------------------------------------------------ */

static void test_generator(void) {
    synth_model m;
    SW_CHECK_OK(synth_model_build("gemma3-270m", 1, 512, SW_TYPE_BF16, &m));
    const synth_tensor *q = &m.t[1], *norm = &m.t[5];
    SW_CHECK(!strcmp(q->gguf_name, "blk.0.attn_q.weight"), "tensor 1 is %s", q->gguf_name);
    SW_CHECK(!strcmp(norm->gguf_name, "blk.0.attn_q_norm.weight"), "%s", norm->gguf_name);
    enum { N = 1001 };
    float whole[N], part[N];
    synth_fill(7, q, 0, N, whole);
    /* any split, odd starts and lengths included */
    static const size_t cuts[] = {0, 1, 2, 5, 64, 333, 334, 1000, N};
    for (size_t c = 0; c + 1 < sizeof cuts / sizeof cuts[0]; c++)
        synth_fill(7, q, cuts[c], cuts[c + 1] - cuts[c], part + cuts[c]);
    SW_CHECK(!memcmp(whole, part, sizeof whole), "chunked generation differs");
    synth_fill(7, q, 1000, 1, part);
    SW_CHECK(part[0] == whole[1000], "single odd element");
    double sum = 0, sq = 0, a = q->half_width;
    bool in_range = true;
    for (size_t i = 0; i < N; i++) {
        sum += whole[i];
        sq += (double)whole[i] * whole[i];
        in_range &= whole[i] >= -a && whole[i] < a;
    }
    double sd = sqrt(sq / N - (sum / N) * (sum / N));
    SW_CHECK(in_range, "values within +-%g", a);
    SW_CHECK(fabs(sd * sqrt(640.0) - 1.0) < 0.1, "std %g, want 1/sqrt(640)", sd);
    synth_fill(8, q, 0, N, part);
    SW_CHECK(memcmp(whole, part, sizeof whole) != 0, "another seed, other values");
    float w[256];
    synth_fill(1, norm, 0, 256, w);
    bool bf16 = true, small = true;
    for (int i = 0; i < 256; i++) {
        bf16 &= half_bf16_to_f32(half_f32_to_bf16(w[i])) == w[i];
        small &= fabsf(w[i]) <= 0.1f;
    }
    SW_CHECK(bf16 && small, "norm weights are bf16 values in [-0.1, 0.1]");
    synth_model_free(&m);
}

/* ---- vocabulary ----------------------------------------------------------------- */

static bool piece_is(const synth_vocab *v, uint32_t id, const char *s) {
    size_t len;
    const char *p = synth_piece(v, id, &len);
    return len == strlen(s) && !memcmp(p, s, len);
}

static void check_vocab(uint32_t n, uint32_t sot) {
    synth_vocab v;
    SW_CHECK_OK(synth_vocab_build(n, sot, false, &v));
    SW_CHECK(v.n == n, "%u tokens, want %u", v.n, n);
    SW_CHECK(piece_is(&v, 0, "<pad>") && piece_is(&v, 1, "<eos>") && piece_is(&v, 2, "<bos>") &&
             piece_is(&v, 3, "<unk>"), "ids 0-3 as Gemma");
    SW_CHECK(v.type[3] == SYNTH_TOK_UNKNOWN && v.type[2] == SYNTH_TOK_CONTROL, "types 0-3");
    SW_CHECK(v.sot == sot && piece_is(&v, sot, "<start_of_turn>") &&
             piece_is(&v, sot + 1, "<end_of_turn>"), "turn markers at %u", sot);
    SW_CHECK(piece_is(&v, sot + 2, "<0x00>") && piece_is(&v, sot + 2 + 255, "<0xFF>") &&
             v.type[sot + 2 + 0x41] == SYNTH_TOK_BYTE, "byte tokens follow");
    SW_CHECK(piece_is(&v, v.first_normal, "\xe2\x96\x81"), "U+2581 is a piece");
    int bad_find = 0, bad_merge = 0, bad_score = 0;
    for (uint32_t i = 0; i < v.n; i++) {
        size_t len;
        const char *p = synth_piece(&v, i, &len);
        if (synth_vocab_find(&v, p, len) != (int32_t)i)
            bad_find++;
        if (i > 0 && v.type[i] == SYNTH_TOK_NORMAL && v.type[i - 1] == SYNTH_TOK_NORMAL &&
            !(synth_vocab_score(&v, i) < synth_vocab_score(&v, i - 1)))
            bad_score++;
        if (i < v.first_merged)
            continue;
        size_t la, lb;
        const char *a = synth_piece(&v, (uint32_t)v.left[i], &la);
        const char *b = synth_piece(&v, (uint32_t)v.right[i], &lb);
        if (v.left[i] < (int32_t)v.first_normal || v.left[i] >= (int32_t)i ||
            v.right[i] < (int32_t)v.first_normal || v.right[i] >= (int32_t)i ||
            la + lb != len || memcmp(a, p, la) || memcmp(b, p + la, lb) || len > 16)
            bad_merge++;
    }
    SW_CHECK(bad_find == 0, "%d pieces not unique or not found", bad_find);
    SW_CHECK(bad_merge == 0, "%d merged pieces are not the join of two earlier ones", bad_merge);
    SW_CHECK(bad_score == 0, "%d scores do not decrease with id", bad_score);
    SW_CHECK(synth_vocab_find(&v, "no such piece!!", 15) == -1, "absent piece");
    synth_vocab w;
    SW_CHECK_OK(synth_vocab_build(n, sot, false, &w));
    SW_CHECK(w.off[n] == v.off[n] && !memcmp(w.text, v.text, v.off[n]), "deterministic");
    synth_vocab_free(&w);
    synth_vocab_free(&v);
}

static void test_vocab(void) {
    check_vocab(262144, 105); /* Gemma 3 */
    check_vocab(256000, 106); /* Gemma 1/2 */
    check_vocab(512, 106);    /* the smallest allowed */
    synth_vocab v;
    SW_CHECK(synth_vocab_build(300, 106, false, &v) == SW_ERR_ARG,
             "too small a vocabulary");
}

/* ---- writers -------------------------------------------------------------------- */

static void test_gguf_writer(void) {
    gguf_writer *w;
    membuf mb = {0};
    byte_sink sink = {mem_write, &mb};
    SW_CHECK_OK(gguf_writer_create(&w));
    SW_CHECK_OK(gguf_writer_kv_str(w, "general.architecture", "gemma3"));
    SW_CHECK_OK(gguf_writer_kv_u32(w, "a.u32", 7));
    SW_CHECK_OK(gguf_writer_kv_f32(w, "a.f32", 1.5f));
    SW_CHECK_OK(gguf_writer_kv_bool(w, "a.bool", true));
    SW_CHECK(gguf_writer_kv_u32(w, "a.u32", 8) == SW_ERR_ARG, "duplicate key refused");
    SW_CHECK_OK(gguf_writer_array_begin(w, "a.strs", GGUF_VT_STRING, 2));
    SW_CHECK_OK(gguf_writer_array_str(w, "x", 1));
    SW_CHECK(gguf_writer_kv_u32(w, "a.too_early", 1) == SW_ERR_ARG, "array still open");
    SW_CHECK_OK(gguf_writer_array_str(w, "\xe2\x96\x81y", 4));
    SW_CHECK(gguf_writer_array_f32(w, 1.0f) == SW_ERR_ARG, "array already full");
    uint64_t ne_a[2] = {256, 3}, ne_b[1] = {5}, ne_bad[1] = {100};
    SW_CHECK_OK(gguf_writer_add_tensor(w, "t.q4k", 2, ne_a, SW_TYPE_Q4_K));
    SW_CHECK_OK(gguf_writer_add_tensor(w, "t.f32", 1, ne_b, SW_TYPE_F32));
    SW_CHECK(gguf_writer_add_tensor(w, "t.f32", 1, ne_b, SW_TYPE_F32) == SW_ERR_ARG, "dup");
    SW_CHECK(gguf_writer_add_tensor(w, "t.bad", 1, ne_bad, SW_TYPE_Q8_0) == SW_ERR_ARG,
             "row not a whole number of blocks");
    SW_CHECK(gguf_writer_tensor_bytes(w, 0) == 3 * 144, "q4_k bytes");
    uint64_t total = gguf_writer_file_bytes(w);
    SW_CHECK(gguf_writer_write_data(w, &sink, "x", 1) == SW_ERR_ARG, "data before header");
    SW_CHECK_OK(gguf_writer_write_header(w, &sink));
    SW_CHECK(mb.len % 32 == 0, "data section aligned");
    uint8_t q[3 * 144];
    float f[5] = {1, 2, 3, 4, 5};
    for (size_t i = 0; i < sizeof q; i++)
        q[i] = (uint8_t)(i * 7);
    SW_CHECK_OK(gguf_writer_write_data(w, &sink, q, 100)); /* split anywhere */
    SW_CHECK(gguf_writer_finish(w, &sink) == SW_ERR_ARG, "incomplete tensor refused");
    SW_CHECK_OK(gguf_writer_write_data(w, &sink, q + 100, sizeof q - 100));
    SW_CHECK_OK(gguf_writer_write_data(w, &sink, f, sizeof f));
    SW_CHECK(gguf_writer_write_data(w, &sink, f, 1) == SW_ERR_ARG, "bytes past the end");
    SW_CHECK_OK(gguf_writer_finish(w, &sink));
    SW_CHECK(mb.len == total, "file is %zu bytes, predicted %llu", mb.len,
             (unsigned long long)total);
    gguf_writer_destroy(w);
    gguf_file *g = NULL;
    SW_CHECK_OK(gguf_open_memory(mb.data, mb.len, &g));
    if (g != NULL) {
        uint64_t u = 0;
        double d = 0;
        const gguf_value *arr = NULL;
        SW_CHECK(g->n_kv == 5 && g->n_tensors == 2, "counts");
        SW_CHECK(gguf_get_uint(g, "a.u32", &u) == SW_OK && u == 7, "u32");
        SW_CHECK(gguf_get_float(g, "a.f32", &d) == SW_OK && d == 1.5, "f32");
        SW_CHECK(gguf_get_array(g, "a.strs", &arr) == SW_OK && arr->arr.n == 2 &&
                 arr->arr.items[1].s.len == 4, "string array");
        const gguf_tensor *t = gguf_find_tensor(g, "t.q4k"), *t2 = gguf_find_tensor(g, "t.f32");
        SW_CHECK(t && t->type == SW_TYPE_Q4_K && t->ne[1] == 3 && !memcmp(t->data, q, sizeof q),
                 "q4_k tensor round trip");
        SW_CHECK(t2 && t2->offset % 32 == 0 && !memcmp(t2->data, f, sizeof f), "f32 tensor");
    }
    gguf_close(g);
    free(mb.data);
}

static void test_st_writer(void) {
    st_writer *w;
    membuf mb = {0};
    byte_sink sink = {mem_write, &mb};
    SW_CHECK_OK(st_writer_create(&w));
    uint64_t s_a[2] = {3, 4}, s_b[1] = {5}, s_d[1] = {2};
    /* the widest dtype first, as safetensors orders them (aligned data) */
    SW_CHECK_OK(st_writer_add(w, "d.ordering", ST_I64, 1, s_d));
    SW_CHECK_OK(st_writer_add(w, "a.weight", ST_BF16, 2, s_a));
    SW_CHECK_OK(st_writer_add(w, "b/norm.weight", ST_F32, 1, s_b));
    SW_CHECK(st_writer_add(w, "a.weight", ST_F16, 1, s_b) == SW_ERR_ARG, "duplicate name");
    SW_CHECK(st_writer_add(w, "c", ST_I32, 1, s_b) == SW_ERR_ARG, "I32 dtype refused");
    uint64_t total = 0;
    SW_CHECK_OK(st_writer_file_bytes(w, &total));
    SW_CHECK(st_writer_add(w, "late", ST_F32, 1, s_b) == SW_ERR_ARG, "sealed after sizing");
    SW_CHECK_OK(st_writer_write_header(w, &sink));
    SW_CHECK(mb.len % 8 == 0, "header padded to 8");
    uint16_t a[12];
    float b[5] = {0.5f, -1, 2, 3, 4};
    for (int i = 0; i < 12; i++)
        a[i] = half_f32_to_bf16((float)i);
    const uint8_t d[16] = {7, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}; /* 7, 257 */
    SW_CHECK_OK(st_writer_write_data(w, &sink, d, sizeof d));
    SW_CHECK_OK(st_writer_write_data(w, &sink, a, 7));
    SW_CHECK(st_writer_finish(w) == SW_ERR_ARG, "incomplete");
    SW_CHECK_OK(st_writer_write_data(w, &sink, (uint8_t *)a + 7, sizeof a - 7));
    SW_CHECK_OK(st_writer_write_data(w, &sink, b, sizeof b));
    SW_CHECK(st_writer_write_data(w, &sink, b, 1) == SW_ERR_ARG, "past the end");
    SW_CHECK_OK(st_writer_finish(w));
    SW_CHECK(mb.len == total, "size %zu, predicted %llu", mb.len, (unsigned long long)total);
    st_writer_destroy(w);
    SW_CHECK(mb.len > 16 && !memcmp(mb.data + 8, "{\"__metadata__\":{\"format\":\"pt\"}", 31),
             "metadata first, compact JSON");
    st_file *f = NULL;
    SW_CHECK_OK(st_open_memory(mb.data, mb.len, "mem.safetensors", &f));
    if (f != NULL) {
        const st_tensor *ta = st_find(f, "a.weight"), *tb = st_find(f, "b/norm.weight");
        SW_CHECK(ta && ta->dtype == ST_BF16 && ta->n_dims == 2 && ta->shape[0] == 3 &&
                 ta->shape[1] == 4 && !memcmp(ta->data, a, sizeof a), "bf16 round trip");
        SW_CHECK(tb && tb->dtype == ST_F32 && !memcmp(tb->data, b, sizeof b), "f32 round trip");
        const st_tensor *td = st_find(f, "d.ordering");
        SW_CHECK(td && td->dtype == ST_I64 && td->shape[0] == 2 && !memcmp(td->data, d, sizeof d),
                 "i64 round trip");
        SW_CHECK(st_meta(f, "format") && !strcmp(st_meta(f, "format"), "pt"), "format pt");
    }
    st_close(f);
    free(mb.data);
}

static void test_py_float(void) {
    static const struct { double v; const char *want; } cases[] = {
        {1e-6, "1e-06"}, {10000.0, "10000.0"}, {1000000.0, "1000000.0"}, {8.0, "8.0"},
        {0.02, "0.02"}, {0.0, "0.0"}, {50.0, "50.0"}, {1.5e-7, "1.5e-07"}, {1e16, "1e+16"},
        {0.0001, "0.0001"}, {123.25, "123.25"}, {-2.5, "-2.5"}, {1e22, "1e+22"},
    };
    char buf[40];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        jw_py_float(cases[i].v, buf, sizeof buf);
        SW_CHECK(!strcmp(buf, cases[i].want), "repr(%g) = %s, want %s", cases[i].v, buf,
                 cases[i].want);
    }
}

/* ---- synth_write errors ------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s, (void)flag, (void)f;
    return remove(p);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static volatile sig_atomic_t cancel_now = 0;
static void cancel_after_first(void *user, uint64_t done, uint64_t total) {
    (void)user, (void)total;
    if (done > 0)
        cancel_now = 1;
}

static sw_status synth_small(const char *path, const char *type, const char *format,
                             bool force) {
    synth_options o = synth_options_default();
    synth_result r;
    o.shape = "gemma3-270m";
    o.type = type;
    o.format = format;
    o.path = path;
    o.n_layers = 1;
    o.n_vocab = 512;
    o.force = force;
    return synth_write(&o, &r);
}

static void test_errors(const char *dir) {
    char path[512], other[600];
    synth_options o = synth_options_default();
    synth_result r;
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    o.path = path;
    o.type = "bf16";
    o.shape = "gemma9-1t";
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG && strstr(sw_last_error(), "gemma2-9b") &&
             strstr(sw_last_error(), "gemma3-27b"), "unknown shape lists the catalog: %s",
             sw_last_error());
    o.shape = "Gemma-2-9B"; /* catalog spellings are accepted */
    o.type = "q5_k";
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG, "unknown type");
    o.type = "q4_k";
    o.format = "hf";
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG && strstr(sw_last_error(), "float"),
             "hf holds float weights: %s", sw_last_error());
    o.format = "onnx";
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG, "unknown format");
    o.format = "gguf";
    o.n_layers = 43;
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG && strstr(sw_last_error(), "1..42"),
             "--layers beyond the shape: %s", sw_last_error());
    o.n_layers = 1;
    o.n_vocab = 100;
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG, "--vocab too small");
    SW_CHECK(count_entries(dir) == 0, "nothing written by refused options");

    snprintf(other, sizeof other, "%s/no/such/folder/m.gguf", dir);
    SW_CHECK(synth_small(other, "bf16", "gguf", false) == SW_ERR_IO &&
             strstr(sw_last_error(), "does not exist"), "missing folder: %s", sw_last_error());
    SW_CHECK_OK(synth_small(path, "q8_0", "gguf", false));
    SW_CHECK(synth_small(path, "q8_0", "gguf", false) == SW_ERR_IO &&
             strstr(sw_last_error(), "--force"), "exists: %s", sw_last_error());
    SW_CHECK_OK(synth_small(path, "f16", "gguf", true));
    snprintf(other, sizeof other, "%s/hf", dir);
    SW_CHECK(synth_small(path, "bf16", "hf", true) == SW_ERR_IO, "hf over a file");
    SW_CHECK_OK(synth_small(other, "bf16", "hf", false));
    SW_CHECK_OK(synth_small(other, "f16", "hf", true)); /* replaces its own files */
    SW_CHECK(synth_small(dir, "bf16", "gguf", true) == SW_ERR_IO, "gguf onto a folder");
    SW_CHECK(count_entries(dir) == 2, "only m.gguf and hf/ remain (%d)", count_entries(dir));
    snprintf(other, sizeof other, "%s/hf/notes.txt", dir);
    FILE *fp = fopen(other, "w");
    if (fp)
        fclose(fp);
    snprintf(other, sizeof other, "%s/hf", dir);
    SW_CHECK(synth_small(other, "bf16", "hf", true) == SW_ERR_IO &&
             strstr(sw_last_error(), "notes.txt"), "foreign file protects the folder");

    /* cancellation mid-way removes the temporary output */
    for (int hf = 0; hf < 2; hf++) {
        snprintf(other, sizeof other, "%s/cancelled%s", dir, hf ? "" : ".gguf");
        o = synth_options_default();
        o.shape = "gemma2-2b";
        o.type = "bf16";
        o.format = hf ? "hf" : "gguf";
        o.path = other;
        o.n_layers = 1;
        o.n_vocab = 512;
        o.chunk_bytes = 1 << 16;
        o.progress = cancel_after_first;
        o.cancel = &cancel_now;
        cancel_now = 0;
        SW_CHECK(synth_write(&o, &r) == SW_ERR_IO && strstr(sw_last_error(), "interrupted"),
                 "cancel: %s", sw_last_error());
        SW_CHECK(count_entries(dir) == 2, "cancelled %s output removed (%d entries)",
                 o.format, count_entries(dir));
    }
}

/* ---- Gemma 4's tensor lists ------------------------------------------------------ */

static const synth_tensor *find_t(const synth_model *m, const char *name) {
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].gguf_name, name))
            return &m->t[i];
    return NULL;
}

/* t exists with shape [ne0, ne1, ne2], stored as `type`. */
static void want_t(const synth_model *m, const char *name, uint64_t ne0, uint64_t ne1,
                   uint64_t ne2, uint32_t type) {
    const synth_tensor *t = find_t(m, name);
    SW_CHECK(t != NULL, "%s: %s present", m->name, name);
    if (t == NULL)
        return;
    SW_CHECK(t->ne0 == ne0 && t->ne1 == ne1 && t->ne2 == ne2 &&
             t->n_dims == (ne2 > 1 ? 3u : ne1 > 1 ? 2u : 1u) && t->gguf_type == type,
             "%s: %s [%llu, %llu, %llu] %u-D %s, want [%llu, %llu, %llu] %s", m->name, name,
             (unsigned long long)t->ne0, (unsigned long long)t->ne1,
             (unsigned long long)t->ne2, t->n_dims, type_name(t->gguf_type),
             (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2,
             type_name(type));
}

static void test_gemma4_lists(void) {
    synth_model m;
    const uint32_t Q4 = SW_TYPE_Q4_K, F32 = SW_TYPE_F32;
    /* E2B (gemma4-facts): 35 layers, the last 20 read earlier caches and are
     * double-wide; full layers every 5th with 512-wide heads; PLE 256 */
    SW_CHECK_OK(synth_model_build("gemma4-e2b", 0, 0, Q4, &m));
    want_t(&m, "per_layer_token_embd.weight", 35 * 256, 262144, 1, Q4);
    want_t(&m, "per_layer_model_proj.weight", 1536, 35 * 256, 1, Q4);
    want_t(&m, "per_layer_proj_norm.weight", 256, 1, 1, F32);
    want_t(&m, "rope_freqs.weight", 256, 1, 1, F32);
    want_t(&m, "blk.0.attn_k.weight", 1536, 256, 1, Q4);
    want_t(&m, "blk.4.attn_q.weight", 1536, 8 * 512, 1, Q4);
    want_t(&m, "blk.4.attn_v.weight", 1536, 512, 1, Q4);
    want_t(&m, "blk.14.ffn_gate.weight", 1536, 6144, 1, Q4);
    want_t(&m, "blk.15.ffn_gate.weight", 1536, 12288, 1, Q4);
    want_t(&m, "blk.15.inp_gate.weight", 1536, 256, 1, Q4);
    want_t(&m, "blk.15.proj.weight", 256, 1536, 1, Q4);
    want_t(&m, "blk.15.layer_output_scale.weight", 1, 1, 1, F32);
    SW_CHECK(find_t(&m, "blk.15.attn_k.weight") == NULL && find_t(&m, "blk.34.attn_v.weight") ==
             NULL && find_t(&m, "blk.20.attn_k_norm.weight") == NULL,
             "KV-shared layers have no keys or values");
    SW_CHECK(find_t(&m, "blk.0.ffn_gate_inp.weight") == NULL, "E2B has no experts");
    const synth_tensor *r = find_t(&m, "rope_freqs.weight");
    SW_CHECK(r != NULL && r->kind == SYNTH_ROPE && r->n_ones == 64, "RoPE turns 64 of 256 pairs");
    float v[256] = {0};
    if (r != NULL)
        synth_fill(1, r, 0, 256, v);
    SW_CHECK(v[63] == 1.0f && v[64] == 1e30f && v[255] == 1e30f, "rope_freqs values");
    const synth_tensor *n = find_t(&m, "blk.3.attn_norm.weight");
    if (n != NULL)
        synth_fill(1, n, 0, 256, v);
    SW_CHECK(n != NULL && n->kind == SYNTH_SCALE && v[0] >= 0.89f && v[0] <= 1.11f &&
             v[0] != v[1] && half_bf16_to_f32(half_f32_to_bf16(v[0])) == v[0],
             "Gemma 4 norms are multipliers near 1, exact in bf16: %g", (double)v[0]);
    synth_model_free(&m);

    /* 26B-A4B: 128 experts of 704 and a dense MLP of 2112 (neither a
     * multiple of 256: Q8_0 under q4_k), keys as values on full layers */
    SW_CHECK_OK(synth_model_build("gemma4-26b-a4b", 0, 0, Q4, &m));
    want_t(&m, "blk.0.ffn_gate_up_exps.weight", 2816, 2 * 704, 128, Q4);
    want_t(&m, "blk.0.ffn_down_exps.weight", 704, 2816, 128, SW_TYPE_Q8_0);
    want_t(&m, "blk.0.ffn_gate_inp.weight", 2816, 128, 1, Q4);
    want_t(&m, "blk.0.ffn_gate_inp.scale", 2816, 1, 1, F32);
    want_t(&m, "blk.0.ffn_down_exps.scale", 128, 1, 1, F32);
    want_t(&m, "blk.0.pre_ffw_norm_2.weight", 2816, 1, 1, F32);
    want_t(&m, "blk.5.attn_k.weight", 2816, 2 * 512, 1, Q4);
    SW_CHECK(find_t(&m, "blk.5.attn_v.weight") == NULL && find_t(&m, "blk.4.attn_v.weight"),
             "full layers take values from their keys");
    SW_CHECK(find_t(&m, "per_layer_token_embd.weight") == NULL, "26B has no PLE");
    want_t(&m, "blk.0.ffn_down.weight", 2112, 2816, 1, SW_TYPE_Q8_0);
    SW_CHECK(m.n_fallback == 2 * 30 && strstr(m.fallback_note, "2112") != NULL,
             "the fallbacks are reported: %u, %s", m.n_fallback, m.fallback_note);
    synth_model_free(&m);

    /* --layers keeps the layers' own shapes; the maxima follow them */
    SW_CHECK_OK(synth_model_build("gemma4-e2b", 4, 1024, Q4, &m));
    SW_CHECK(m.c.n_layer == 4 && m.c.n_ff == 6144 && find_t(&m, "rope_freqs.weight") == NULL,
             "4 sliding layers: n_ff %u, no rope_freqs", m.c.n_ff);
    synth_model_free(&m);
}

/* Gemma 4 assistants: 4 KV-shared layers at the target's head shapes (no
 * keys, values or k_norm), projections to and from the target's width,
 * and a centroid head for the small ones whose cluster count divides the
 * vocabulary. */
static void test_assistant_lists(void) {
    synth_model m;
    const uint32_t B = SW_TYPE_BF16, F32 = SW_TYPE_F32;
    SW_CHECK(synth_is_assistant("gemma4-31b-assistant") && synth_is_assistant("X-ASSISTANT") &&
             !synth_is_assistant("gemma4-31b") && !synth_is_assistant("-assistant") &&
             !synth_is_assistant(NULL), "assistant names");
    SW_CHECK_OK(synth_assistant_build("gemma4-31b-assistant", 0, B, &m));
    SW_CHECK(m.c.assistant && m.c.n_layer == 4 && m.n_layer_full == 4 &&
             m.c.backbone_embd == 5376 && m.c.n_centroid == 0 && m.c.n_vocab == 262144 &&
             !strcmp(m.name, "gemma4-31b-assistant"), "31B assistant config");
    want_t(&m, "token_embd.weight", 1024, 262144, 1, B);
    want_t(&m, "blk.0.attn_q.weight", 1024, 32 * 256, 1, B);
    want_t(&m, "blk.3.attn_q.weight", 1024, 32 * 512, 1, B);
    want_t(&m, "blk.3.attn_output.weight", 32 * 512, 1024, 1, B);
    want_t(&m, "blk.3.attn_q_norm.weight", 512, 1, 1, F32);
    want_t(&m, "blk.2.ffn_down.weight", 8192, 1024, 1, B);
    want_t(&m, "blk.1.layer_output_scale.weight", 1, 1, 1, F32);
    want_t(&m, "mtp.pre_proj.weight", 2 * 5376, 1024, 1, B);
    want_t(&m, "mtp.post_proj.weight", 1024, 5376, 1, B);
    SW_CHECK(find_t(&m, "blk.0.attn_k.weight") == NULL && find_t(&m, "blk.3.attn_v.weight") ==
             NULL && find_t(&m, "blk.1.attn_k_norm.weight") == NULL &&
             find_t(&m, "mtp.centroids.weight") == NULL && find_t(&m, "rope_freqs.weight") ==
             NULL, "no keys, values or centroids");
    SW_CHECK(model_layer_n_head_kv(&m.c, 0) == 16 && model_layer_n_head_kv(&m.c, 3) == 4 &&
             model_layer_head_dim(&m.c, 3) == 512 && !model_layer_owns_kv(&m.c, 3),
             "the target's KV heads per layer type");
    uint64_t n_params = 0;
    for (size_t i = 0; i < m.n; i++)
        n_params += synth_is_param(&m.t[i]) ? m.t[i].ne0 * synth_rows(&m.t[i]) : 0;
    SW_CHECK(n_params == 469518596ull, "31B assistant: %llu parameters (~470M on its card)",
             (unsigned long long)n_params);
    synth_model_free(&m);

    static const struct { uint32_t vocab, centroids, top_k; } heads[] = {
        {0, 2048, 32}, {512, 32, 16}, {1000, 8, 4}, {513, 1, 1}, {4096, 256, 32}};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        SW_CHECK_OK(synth_assistant_build("gemma4-e2b-assistant", heads[i].vocab, B, &m));
        const synth_tensor *o = find_t(&m, "mtp.token_order");
        SW_CHECK(m.c.n_centroid == heads[i].centroids && m.c.centroid_top_k == heads[i].top_k &&
                 m.c.n_vocab % m.c.n_centroid == 0 && o != NULL && o->kind == SYNTH_INDEX &&
                 o->ne0 == m.c.n_vocab && !synth_is_param(o),
                 "--vocab %u: %u centroids, top %u", heads[i].vocab, m.c.n_centroid,
                 m.c.centroid_top_k);
        if (heads[i].centroids > 1) /* want_t takes one row for a vector */
            want_t(&m, "mtp.centroids.weight", 256, heads[i].centroids, 1, B);
        synth_model_free(&m);
    }
    SW_CHECK(synth_assistant_build("gemma3-1b-assistant", 0, B, &m) == SW_ERR_ARG &&
             strstr(sw_last_error(), "gemma4-e4b-assistant"), "unknown assistant: %s",
             sw_last_error());
    SW_CHECK(synth_assistant_build("gemma4-e2b-assistant", 100, B, &m) == SW_ERR_ARG,
             "--vocab too small");
}

/* An assistant written as a folder: no tokenizer, its token ordering a
 * permutation that the seed picks; GGUF and --layers refused. */
static void test_assistant_write(const char *dir) {
    char path[512], file[600];
    synth_options o = synth_options_default();
    synth_result r;
    snprintf(path, sizeof path, "%s/asst", dir);
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    o.path = path;
    o.type = "bf16";
    o.shape = "gemma4-e4b-assistant";
    o.n_vocab = 512;
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG && strstr(sw_last_error(), "--format hf"),
             "gguf assistant refused: %s", sw_last_error());
    o.format = "hf";
    o.n_layers = 4;
    SW_CHECK(synth_write(&o, &r) == SW_ERR_ARG && strstr(sw_last_error(), "--layers"),
             "--layers refused: %s", sw_last_error());
    o.n_layers = 0;
    int64_t first[512] = {0};
    for (uint64_t seed = 1; seed <= 2; seed++) {
        o.seed = seed;
        o.force = seed > 1;
        SW_CHECK_OK(synth_write(&o, &r));
        SW_CHECK(r.n_files == 2 && r.n_layer == 4 && r.n_vocab == 512, "2 files, 4 layers");
        st_file *f = NULL;
        SW_CHECK_OK(st_open(file, &f));
        const st_tensor *t = f ? st_find(f, "masked_embedding.token_ordering") : NULL;
        bool seen[512] = {false}, perm = t && t->dtype == ST_I64 && t->n_elements == 512;
        int64_t v[512];
        if (perm)
            memcpy(v, t->data, sizeof v); /* little-endian hosts */
        for (int i = 0; perm && i < 512; i++) {
            perm = v[i] >= 0 && v[i] < 512 && !seen[v[i]];
            if (perm)
                seen[v[i]] = true;
        }
        SW_CHECK(perm, "seed %llu: the token ordering is a permutation",
                 (unsigned long long)seed);
        if (seed == 1 && perm)
            memcpy(first, v, sizeof v);
        if (seed == 2)
            SW_CHECK(perm && memcmp(first, v, sizeof v) != 0, "the seed picks the ordering");
        st_close(f);
    }
    snprintf(file, sizeof file, "%s/tokenizer.json", path);
    SW_CHECK(access(file, F_OK) != 0, "an assistant has no tokenizer of its own");
}

/* --type q4_k_m: llama.cpp's Q4_K_M choices. The default model is a Q4_K_M
 * file that llama.cpp's quantizer wrote (gemma-3-270m-q4_k_m.gguf): every
 * matrix our mix stores as Q4_K or Q6_K has that type there too (its
 * other matrices have rows of 640, which neither takes). Then E2B, where
 * every matrix has rows of a multiple of 256, and 26B's fallbacks. */
static void test_q4_k_m_mix(void) {
    const uint32_t Q4 = SW_TYPE_Q4_K, Q6 = SW_TYPE_Q6_K;
    synth_model m;
    const char *path = sw_test_default_model();
    gguf_file *g = NULL;
    SW_CHECK(path[0] != '\0' && gguf_open(path, &g) == SW_OK,
             "default model not found at '%s': run `spillway fetch` first", path);
    SW_CHECK_OK(synth_model_build("gemma3-270m", 0, 0, Q4, &m));
    synth_model_mix_q4_k_m(&m);
    int n_same = 0, n_q6 = 0;
    for (size_t i = 0; g != NULL && i < m.n; i++) {
        const synth_tensor *t = &m.t[i];
        if (t->gguf_type != Q4 && t->gguf_type != Q6)
            continue;
        const gguf_tensor *ref = gguf_find_tensor(g, t->gguf_name);
        SW_CHECK(ref != NULL && ref->type == t->gguf_type, "%s: ours %s, llama.cpp's %s",
                 t->gguf_name, type_name(t->gguf_type), ref ? type_name(ref->type) : "none");
        n_same += ref != NULL && ref->type == t->gguf_type;
        n_q6 += t->gguf_type == Q6;
    }
    SW_CHECK(g == NULL || (n_same == 36 && n_q6 == 9), "270M: %d of 36 matrices as llama.cpp's, "
             "%d of 9 in Q6_K", n_same, n_q6);
    gguf_close(g);
    synth_model_free(&m);

    /* E2B, 35 layers: more bits for layers < 4, >= 30 and 6, 9, .., 27;
     * attn_v on the 15 layers that own a cache: the 1st, 4th, 7th, 10th,
     * 13th, 14th and 15th of them */
    SW_CHECK_OK(synth_model_build("gemma4-e2b", 0, 0, Q4, &m));
    synth_model_mix_q4_k_m(&m);
    want_t(&m, "token_embd.weight", 1536, 262144, 1, Q6);
    want_t(&m, "per_layer_token_embd.weight", 35 * 256, 262144, 1, Q4);
    want_t(&m, "blk.0.ffn_down.weight", 6144, 1536, 1, Q6);
    want_t(&m, "blk.3.ffn_down.weight", 6144, 1536, 1, Q6);
    want_t(&m, "blk.4.ffn_down.weight", 6144, 1536, 1, Q4);
    want_t(&m, "blk.6.ffn_down.weight", 6144, 1536, 1, Q6);
    want_t(&m, "blk.29.ffn_down.weight", 12288, 1536, 1, Q4);
    want_t(&m, "blk.30.ffn_down.weight", 12288, 1536, 1, Q6);
    want_t(&m, "blk.0.attn_v.weight", 1536, 256, 1, Q6);
    want_t(&m, "blk.1.attn_v.weight", 1536, 256, 1, Q4);
    want_t(&m, "blk.3.attn_v.weight", 1536, 256, 1, Q6);
    want_t(&m, "blk.14.attn_v.weight", 1536, 512, 1, Q6);
    want_t(&m, "blk.0.attn_q.weight", 1536, 8 * 256, 1, Q4);
    SW_CHECK(m.q4_k_m, "the mix is recorded (general.file_type 15)");
    synth_model_free(&m);

    /* 26B: the experts' down projections fell back to Q8_0 and stay */
    SW_CHECK_OK(synth_model_build("gemma4-26b-a4b", 2, 1024, Q4, &m));
    synth_model_mix_q4_k_m(&m);
    want_t(&m, "blk.0.ffn_down_exps.weight", 704, 2816, 128, SW_TYPE_Q8_0);
    want_t(&m, "blk.0.ffn_gate_up_exps.weight", 2816, 2 * 704, 128, Q4);
    synth_model_free(&m);
}

int main(void) {
    test_generator();
    test_gemma4_lists();
    test_assistant_lists();
    test_q4_k_m_mix();
    test_vocab();
    test_gguf_writer();
    test_st_writer();
    test_py_float();
    char dir[] = "/tmp/sw_synth_XXXXXX";
    if (mkdtemp(dir) != NULL) {
        test_errors(dir);
        test_assistant_write(dir);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    } else {
        SW_CHECK(0, "mkdtemp failed");
    }
    return sw_check_finish("test_synth");
}

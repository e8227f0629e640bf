/*
 * test_golden_reader.c — the .swgold reader (tests/golden.c) and the
 * committed golden files under tests/data/golden/.
 *
 * For every committed file: the metadata entries exist with the right types,
 * and each prompt's entries have mutually consistent shapes and values (T
 * agrees across entries, ids and argmax lie in the vocabulary, lse >= the
 * largest logit, hidden states are finite, ...). Then hostile input:
 * hand-built buffers and every kind of truncation or corruption of a real
 * file must give SW_ERR_FORMAT (or parse cleanly), never a crash.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "golden.h"

static const char *const GOLDEN_FILES[] = {
    "golden/gemma1.swgold", "golden/gemma2.swgold", "golden/gemma3.swgold",
    "golden/gemma3-270m-q4km.swgold",
};

/* The entry `name` if it has `dtype` and `n_dims`, else NULL (and a failure). */
static const golden_entry *want(const golden_file *g, const char *file, const char *name,
                                uint32_t dtype, uint32_t n_dims) {
    const golden_entry *e = golden_find(g, name);
    SW_CHECK(e != NULL, "%s: entry '%s' missing", file, name);
    if (!e)
        return NULL;
    SW_CHECK(e->dtype == dtype && e->n_dims == n_dims, "%s: '%s' has dtype %u, %u dims;"
             " want %u, %u", file, name, e->dtype, e->n_dims, dtype, n_dims);
    return e->dtype == dtype && e->n_dims == n_dims ? e : NULL;
}

static int32_t scalar_i32(const golden_file *g, const char *file, const char *name) {
    const golden_entry *e = want(g, file, name, GOLDEN_I32, 0);
    return e ? *(const int32_t *)e->data : -1;
}

static int all_finite(const float *x, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

static int ids_in_range(const int32_t *x, uint64_t n, int32_t n_vocab) {
    for (uint64_t i = 0; i < n; i++)
        if (x[i] < 0 || x[i] >= n_vocab)
            return 0;
    return 1;
}

typedef struct model_dims {
    int32_t n_vocab, n_layer, n_embd, n_greedy;
} model_dims;

/* Full logits [T, n_vocab]: argmax and lse must follow from them. */
static void check_full_logits(const char *file, const char *p, const golden_entry *logits,
                              const int32_t *argmax, const float *lse, uint64_t T,
                              int32_t n_vocab) {
    SW_CHECK(logits->dims[0] == T && logits->dims[1] == (uint64_t)n_vocab,
             "%s: %slogits shape", file, p);
    if (logits->dims[0] != T || logits->dims[1] != (uint64_t)n_vocab)
        return;
    const float *x = logits->data;
    for (uint64_t t = 0; t < T; t++) {
        const float *row = x + t * (uint64_t)n_vocab;
        int32_t best = 0;
        double sum = 0.0;
        for (int32_t v = 1; v < n_vocab; v++)
            if (row[v] > row[best])
                best = v;
        for (int32_t v = 0; v < n_vocab; v++)
            sum += exp((double)row[v] - row[best]);
        double l = row[best] + log(sum);
        SW_CHECK(argmax[t] == best, "%s: %sargmax[%llu] = %d, logits say %d", file, p,
                 (unsigned long long)t, argmax[t], best);
        SW_CHECK(fabs(l - lse[t]) <= 1e-5 * fabs(l) + 1e-6, "%s: %slse[%llu] = %g, logits say %g",
                 file, p, (unsigned long long)t, lse[t], l);
    }
}

/* Top-k [T, K]: sorted descending, first = argmax, all below lse. */
static void check_top_k(const golden_file *g, const char *file, const char *p,
                        const int32_t *argmax, const float *lse, uint64_t T, int32_t n_vocab) {
    char name[64];
    snprintf(name, sizeof name, "%stop_ids", p);
    const golden_entry *ids = want(g, file, name, GOLDEN_I32, 2);
    snprintf(name, sizeof name, "%stop_logits", p);
    const golden_entry *val = want(g, file, name, GOLDEN_F32, 2);
    if (!ids || !val)
        return;
    uint64_t k = ids->dims[1];
    SW_CHECK(ids->dims[0] == T && val->dims[0] == T && val->dims[1] == k && k >= 2,
             "%s: %stop_* shapes", file, p);
    if (ids->dims[0] != T || val->dims[0] != T || val->dims[1] != k)
        return;
    const int32_t *ti = ids->data;
    const float *tv = val->data;
    SW_CHECK(ids_in_range(ti, T * k, n_vocab), "%s: %stop_ids out of range", file, p);
    for (uint64_t t = 0; t < T; t++) {
        SW_CHECK(ti[t * k] == argmax[t], "%s: %stop_ids[%llu][0] != argmax", file, p,
                 (unsigned long long)t);
        SW_CHECK(tv[t * k] <= lse[t], "%s: %slse below max logit at %llu", file, p,
                 (unsigned long long)t);
        for (uint64_t j = 1; j < k; j++)
            SW_CHECK(tv[t * k + j] <= tv[t * k + j - 1], "%s: %stop_logits not sorted", file, p);
    }
}

static void check_hidden(const golden_file *g, const char *file, const char *p, uint64_t T,
                         const model_dims *m) {
    char name[64];
    snprintf(name, sizeof name, "%shidden_pos", p);
    const golden_entry *pos = want(g, file, name, GOLDEN_I32, 1);
    snprintf(name, sizeof name, "%shidden", p);
    const golden_entry *h = want(g, file, name, GOLDEN_F32, 3);
    if (!pos || !h)
        return;
    const int32_t *pp = pos->data;
    uint64_t P = pos->dims[0];
    SW_CHECK(P >= 1 && pp[0] >= 0 && (uint64_t)pp[P - 1] < T, "%s: %shidden_pos range", file, p);
    for (uint64_t i = 1; i < P; i++)
        SW_CHECK(pp[i] > pp[i - 1], "%s: %shidden_pos not increasing", file, p);
    SW_CHECK(h->dims[0] == (uint64_t)m->n_layer + 1 && h->dims[1] == P &&
             h->dims[2] == (uint64_t)m->n_embd, "%s: %shidden shape [%llu,%llu,%llu]", file, p,
             (unsigned long long)h->dims[0], (unsigned long long)h->dims[1],
             (unsigned long long)h->dims[2]);
    SW_CHECK(all_finite(h->data, golden_elements(h)), "%s: %shidden not finite", file, p);
}

static void check_prompt(const golden_file *g, const char *file, int n, const model_dims *m) {
    char p[16], name[64];
    snprintf(p, sizeof p, "p%d.", n);
#define ENTRY(suffix, dtype, n_dims) \
    (snprintf(name, sizeof name, "%s%s", p, suffix), want(g, file, name, dtype, n_dims))
    const golden_entry *ids = ENTRY("ids", GOLDEN_I32, 1);
    const golden_entry *argmax = ENTRY("argmax", GOLDEN_I32, 1);
    const golden_entry *lse = ENTRY("lse", GOLDEN_F32, 1);
    const golden_entry *greedy = ENTRY("greedy", GOLDEN_I32, 1);
    const golden_entry *margin = ENTRY("greedy_margin", GOLDEN_F32, 1);
    if (!ids || !argmax || !lse || !greedy || !margin)
        return;
    uint64_t T = ids->dims[0];
    const int32_t *id = ids->data;
    SW_CHECK(T >= 1 && argmax->dims[0] == T && lse->dims[0] == T, "%s: %s T disagrees", file, p);
    if (T < 1 || argmax->dims[0] != T || lse->dims[0] != T)
        return;
    SW_CHECK(id[0] == 2, "%s: %sids must start with BOS (2)", file, p);
    SW_CHECK(ids_in_range(id, T, m->n_vocab), "%s: %sids out of range", file, p);
    SW_CHECK(ids_in_range(argmax->data, T, m->n_vocab), "%s: %sargmax out of range", file, p);
    SW_CHECK(all_finite(lse->data, T), "%s: %slse not finite", file, p);
    SW_CHECK(greedy->dims[0] == (uint64_t)m->n_greedy && margin->dims[0] == greedy->dims[0],
             "%s: %sgreedy length", file, p);
    SW_CHECK(ids_in_range(greedy->data, greedy->dims[0], m->n_vocab), "%s: %sgreedy ids", file, p);
    for (uint64_t i = 0; i < margin->dims[0]; i++)
        SW_CHECK(((const float *)margin->data)[i] >= 0.0f, "%s: %sgreedy_margin < 0", file, p);
    /* The first greedy token is the argmax after the whole prompt. */
    SW_CHECK(((const int32_t *)greedy->data)[0] == ((const int32_t *)argmax->data)[T - 1] ||
             ((const float *)margin->data)[0] < 1e-4f, "%s: %sgreedy[0] != argmax[T-1]", file, p);
    snprintf(name, sizeof name, "%slogits", p);
    const golden_entry *logits = golden_find(g, name);
    if (logits && want(g, file, name, GOLDEN_F32, 2))
        check_full_logits(file, p, logits, argmax->data, lse->data, T, m->n_vocab);
    else if (!logits)
        check_top_k(g, file, p, argmax->data, lse->data, T, m->n_vocab);
    check_hidden(g, file, p, T, m);
#undef ENTRY
}

static void check_file(const char *rel) {
    static const char *const texts[] = {"generator", "torch_version", "transformers_version",
                                        "gguf_version", "config_json", "model"};
    golden_file *g = NULL;
    SW_CHECK_OK(golden_load(sw_test_data(rel), &g));
    if (!g)
        return;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const golden_entry *e = want(g, rel, texts[i], GOLDEN_TEXT, 1);
        SW_CHECK(e && e->n_bytes > 0 && strlen(e->data) == e->n_bytes,
                 "%s: text '%s' empty or has NUL", rel, texts[i]);
    }
    const golden_entry *cfg = golden_find(g, "config_json");
    SW_CHECK(cfg && ((const char *)cfg->data)[0] == '{', "%s: config_json is not JSON", rel);
    model_dims m = {scalar_i32(g, rel, "n_vocab"), scalar_i32(g, rel, "n_layer"),
                    scalar_i32(g, rel, "n_embd"), scalar_i32(g, rel, "n_greedy")};
    int32_t n_prompts = scalar_i32(g, rel, "n_prompts");
    SW_CHECK(m.n_vocab > 3 && m.n_layer > 0 && m.n_embd > 0 && m.n_greedy > 0 &&
             n_prompts > 0, "%s: bad sizes", rel);
    const golden_entry *scale = want(g, rel, "embd_scale_f32", GOLDEN_F32, 0);
    if (scale && m.n_embd > 0)
        SW_CHECK(*(const float *)scale->data == (float)sqrt((double)m.n_embd),
                 "%s: embd_scale_f32 %.9g != f32 sqrt(%d)", rel, *(const float *)scale->data,
                 m.n_embd);
    for (int n = 0; n < n_prompts && m.n_vocab > 3; n++)
        check_prompt(g, rel, n, &m);
    printf("%s: %zu entries, %d prompts\n", rel, golden_count(g), n_prompts);
    golden_free(g);
}

/* ---- hostile input ------------------------------------------------------- */

typedef struct buf {
    unsigned char b[512];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (n == 0)
        return; /* p may be NULL */
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void put_u32(buf *b, uint32_t v) {
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(b, x, 4);
}
static void put_u64(buf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}
static void put_entry(buf *b, const char *name, uint32_t dtype, uint32_t n_dims,
                      const uint64_t *dims, const void *data, size_t n_data) {
    put_u32(b, (uint32_t)strlen(name));
    put(b, name, strlen(name));
    put_u32(b, dtype);
    put_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        put_u64(b, dims[d]);
    put(b, data, n_data);
}

static sw_status parse(const buf *b) {
    golden_file *g = NULL;
    sw_status st = golden_parse(b->b, b->n, &g);
    SW_CHECK((st == SW_OK) == (g != NULL), "golden_parse: status and result disagree");
    golden_free(g);
    return st;
}

/* A small valid file: odd name lengths (so data is unaligned in the file),
 * a 0-dim scalar, text, and an empty array. */
static buf small_file(void) {
    buf b = {{0}, 0};
    const float f[3] = {1.5f, -2.0f, 3.25f};
    const int32_t i = 42;
    const uint64_t d3 = 3, d5 = 5, d0 = 0;
    put(&b, GOLDEN_MAGIC, 8);
    put_u32(&b, 4);
    put_entry(&b, "abc", GOLDEN_F32, 1, &d3, f, sizeof f);
    put_entry(&b, "n", GOLDEN_I32, 0, NULL, &i, 4);
    put_entry(&b, "hello", GOLDEN_TEXT, 1, &d5, "world", 5);
    put_entry(&b, "empty", GOLDEN_F32, 1, &d0, NULL, 0);
    return b;
}

static void test_small(void) {
    buf b = small_file();
    golden_file *g = NULL;
    SW_CHECK_OK(golden_parse(b.b, b.n, &g));
    if (!g)
        return;
    const golden_entry *e = golden_find(g, "abc");
    SW_CHECK(e && e->n_bytes == 12 && ((uintptr_t)e->data & 7) == 0 &&
             ((const float *)e->data)[2] == 3.25f, "f32 entry");
    e = golden_find(g, "n");
    SW_CHECK(e && e->n_dims == 0 && golden_elements(e) == 1 && *(const int32_t *)e->data == 42,
             "0-dim i32 entry");
    e = golden_find(g, "hello");
    SW_CHECK(e && strcmp(e->data, "world") == 0 && e->n_bytes == 5, "text entry");
    e = golden_find(g, "empty");
    SW_CHECK(e && e->n_bytes == 0 && golden_elements(e) == 0, "empty entry");
    SW_CHECK(golden_find(g, "ab") == NULL && golden_count(g) == 4 && golden_at(g, 4) == NULL,
             "lookup of absent names");
    golden_free(g);

    /* Every truncation fails; so does one extra byte. */
    for (size_t n = 0; n < b.n; n++) {
        buf t = b;
        t.n = n;
        SW_CHECK(parse(&t) == SW_ERR_FORMAT, "truncated to %zu bytes accepted", n);
    }
    buf t = b;
    t.b[t.n++] = 0;
    SW_CHECK(parse(&t) == SW_ERR_FORMAT, "trailing byte accepted");
}

static void test_bad_headers(void) {
    const uint64_t d2[2] = {1, 1}, huge[2] = {UINT64_MAX / 2, 4};
    const float f = 0.0f;
    struct {
        const char *what;
        const char *name;
        uint32_t dtype, n_dims;
        const uint64_t *dims;
    } cases[] = {
        {"dtype 3", "x", 3, 1, d2, },
        {"5 dims", "x", GOLDEN_F32, 5, NULL},
        {"2-dim text", "x", GOLDEN_TEXT, 2, d2},
        {"overflowing dims", "x", GOLDEN_F32, 2, huge},
        {"empty name", "", GOLDEN_F32, 1, d2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf b = {{0}, 0};
        uint64_t dims[5] = {1, 1, 1, 1, 1};
        put(&b, GOLDEN_MAGIC, 8);
        put_u32(&b, 1);
        put_entry(&b, cases[i].name, cases[i].dtype, cases[i].n_dims,
                  cases[i].dims ? cases[i].dims : dims, &f, 4);
        SW_CHECK(parse(&b) == SW_ERR_FORMAT, "%s accepted", cases[i].what);
    }
    buf b = {{0}, 0};
    const uint64_t d1 = 1;
    put(&b, GOLDEN_MAGIC, 8);
    put_u32(&b, 2);
    put_entry(&b, "same", GOLDEN_F32, 1, &d1, &f, 4);
    put_entry(&b, "same", GOLDEN_F32, 1, &d1, &f, 4);
    SW_CHECK(parse(&b) == SW_ERR_FORMAT, "duplicate names accepted");
    b = small_file();
    b.b[7] = 2;
    SW_CHECK(parse(&b) == SW_ERR_FORMAT, "version 2 accepted");
    b = small_file();
    b.b[8] = 0xff, b.b[9] = 0xff, b.b[10] = 0xff, b.b[11] = 0x7f;
    SW_CHECK(parse(&b) == SW_ERR_FORMAT, "huge entry count accepted");
}

/* Truncations and byte flips of a real golden file: never a crash. */
static void test_corrupt_real(void) {
    FILE *f = fopen(sw_test_data("golden/gemma1.swgold"), "rb");
    SW_CHECK(f != NULL, "cannot open gemma1.swgold");
    if (!f)
        return;
    unsigned char *bytes = malloc(1 << 20);
    size_t n = bytes ? fread(bytes, 1, 1 << 20, f) : 0;
    fclose(f);
    SW_CHECK(n > 1024 && n < (1 << 20), "gemma1.swgold size %zu", n);
    golden_file *g = NULL;
    uint32_t rng = 12345;
    for (size_t cut = 0; n > 0 && cut < n; cut += cut < 2048 ? 1 : 997) {
        SW_CHECK(golden_parse(bytes, cut, &g) == SW_ERR_FORMAT && !g, "cut at %zu accepted", cut);
    }
    for (int i = 0; i < 2000 && n > 0; i++) {
        rng = rng * 1103515245u + 12345u;
        size_t at = (rng >> 8) % (i < 1500 ? 2048 : n);
        unsigned char old = bytes[at];
        bytes[at] ^= (unsigned char)(1u << (rng % 8));
        sw_status st = golden_parse(bytes, n, &g);
        SW_CHECK(st == SW_OK || st == SW_ERR_FORMAT, "flip at %zu: status %d", at, st);
        golden_free(g);
        g = NULL;
        bytes[at] = old;
    }
    free(bytes);
}

int main(void) {
    for (size_t i = 0; i < sizeof GOLDEN_FILES / sizeof GOLDEN_FILES[0]; i++)
        check_file(GOLDEN_FILES[i]);
    test_small();
    test_bad_headers();
    test_corrupt_real();
    golden_file *g = NULL;
    SW_CHECK(golden_load("/nonexistent/x.swgold", &g) == SW_ERR_IO && !g, "missing file");
    return sw_check_finish("test_golden_reader");
}

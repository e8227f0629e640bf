/*
 * hlo_gemma.c — Gemma's math as StableHLO (hlo_gemma.h). Everything
 * computes in f32; weights and caches are widened from their stored type.
 * The masks are the cpu attention kernel's: a query at position p of
 * sequence s sees the keys of s at positions max(0, p - window + 1) .. p,
 * held in row s * rows + (ring ? pos % ring : pos).
 */
#include <math.h>
#include <string.h>

#include "backend/pjrt/hlo_gemma.h"
#include "quant/types.h"

uint32_t hg_type_size(uint32_t type) {
    return type == SW_TYPE_F32 ? 4 : type == SW_TYPE_F16 || type == SW_TYPE_BF16 ? 2 : 0;
}

const char *hg_type_elt(uint32_t type) {
    return type == SW_TYPE_F32 ? "f32" : type == SW_TYPE_F16 ? "f16" : "bf16";
}

static int64_t elt_bytes(const char *elt) {
    return !strcmp(elt, "f32") || !strcmp(elt, "i32") ? 4 : 2;
}

int hg_load(hlo *h, int a, const char *elt, int64_t n) {
    int64_t es = elt_bytes(elt), have = hlo_type_of(h, a).dim[0];
    if (have != n * es) {
        int64_t start = 0, limit = n * es;
        a = hlo_slice(h, a, &start, &limit);
    }
    a = hlo_reshape(h, a, hlo_t2("ui8", n, es));
    return hlo_bitcast(h, a, hlo_t1(elt, n));
}

int hg_store(hlo *h, int v) {
    hlo_type t = hlo_type_of(h, v);
    int64_t n = hlo_elems(t), es = elt_bytes(t.elt);
    v = hlo_reshape(h, v, hlo_t1(t.elt, n));
    v = hlo_bitcast(h, v, hlo_t2("ui8", n, es));
    return hlo_reshape(h, v, hlo_t1("ui8", n * es));
}

int hg_weight(hlo *h, int a, uint32_t type, int64_t rows, int64_t cols) {
    int w = hg_load(h, a, hg_type_elt(type), rows * cols);
    w = hlo_reshape(h, w, hlo_t2(hg_type_elt(type), rows, cols));
    return hlo_convert(h, w, "f32");
}

static int bcast_to(hlo *h, int a, hlo_type t, int64_t d0) {
    return hlo_broadcast(h, a, t, &d0, 1);
}

int hg_rmsnorm(hlo *h, int x, int w, float eps) {
    hlo_type t = hlo_type_of(h, x);
    int64_t n = t.dim[1];
    int ss = hlo_reduce(h, hlo_binary(h, "multiply", x, x), 1, "add", 0.0);
    hlo_type rt = hlo_type_of(h, ss);
    int mean = hlo_binary(h, "divide", ss, hlo_const(h, (double)n, rt));
    int inv = hlo_unary(h, "rsqrt", hlo_binary(h, "add", mean, hlo_const(h, eps, rt)));
    int y = hlo_binary(h, "multiply", x, bcast_to(h, inv, t, 0));
    return hlo_binary(h, "multiply", y, bcast_to(h, w, t, 1));
}

int hg_matmul(hlo *h, int x, int w) {
    hlo_type xt = hlo_type_of(h, x), wt = hlo_type_of(h, w);
    return hlo_dot(h, x, w, NULL, NULL, 0, 1, 1, hlo_t2("f32", xt.dim[0], wt.dim[0]));
}

int hg_rope(hlo *h, int x, int pos, uint32_t n_heads, uint32_t head_dim, float base,
            float freq_scale) {
    const int64_t T = hlo_type_of(h, x).dim[0], H = n_heads, half = head_dim / 2;
    float step[512];
    if (half > 512)
        return -1;
    for (int64_t i = 0; i < half; i++)   /* the cpu kernel's angles, in the same f32 steps */
        step[i] = (1.0f / powf(base, (float)(2 * i) / (float)head_dim)) * freq_scale;
    hlo_type th = hlo_t2("f32", T, half), xt = hlo_t3("f32", T, H, half);
    int posf = bcast_to(h, hlo_convert(h, pos, "f32"), th, 0);
    int theta = hlo_binary(h, "multiply", bcast_to(h, hlo_const_f32s(h, step, half), th, 1), posf);
    int64_t d02[2] = {0, 2};
    int c = hlo_broadcast(h, hlo_unary(h, "cosine", theta), xt, d02, 2);
    int s = hlo_broadcast(h, hlo_unary(h, "sine", theta), xt, d02, 2);
    int x3 = hlo_reshape(h, x, hlo_t3("f32", T, H, head_dim));
    int64_t s0[3] = {0, 0, 0}, l0[3] = {T, H, half}, s1[3] = {0, 0, half}, l1[3] = {T, H, 2 * half};
    int a = hlo_slice(h, x3, s0, l0), b = hlo_slice(h, x3, s1, l1);
    int ra = hlo_binary(h, "subtract", hlo_binary(h, "multiply", a, c),
                        hlo_binary(h, "multiply", b, s));
    int rb = hlo_binary(h, "add", hlo_binary(h, "multiply", b, c),
                        hlo_binary(h, "multiply", a, s));
    return hlo_reshape(h, hlo_concat(h, ra, rb, 2), hlo_t2("f32", T, H * head_dim));
}

/* PyTorch's gelu(approximate='tanh'), in the cpu kernel's order. */
int hg_geglu(hlo *h, int gate, int up) {
    hlo_type t = hlo_type_of(h, gate);
    int cube = hlo_binary(h, "multiply", hlo_binary(h, "multiply", gate, gate), gate);
    int inner = hlo_binary(h, "add", gate,
                           hlo_binary(h, "multiply", hlo_const(h, 0.044715f, t), cube));
    inner = hlo_binary(h, "multiply", hlo_const(h, 0.7978845608028654f, t), inner);
    int g = hlo_binary(h, "multiply", hlo_binary(h, "multiply", hlo_const(h, 0.5, t), gate),
                       hlo_binary(h, "add", hlo_const(h, 1.0, t), hlo_unary(h, "tanh", inner)));
    return hlo_binary(h, "multiply", g, up);
}

int hg_softcap(hlo *h, int x, float cap) {
    hlo_type t = hlo_type_of(h, x);
    int c = hlo_const(h, cap, t);
    return hlo_binary(h, "multiply", c, hlo_unary(h, "tanh", hlo_binary(h, "divide", x, c)));
}

int hg_scale(hlo *h, int x, float s) {
    return hlo_binary(h, "multiply", x, hlo_const(h, s, hlo_type_of(h, x)));
}

/* (T, R) i1: may token t see cache row r. */
static int attn_mask(hlo *h, const hg_attn *a, int pos, int seq, int64_t T) {
    const int64_t R = (int64_t)a->n_seq * a->rows;
    hlo_type m = hlo_t2("i32", T, R);
    int r = hlo_iota(h, m, 1);
    int rows = hlo_const(h, a->rows, m);
    int row_seq = hlo_binary(h, "divide", r, rows), j = hlo_binary(h, "remainder", r, rows);
    int p = bcast_to(h, pos, m, 0), s = bcast_to(h, seq, m, 0);
    int ok = hlo_compare(h, row_seq, s, "EQ", "SIGNED");
    int dist;   /* p minus the position row r holds for this query */
    if (a->ring > 0) {
        int ring = hlo_const(h, a->ring, m);
        int d = hlo_binary(h, "remainder", hlo_binary(h, "subtract", p, j), ring);
        dist = hlo_binary(h, "remainder", hlo_binary(h, "add", d, ring), ring);
        int kpos = hlo_binary(h, "subtract", p, dist);
        ok = hlo_binary(h, "and", ok, hlo_compare(h, kpos, hlo_const(h, 0, m), "GE", "SIGNED"));
    } else {
        dist = hlo_binary(h, "subtract", p, j);
        ok = hlo_binary(h, "and", ok, hlo_compare(h, dist, hlo_const(h, 0, m), "GE", "SIGNED"));
    }
    if (a->window > 0)
        ok = hlo_binary(h, "and", ok,
                        hlo_compare(h, dist, hlo_const(h, a->window, m), "LT", "SIGNED"));
    return hlo_binary(h, "and", ok,
                      hlo_compare(h, p, hlo_const(h, 0, m), "GE", "SIGNED"));
}

int hg_attention(hlo *h, const hg_attn *a, int q, int k, int v, int pos, int seq) {
    const int64_t T = hlo_type_of(h, q).dim[0], R = (int64_t)a->n_seq * a->rows;
    const int64_t KV = a->n_head_kv, G = a->n_head / a->n_head_kv, hd = a->head_dim;
    int q4 = hlo_reshape(h, q, hlo_t4("f32", T, KV, G, hd));
    int k3 = hlo_reshape(h, hlo_convert(h, k, "f32"), hlo_t3("f32", R, KV, hd));
    int v3 = hlo_reshape(h, hlo_convert(h, v, "f32"), hlo_t3("f32", R, KV, hd));
    int64_t lb[1] = {1}, rb[1] = {1};
    hlo_type st = hlo_t4("f32", KV, T, G, R);
    int s = hlo_dot(h, q4, k3, lb, rb, 1, 3, 2, st);           /* (KV, T, G, R) */
    if (a->softcap > 0)
        s = hg_softcap(h, s, a->softcap);
    int64_t d13[2] = {1, 3};
    int mask = hlo_broadcast(h, attn_mask(h, a, pos, seq, T), hlo_with_elt(st, "i1"), d13, 2);
    s = hlo_select(h, mask, s, hlo_const(h, -INFINITY, st));
    int64_t d012[3] = {0, 1, 2};
    /* A query that sees no key (none of its sequence is cached) gets
     * zeros, as on the cpu backend, not NaN: its max is taken as 0 and
     * its sum as 1. */
    int mx = hlo_reduce(h, s, 3, "maximum", -INFINITY);
    hlo_type mt = hlo_type_of(h, mx);
    int none = hlo_compare(h, mx, hlo_const(h, -INFINITY, mt), "EQ", "FLOAT");
    mx = hlo_broadcast(h, hlo_select(h, none, hlo_const(h, 0.0, mt), mx), st, d012, 3);
    int e = hlo_unary(h, "exponential", hlo_binary(h, "subtract", s, mx));
    int sum = hlo_reduce(h, e, 3, "add", 0.0);
    int zero = hlo_compare(h, sum, hlo_const(h, 0.0, mt), "EQ", "FLOAT");
    sum = hlo_broadcast(h, hlo_select(h, zero, hlo_const(h, 1.0, mt), sum), st, d012, 3);
    int pr = hlo_binary(h, "divide", e, sum);
    int64_t lb2[1] = {0}, rb2[1] = {1};
    int o = hlo_dot(h, pr, v3, lb2, rb2, 1, 3, 0, hlo_t4("f32", KV, T, G, hd));
    int64_t perm[4] = {1, 0, 2, 3};
    o = hlo_transpose(h, o, perm);                               /* (T, KV, G, hd) */
    return hlo_reshape(h, o, hlo_t2("f32", T, a->n_head * hd));
}

int hg_cache_put(hlo *h, int cache, int x, int pos, int seq, uint32_t rows, uint32_t ring) {
    hlo_type ct = hlo_type_of(h, cache), pt = hlo_type_of(h, pos);
    int p = ring > 0 ? hlo_binary(h, "remainder", pos, hlo_const(h, ring, pt)) : pos;
    int row = hlo_binary(h, "add", hlo_binary(h, "multiply", seq, hlo_const(h, rows, pt)), p);
    /* A padding token (pos < 0) writes nowhere: its row index is past the
     * cache (rows + t, distinct), which scatter skips. */
    int past = hlo_binary(h, "add", hlo_iota(h, pt, 0), hlo_const(h, (double)ct.dim[0], pt));
    int valid = hlo_compare(h, pos, hlo_const(h, 0, pt), "GE", "SIGNED");
    row = hlo_select(h, valid, row, past);
    return hlo_put_rows(h, cache, row, hlo_convert(h, x, ct.elt));
}

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
    return w < 0 ? y : hlo_binary(h, "multiply", y, bcast_to(h, w, t, 1));
}

int hg_matmul(hlo *h, int x, int w) {
    hlo_type xt = hlo_type_of(h, x), wt = hlo_type_of(h, w);
    return hlo_dot(h, x, w, NULL, NULL, 0, 1, 1, hlo_t2("f32", xt.dim[0], wt.dim[0]));
}

int hg_rope(hlo *h, int x, int pos, uint32_t n_heads, uint32_t head_dim, float base,
            float freq_scale, uint32_t n_pairs) {
    const int64_t T = hlo_type_of(h, x).dim[0], H = n_heads, half = head_dim / 2;
    const int64_t turned = n_pairs == 0 || n_pairs > half ? half : n_pairs;
    float step[512];
    if (half > 512)
        return -1;
    /* the cpu kernel's angles, in the same f32 steps; a pair left alone
     * turns by 0 (cos 1, sin 0: its values unchanged, bit for bit) */
    for (int64_t i = 0; i < half; i++)
        step[i] = i < turned ? (1.0f / powf(base, (float)(2 * i) / (float)head_dim)) * freq_scale
                             : 0.0f;
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

/* ---- Gemma 4's experts ------------------------------------------------------ */

/* (T, n) column j of a (T, n) value as (T). */
static int column(hlo *h, int a, int64_t j) {
    hlo_type t = hlo_type_of(h, a);
    int64_t start[2] = {0, j}, limit[2] = {t.dim[0], j + 1};
    return hlo_reshape(h, hlo_slice(h, a, start, limit), hlo_t1(t.elt, t.dim[0]));
}

/* (T) values stacked into (T, k). */
static int stack_columns(hlo *h, const int *cols, uint32_t k) {
    hlo_type t = hlo_type_of(h, cols[0]);
    int acc = hlo_reshape(h, cols[0], hlo_t2(t.elt, t.dim[0], 1));
    for (uint32_t j = 1; j < k; j++)
        acc = hlo_concat(h, acc, hlo_reshape(h, cols[j], hlo_t2(t.elt, t.dim[0], 1)), 1);
    return acc;
}

/* The cpu kernel's selection: the k largest scores in turn, ties to the
 * lower id; the softmax of the chosen ones over all, renormalised in
 * rank order, times the expert's scale. */
void hg_moe_route(hlo *h, int scores, int scale, uint32_t k, int *ids, int *weights) {
    hlo_type st = hlo_type_of(h, scores);
    const int64_t E = st.dim[1];
    hlo_type it = hlo_with_elt(st, "i32");
    int mx = hlo_reduce(h, scores, 1, "maximum", -INFINITY);
    int e = hlo_unary(h, "exponential", hlo_binary(h, "subtract", scores, bcast_to(h, mx, st, 0)));
    int p = hlo_binary(h, "divide", e, bcast_to(h, hlo_reduce(h, e, 1, "add", 0.0), st, 0));
    int iota = hlo_iota(h, it, 1), sc = bcast_to(h, scale, st, 1), cur = scores;
    int id[64], w[64], gain[64];
    for (uint32_t j = 0; j < k && j < 64; j++) {
        int m = bcast_to(h, hlo_reduce(h, cur, 1, "maximum", -INFINITY), st, 0);
        int at_max = hlo_compare(h, cur, m, "EQ", "FLOAT");
        id[j] = hlo_reduce(h, hlo_select(h, at_max, iota, hlo_const(h, (double)E, it)), 1,
                           "minimum", (double)E);
        int hit = hlo_compare(h, iota, bcast_to(h, id[j], it, 0), "EQ", "SIGNED");
        w[j] = hlo_reduce(h, hlo_select(h, hit, p, hlo_const(h, 0.0, st)), 1, "add", 0.0);
        gain[j] = hlo_reduce(h, hlo_select(h, hit, sc, hlo_const(h, 0.0, st)), 1, "add", 0.0);
        cur = hlo_select(h, hit, hlo_const(h, -INFINITY, st), cur);
    }
    int top = w[0];
    for (uint32_t j = 1; j < k; j++)
        top = hlo_binary(h, "add", top, w[j]);
    for (uint32_t j = 0; j < k; j++)
        w[j] = hlo_binary(h, "multiply", hlo_binary(h, "divide", w[j], top), gain[j]);
    *ids = stack_columns(h, id, k);
    *weights = stack_columns(h, w, k);
}

/* E matrices of `per` stored elements each, as (E, per) of their type. */
static int expert_rows(hlo *h, int a, uint32_t type, int64_t E, int64_t per) {
    const char *elt = hg_type_elt(type);
    return hlo_reshape(h, hg_load(h, a, elt, E * per), hlo_t2(elt, E, per));
}

/* Few routed rows (decode): each token's k experts gathered and applied
 * one rank at a time. */
static int experts_gathered(hlo *h, const hg_experts *w, int x, int ids, int weights) {
    const int64_t T = hlo_type_of(h, x).dim[0], D = w->n_embd, F = w->n_ff;
    const int64_t k = hlo_type_of(h, ids).dim[1];
    int gu_all = expert_rows(h, w->gate_up, w->type, w->n_expert, 2 * F * D);
    int dn_all = expert_rows(h, w->down, w->type, w->n_expert, D * F);
    int out = hlo_const(h, 0.0, hlo_t2("f32", T, D));
    int64_t b0[1] = {0};
    for (int64_t j = 0; j < k; j++) {
        int id = column(h, ids, j);
        int gu = hlo_convert(h, hlo_reshape(h, hlo_take_rows(h, gu_all, id),
                                            hlo_t3(hg_type_elt(w->type), T, 2 * F, D)), "f32");
        int y2 = hlo_dot(h, x, gu, b0, b0, 1, 1, 2, hlo_t2("f32", T, 2 * F));
        int64_t s0[2] = {0, 0}, l0[2] = {T, F}, s1[2] = {0, F}, l1[2] = {T, 2 * F};
        int g = hg_geglu(h, hlo_slice(h, y2, s0, l0), hlo_slice(h, y2, s1, l1));
        int dn = hlo_convert(h, hlo_reshape(h, hlo_take_rows(h, dn_all, id),
                                            hlo_t3(hg_type_elt(w->type), T, D, F)), "f32");
        int y = hlo_dot(h, g, dn, b0, b0, 1, 1, 2, hlo_t2("f32", T, D));
        int wt = bcast_to(h, column(h, weights, j), hlo_t2("f32", T, D), 0);
        out = hlo_binary(h, "add", out, hlo_binary(h, "multiply", y, wt));
    }
    return out;
}

/* Many routed rows (prefill): every expert over every token, weighted by
 * the routing (zero for experts not chosen) and summed. */
static int experts_dense(hlo *h, const hg_experts *w, int x, int ids, int weights) {
    const int64_t T = hlo_type_of(h, x).dim[0], D = w->n_embd, F = w->n_ff, E = w->n_expert;
    const int64_t k = hlo_type_of(h, ids).dim[1];
    const char *elt = hg_type_elt(w->type);
    int gu = hlo_convert(h, hlo_reshape(h, expert_rows(h, w->gate_up, w->type, E, 2 * F * D),
                                        hlo_t3(elt, E, 2 * F, D)), "f32");
    int dn = hlo_convert(h, hlo_reshape(h, expert_rows(h, w->down, w->type, E, D * F),
                                        hlo_t3(elt, E, D, F)), "f32");
    int y2 = hlo_dot(h, x, gu, NULL, NULL, 0, 1, 2, hlo_t3("f32", T, E, 2 * F));
    int64_t s0[3] = {0, 0, 0}, l0[3] = {T, E, F}, s1[3] = {0, 0, F}, l1[3] = {T, E, 2 * F};
    int g = hg_geglu(h, hlo_slice(h, y2, s0, l0), hlo_slice(h, y2, s1, l1));   /* (T, E, F) */
    int64_t lb[1] = {1}, rb[1] = {0};
    int y = hlo_dot(h, g, dn, lb, rb, 1, 2, 2, hlo_t3("f32", E, T, D));       /* (E, T, D) */
    /* the routing as a dense (E, T) weight */
    hlo_type et = hlo_t2("f32", E, T), ei = hlo_t2("i32", E, T);
    int iota = hlo_iota(h, ei, 0), dense = hlo_const(h, 0.0, et);
    for (int64_t j = 0; j < k; j++) {
        int hit = hlo_compare(h, iota, bcast_to(h, column(h, ids, j), ei, 1), "EQ", "SIGNED");
        int wj = bcast_to(h, column(h, weights, j), et, 1);
        dense = hlo_binary(h, "add", dense, hlo_select(h, hit, wj, hlo_const(h, 0.0, et)));
    }
    int64_t d01[2] = {0, 1};
    hlo_type yt = hlo_t3("f32", E, T, D);
    return hlo_reduce(h, hlo_binary(h, "multiply", y, hlo_broadcast(h, dense, yt, d01, 2)), 0,
                      "add", 0.0);
}

int hg_moe_experts(hlo *h, const hg_experts *w, int x, int ids, int weights) {
    const int64_t T = hlo_type_of(h, x).dim[0], k = hlo_type_of(h, ids).dim[1];
    return T * k < w->n_expert ? experts_gathered(h, w, x, ids, weights)
                               : experts_dense(h, w, x, ids, weights);
}

/*
 * test_cuda_math.c — the CUDA kernels' per-element math, on the CPU: the
 * headers backend/cuda/{hd,qblock,kmath}.h compiled by the host C compiler
 * (no GPU, no nvcc), against the portable reference. Runs in every build.
 *
 *   - type ids: qblock.h's constants equal quant/types.h's;
 *   - every slot of every weight type (F32, F16, BF16, Q4_0, Q4_1, Q5_0,
 *     Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) gives quant_dequantize()'s
 *     bits at its elements; slots cover a row exactly once; 16 slots from
 *     16w cover exactly elements [128w, 128w + 128) (the GEMM's K tiles);
 *   - f16/bf16 conversions equal quant/half.h's on all 65536 inputs and
 *     on random and edge f32 values (KV append);
 *   - tanh, GeGLU, soft-cap: the cpu backend's bits;
 *   - RoPE pairs: within 1 ulp of cpu_rope (cos/sin rounding only);
 *   - the attention kernel's algorithm (keys dealt to warps, an online
 *     softmax per warp, joined; masks, ring, sequences; the keys cut into
 *     1, 2, 3 or 7 parts joined as flash-decoding does), run here
 *     thread-free, against cpu_attention;
 *     km_attn_range against the definition by enumeration;
 *   - RMSNorm in the kernel's summation order against cpu_rmsnorm;
 *   - Gemma 4's router (ids and weights bit-identical to cpu_moe_route,
 *     ties included) and the experts' ascending-id order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vmath.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/qblock.h"
#include "backend_util.h"
#include "check.h"
#include "quant/dequant.h"
#include "quant/half.h"
#include "quant/types.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(float lo, float hi) { return sw_test_rng_float(&rng, lo, hi); }

#define xmalloc bt_malloc

static void test_type_ids(void) {
    const uint32_t ours[] = {QB_F32, QB_F16, QB_Q4_0, QB_Q4_1, QB_Q5_0, QB_Q5_1, QB_Q8_0,
                             QB_Q2_K, QB_Q3_K, QB_Q4_K, QB_Q5_K, QB_Q6_K, QB_BF16};
    const uint32_t theirs[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_Q4_0, SW_TYPE_Q4_1,
                               SW_TYPE_Q5_0, SW_TYPE_Q5_1, SW_TYPE_Q8_0, SW_TYPE_Q2_K,
                               SW_TYPE_Q3_K, SW_TYPE_Q4_K, SW_TYPE_Q5_K, SW_TYPE_Q6_K,
                               SW_TYPE_BF16};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        uint32_t e, b;
        const type_traits *tr = type_get_traits(theirs[i]);
        qb_geometry(ours[i], &e, &b);
        SW_CHECK(ours[i] == theirs[i], "qblock id %u != types.h id %u", ours[i], theirs[i]);
        SW_CHECK(tr != NULL && (uint64_t)b * tr->block_elems == (uint64_t)e * tr->block_bytes,
                 "%s: qblock geometry %u elements / %u bytes disagrees with types.h",
                 type_name(theirs[i]), e, b);
    }
}

/* Every slot of a 512-element row of `type` against the dequantized row. */
static void test_slots(uint32_t type) {
    enum { N = 512 };
    uint64_t n_bytes = 0;
    uint8_t *row = bt_random_weights(type, N, 1, &n_bytes);
    float ref[N];
    uint8_t seen[N] = {0};
    SW_CHECK_OK(quant_dequantize(type, row, ref, N));
    uint32_t bad = 0, window_bad = 0;
    for (uint64_t g = 0; g < N / 8; g++) {
        float w[8];
        uint64_t e[2];
        qb_row_slot(type, row, g, w, &e[0], &e[1]);
        for (int run = 0; run < 2; run++) {
            if (e[run] % 4 != 0 || e[run] + 4 > N) {
                bad++;
                continue;
            }
            if (e[run] / 128 != g / 16)
                window_bad++;
            for (int i = 0; i < 4; i++) {
                seen[e[run] + i]++;
                if (memcmp(&w[4 * run + i], &ref[e[run] + i], 4) != 0 && bad++ < 3)
                    fprintf(stderr, "  %s slot %llu element %llu: %.9g, dequant %.9g\n",
                            type_name(type), (unsigned long long)g,
                            (unsigned long long)e[run] + i, w[4 * run + i], ref[e[run] + i]);
            }
        }
    }
    for (int i = 0; i < N; i++)
        bad += seen[i] != 1;
    SW_CHECK(bad == 0, "%s: %u slot elements differ from quant_dequantize or are not covered "
             "exactly once", type_name(type), bad);
    SW_CHECK(window_bad == 0, "%s: %u runs leave their 128-element window", type_name(type),
             window_bad);
    free(row);
}

static void test_halves(void) {
    uint32_t bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = hd_f16(h), b = half_f16_to_f32((uint16_t)h);
        bad += memcmp(&a, &b, 4) != 0;
        float c = hd_bf16(h), d = half_bf16_to_f32((uint16_t)h);
        bad += memcmp(&c, &d, 4) != 0;
    }
    SW_CHECK(bad == 0, "f16/bf16 widening: %u of 131072 differ from quant/half.h", bad);
    const float edge[] = {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f,
                          6.1e-5f, -3.4e38f, INFINITY, -INFINITY, NAN};
    bad = 0;
    for (int i = 0; i < 200000 + (int)(sizeof edge / sizeof edge[0]); i++) {
        uint32_t bits = (uint32_t)sw_test_rng_next(&rng);
        float f;
        memcpy(&f, &bits, 4);
        if (i >= 200000)
            f = edge[i - 200000];
        else if (i % 2)
            f = frand(-70000, 70000) * powf(2.0f, (float)(int)(sw_test_rng_next(&rng) % 40) - 30);
        bad += hd_to_f16(f) != half_f32_to_f16(f);
        bad += hd_to_bf16(f) != half_f32_to_bf16(f);
    }
    SW_CHECK(bad == 0, "f32 -> f16/bf16 rounding: %u differ from quant/half.h", bad);
}

static void test_tanh_family(void) {
    enum { N = 20000 };
    float *x = xmalloc(N * sizeof(float)), *u = xmalloc(N * sizeof(float));
    float *ref = xmalloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        x[i] = i < 2000 ? -12.0f + 24.0f * (float)i / 2000 : frand(-30, 30);
        u[i] = frand(-4, 4);
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = -0.0f;
    uint32_t bad = 0;
    for (int i = 0; i < N; i++) {
        float a = km_tanh(x[i]), b = cpu_tanhf(x[i]);
        bad += memcmp(&a, &b, 4) != 0;
    }
    SW_CHECK(bad == 0, "km_tanh: %u of %d differ from cpu_tanhf", bad, N);
    cpu_geglu(x, u, ref, N);
    bad = 0;
    for (int i = 0; i < N; i++) {
        float a = km_geglu(x[i], u[i]);
        bad += memcmp(&a, &ref[i], 4) != 0;
    }
    SW_CHECK(bad == 0, "km_geglu: %u of %d differ from cpu_geglu", bad, N);
    memcpy(ref, x, N * sizeof(float));
    cpu_softcap(ref, N, 30.0f);
    bad = 0;
    for (int i = 0; i < N; i++) {
        float a = km_softcap(x[i], 30.0f);
        bad += memcmp(&a, &ref[i], 4) != 0;
    }
    SW_CHECK(bad == 0, "km_softcap: %u of %d differ from cpu_softcap", bad, N);
    free(ref), free(u), free(x);
}

static float ulp_diff(float a, float b) {
    if (a == b)
        return 0;
    float scale = fmaxf(fabsf(a), fabsf(b));
    return fabsf(a - b) / (nextafterf(scale, INFINITY) - scale);
}

static void test_rope(void) {
    enum { NT = 6, NH = 3, HD = 64 };
    const int32_t pos[NT] = {0, 1, 17, 1000, 8191, 131071};
    const float bases[2] = {10000.0f, 1000000.0f}, scales[2] = {1.0f, 0.125f};
    for (int c = 0; c < 2; c++) {
        float *x = xmalloc(NT * NH * HD * sizeof(float)), *y = xmalloc(NT * NH * HD * 4);
        for (int i = 0; i < NT * NH * HD; i++)
            x[i] = y[i] = frand(-3, 3);
        cpu_rope(x, pos, NT, NH, HD, bases[c], scales[c], 0);
        uint32_t exact = 0;
        double worst = 0;
        for (int t = 0; t < NT; t++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < HD / 2; i++) {
                    float *v = y + (t * NH + h) * HD;
                    km_rope_pair(&v[i], &v[i + HD / 2], km_rope_step(i, HD, bases[c], scales[c]),
                                 pos[t]);
                }
        /* A cos or sin off by one ulp moves a rotated value (|x| < 3 sqrt 2)
         * by at most ~5e-7; the cpu backend's cosf/sinf and our rounded
         * f64 ones agree but for such rare last bits. */
        for (int i = 0; i < NT * NH * HD; i++) {
            worst = fmax(worst, fabs((double)x[i] - y[i]));
            exact += x[i] == y[i];
        }
        SW_CHECK(worst <= 5e-7, "rope (base %g): worst |diff| %.3g from cpu_rope", bases[c],
                 worst);
        printf("  rope base %g scale %g: %u/%d bit-identical to cpu_rope, worst |diff| %.2g\n",
               bases[c], scales[c], exact, NT * NH * HD, worst);
        free(x), free(y);
    }
}

static void test_attn_range(void) {
    uint32_t bad = 0;
    for (int32_t pos = -1; pos < 70; pos++)
        for (uint32_t window = 0; window < 12; window += 3)
            for (uint32_t ring = 0; ring < 40; ring += 13) {
                if (ring && window && ring < window)
                    continue; /* a planning error: the ring must hold the window */
                int64_t lo = 0, n = km_attn_range(pos, window, ring, &lo);
                int64_t want_lo = -1, want_n = 0;
                for (int32_t p = 0; p <= pos; p++) {
                    bool vis = (window == 0 || pos - p < (int32_t)window) &&
                               (ring == 0 || pos - p < (int32_t)ring);
                    if (vis && want_lo < 0)
                        want_lo = p;
                    want_n += vis;
                }
                bad += n != want_n || (n > 0 && lo != want_lo);
            }
    SW_CHECK(bad == 0, "km_attn_range: %u cases differ from the definition", bad);
}

/* One block of ck_attention's kernel for (token t, head h), thread-free:
 * the keys [i0, i1) of the query's range dealt to AT_WARPS_EMU warps in
 * turn, each folding its keys into its own online softmax (the same
 * functions), the warps' results joined; *M, *L and acc (hd values, not
 * divided by L) are the block's. F32 cache. */
enum { AT_WARPS_EMU = 8 };
static void emulate_block(const cpu_attn_args *a, uint32_t t, uint32_t h, int64_t lo,
                          int64_t i0, int64_t i1, float *M, float *L, float *acc) {
    const uint32_t hd = a->head_dim, kvh = h / (a->n_head / a->n_head_kv);
    const float *q = a->q + ((uint64_t)t * a->n_head + h) * hd;
    const uint32_t re = a->n_head_kv * hd;
    float wm[AT_WARPS_EMU], wl[AT_WARPS_EMU], *wo = bt_malloc(AT_WARPS_EMU * hd * sizeof(float));
    for (int w = 0; w < AT_WARPS_EMU; w++) {
        float m = -INFINITY, l = 0, *ow = wo + w * hd;
        for (uint32_t d = 0; d < hd; d++)
            ow[d] = 0;
        for (int64_t i = i0 + w; i < i1; i += AT_WARPS_EMU) {
            const uint64_t base = km_kv_row(a->q_seq[t], (int32_t)(lo + i), a->seq_rows,
                                            a->kv_ring) * re + kvh * hd;
            float s = 0;
            for (uint32_t d = 0; d < hd; d++)
                s += q[d] * ((const float *)a->k)[base + d];
            if (a->softcap != 0)
                s = km_softcap(s, a->softcap);
            const float scale = km_softmax_rescale(&m, s), e = expf(s - m);
            l = l * scale + e;
            for (uint32_t d = 0; d < hd; d++)
                ow[d] = e * ((const float *)a->v)[base + d] + ow[d] * scale;
        }
        wm[w] = m;
        wl[w] = l;
    }
    float f[AT_WARPS_EMU];
    *M = -INFINITY, *L = 0;
    for (int w = 0; w < AT_WARPS_EMU; w++)
        *M = fmaxf(*M, wm[w]);
    for (int w = 0; w < AT_WARPS_EMU; w++) {
        f[w] = wm[w] == -INFINITY ? 0 : expf(wm[w] - *M);
        *L += wl[w] * f[w];
    }
    for (uint32_t d = 0; d < hd; d++) {
        acc[d] = 0;
        for (int w = 0; w < AT_WARPS_EMU; w++)
            acc[d] += wo[w * hd + d] * f[w];
    }
    free(wo);
}

/* ck_attention for (t, h) with the keys cut into n_parts (flash-decoding:
 * km_attn_split's parts, one block each, joined by km_softmax_join as
 * k_attention_join does); 1: the single block writing out itself. */
static void emulate_attention(const cpu_attn_args *a, uint32_t n_seq, uint32_t t, uint32_t h,
                              uint32_t n_parts, float *o) {
    enum { MAX_PARTS = 8 };
    const uint32_t hd = a->head_dim;
    int64_t lo = 0, n = 0;
    if (km_kv_valid(a->q_seq[t], a->q_pos[t], n_seq, a->seq_rows, a->kv_ring))
        n = km_attn_range(a->q_pos[t], a->window, a->kv_ring, &lo);
    float pm[MAX_PARTS], pl[MAX_PARTS], f[MAX_PARTS];
    float *po = bt_malloc((size_t)MAX_PARTS * hd * sizeof(float));
    for (uint32_t z = 0; z < n_parts; z++) {
        int64_t i0, i1;
        km_attn_split(n, n_parts, z, AT_WARPS_EMU, &i0, &i1);
        emulate_block(a, t, h, lo, i0, i1, &pm[z], &pl[z], po + z * hd);
    }
    if (n_parts == 1) {
        for (uint32_t d = 0; d < hd; d++)
            o[d] = n > 0 ? po[d] / pl[0] : 0;
    } else {
        const float L = km_softmax_join(pm, pl, n_parts, f);
        for (uint32_t d = 0; d < hd; d++) {
            float acc = 0;
            for (uint32_t z = 0; z < n_parts; z++)
                acc = hd_add(acc, hd_mul(po[z * hd + d], f[z]));
            o[d] = L > 0 ? hd_div(acc, L) : 0;
        }
    }
    free(po);
}

static void test_attention(uint32_t window, uint32_t ring, float softcap) {
    enum { NT = 5, NH = 4, NKV = 2, HD = 32, ROWS = 400, NSEQ = 2 };
    const int32_t pos[NT] = {0, 5, 129, 300, 399}, seq[NT] = {0, 1, 0, 1, 1};
    const uint32_t re = NKV * HD, rows = ring ? ring : ROWS;
    const size_t cache_n = (size_t)NSEQ * rows * re;
    float *K = xmalloc(cache_n * 4), *V = xmalloc(cache_n * 4), *q = xmalloc(NT * NH * HD * 4);
    float *want = xmalloc(NT * NH * HD * 4), *got = xmalloc(NT * NH * HD * 4);
    float *scratch = xmalloc(ROWS * sizeof(float));
    for (size_t i = 0; i < cache_n; i++)
        K[i] = frand(-1, 1), V[i] = frand(-1, 1);
    for (int i = 0; i < NT * NH * HD; i++)
        q[i] = frand(-1, 1);
    cpu_attn_args a = {.q = q, .k = K, .v = V, .kv_type = SW_TYPE_F32, .out = want,
                       .q_pos = pos, .q_seq = seq, .seq_rows = rows, .n_tokens = NT,
                       .n_head = NH, .n_head_kv = NKV, .head_dim = HD, .kv_ring = ring,
                       .window = window, .softcap = softcap, .scratch = scratch};
    cpu_attention(NULL, &a);
    static const uint32_t parts[] = {1, 2, 3, 7};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
        for (uint32_t t = 0; t < NT; t++)
            for (uint32_t h = 0; h < NH; h++)
                emulate_attention(&a, NSEQ, t, h, parts[k], got + ((uint64_t)t * NH + h) * HD);
        double worst = 0;
        for (int i = 0; i < NT * NH * HD; i++)
            worst = fmax(worst, fabs((double)want[i] - got[i]));
        SW_CHECK(worst < 2e-5, "attention (window %u, ring %u, softcap %g, keys in %u parts): "
                 "worst |diff| %.3g", window, ring, softcap, parts[k], worst);
    }
    free(K), free(V), free(q), free(want), free(got), free(scratch);
}

/* RMSNorm summed as k_rmsnorm does: 256 strided partials in f64, a
 * butterfly within each warp of 32, then the 8 warp sums in order. */
static void test_rmsnorm(void) {
    enum { N = 2304, R = 64, T = 256 };
    float *x = xmalloc(N * R * 4), *w = xmalloc(N * 4), *ref = xmalloc(N * R * 4);
    for (int i = 0; i < N * R; i++)
        x[i] = frand(-40, 40);
    for (int i = 0; i < N; i++)
        w[i] = frand(0.2f, 3);
    cpu_rmsnorm(x, w, ref, N, R, 1e-6f);
    uint32_t exact = 0;
    float worst = 0;
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * N;
        double part[T], total = 0;
        for (int t = 0; t < T; t++) {
            part[t] = 0;
            for (int i = t; i < N; i += T)
                part[t] += (double)xr[i] * (double)xr[i];
        }
        for (int wp = 0; wp < T / 32; wp++) {
            double *p = part + 32 * wp, next[32];
            for (int o = 16; o > 0; o >>= 1) {
                for (int l = 0; l < 32; l++)
                    next[l] = p[l] + p[l ^ o];
                memcpy(p, next, sizeof next);
            }
            total += p[0];
        }
        float mean = (float)(total / (double)N), inv = 1.0f / sqrtf(mean + 1e-6f);
        for (int i = 0; i < N; i++) {
            float y = (xr[i] * inv) * w[i];
            exact += y == ref[r * N + i];
            worst = fmaxf(worst, ulp_diff(y, ref[r * N + i]));
        }
    }
    SW_CHECK(worst <= 1.0f, "rmsnorm in the kernel's order: worst %.1f ulp from cpu_rmsnorm",
             worst);
    printf("  rmsnorm: %u/%d bit-identical to cpu_rmsnorm, worst %.1f ulp\n", exact, N * R,
           worst);
    free(x), free(w), free(ref);
}

static void test_moe_route(void) {
    enum { T = 64, E = 128, K = 8 };
    float *s = xmalloc(T * E * 4), *scale = xmalloc(E * 4), w[T * K], w_ref[T * K];
    int32_t id[T * K], id_ref[T * K];
    for (int i = 0; i < T * E; i++) /* a coarse grid: many ties */
        s[i] = i % 7 == 0 ? 2.0f : roundf(frand(-8, 8) * 4) / 4;
    for (int e = 0; e < E; e++)
        scale[e] = frand(0.5f, 2);
    SW_CHECK_OK(cpu_moe_route(s, scale, T, E, K, id_ref, w_ref));
    for (int t = 0; t < T; t++)
        km_moe_route_row(s + t * E, scale, E, K, id + t * K, w + t * K);
    SW_CHECK(!memcmp(id, id_ref, sizeof id) && !memcmp(w, w_ref, sizeof w),
             "router: the kernel's ids and weights are cpu_moe_route's bits");
    /* slots by rank: each token's ids in ascending order, each slot once */
    bool ascending = true;
    for (int t = 0; t < T; t++) {
        int32_t prev = -1;
        uint32_t seen = 0;
        for (uint32_t r = 0; r < K; r++) {
            const uint32_t j = km_moe_slot_by_rank(id + t * K, K, r);
            ascending &= id[t * K + j] > prev && !(seen & (1u << j));
            prev = id[t * K + j];
            seen |= 1u << j;
        }
    }
    SW_CHECK(ascending, "experts are taken in ascending id, each slot once");
    free(s), free(scale);
}

int main(void) {
    const uint32_t types[] = {SW_TYPE_F32, SW_TYPE_F16, SW_TYPE_BF16, SW_TYPE_Q4_0,
                              SW_TYPE_Q4_1, SW_TYPE_Q5_0, SW_TYPE_Q5_1, SW_TYPE_Q8_0,
                              SW_TYPE_Q2_K, SW_TYPE_Q3_K, SW_TYPE_Q4_K, SW_TYPE_Q5_K,
                              SW_TYPE_Q6_K};
    test_type_ids();
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int rep = 0; rep < 20; rep++)
            test_slots(types[i]);
    test_halves();
    test_tanh_family();
    test_rope();
    test_attn_range();
    test_attention(0, 0, 0.0f);
    test_attention(100, 0, 50.0f);
    test_attention(64, 160, 0.0f);
    test_rmsnorm();
    test_moe_route();
    return sw_check_finish("test_cuda_math");
}

/*
 * test_moe.c — Gemma 4's mixture-of-experts kernels on the CPU: the
 * router's top k (order, ties to the lower id, renormalisation, the
 * per-expert scale) against a computation in double, and the experts
 * (f32 and Q8_0 weights, 1 and 2 threads, tokens routed to the same and
 * to different experts) against a double-precision sum over each token's
 * experts; decode's one token through the experts' shared passes against
 * the experts one by one, bit for bit; bad arguments are refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "cpu_test_util.h"
#include "quant/dequant.h"
#include "quant/types.h"

enum { NE = 64, FF = 32, NX = 6, K = 2, NT = 9 };

static void test_route(void) {
    /* token 0: a clear order; token 1: a tie between experts 1 and 4 */
    const float scores[2][NX] = {{0.5f, 2.0f, -1.0f, 1.0f, 0.0f, 3.0f},
                                 {0.0f, 2.0f, -1.0f, 1.0f, 2.0f, -3.0f}};
    const float scale[NX] = {1.0f, 0.5f, 2.0f, 1.5f, 0.25f, 3.0f};
    int32_t ids[2 * K];
    float w[2 * K];
    SW_CHECK_OK(cpu_moe_route(&scores[0][0], scale, 2, NX, K, ids, w));
    SW_CHECK(ids[0] == 5 && ids[1] == 1 && ids[2] == 1 && ids[3] == 4,
             "top 2: %d %d, %d %d", ids[0], ids[1], ids[2], ids[3]);
    for (int t = 0; t < 2; t++) {
        double p[K], sum = 0.0;
        for (int j = 0; j < K; j++)
            sum += p[j] = exp((double)scores[t][ids[t * K + j]]);
        for (int j = 0; j < K; j++) {
            const double want = p[j] / sum * scale[ids[t * K + j]];
            SW_CHECK(fabs(w[t * K + j] - want) < 1e-6, "token %d weight %d: %g vs %g", t, j,
                     (double)w[t * K + j], want);
        }
    }
    SW_CHECK(cpu_moe_route(&scores[0][0], scale, 2, NX, 0, ids, w) == SW_ERR_ARG, "k = 0");
    SW_CHECK(cpu_moe_route(&scores[0][0], scale, 2, NX, NX + 1, ids, w) == SW_ERR_ARG,
             "k beyond the experts");
}

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* out[t] in double from the dequantized weights. */
static void reference(const float *gu, const float *dn, const float *x, const int32_t *ids,
                      const float *w, double *out) {
    for (int t = 0; t < NT; t++)
        for (int c = 0; c < NE; c++) {
            double o = 0.0;
            for (int j = 0; j < K; j++) {
                const int e = ids[t * K + j];
                double h[FF];
                for (int f = 0; f < FF; f++) {
                    double g = 0.0, u = 0.0;
                    for (int i = 0; i < NE; i++) {
                        g += (double)gu[((size_t)e * 2 * FF + f) * NE + i] * x[t * NE + i];
                        u += (double)gu[((size_t)e * 2 * FF + FF + f) * NE + i] * x[t * NE + i];
                    }
                    h[f] = gelu(g) * u;
                }
                double y = 0.0;
                for (int f = 0; f < FF; f++)
                    y += (double)dn[((size_t)e * NE + c) * FF + f] * h[f];
                o += y * w[t * K + j];
            }
            out[t * NE + c] = o;
        }
}

static void experts_case(uint32_t type, int threads) {
    uint64_t gu_bytes, dn_bytes;
    uint8_t *gu = random_weights(type, NE, (uint64_t)NX * 2 * FF, &gu_bytes);
    uint8_t *dn = random_weights(type, FF, (uint64_t)NX * NE, &dn_bytes);
    float *gu_f = xmalloc((size_t)NX * 2 * FF * NE * sizeof(float));
    float *dn_f = xmalloc((size_t)NX * NE * FF * sizeof(float));
    SW_CHECK_OK(quant_dequantize(type, gu, gu_f, (uint64_t)NX * 2 * FF * NE));
    SW_CHECK_OK(quant_dequantize(type, dn, dn_f, (uint64_t)NX * NE * FF));
    const tensor_view vgu = {"gate_up", type, 2, {NE, NX * 2 * FF, 1, 1}, gu_bytes, gu};
    const tensor_view vdn = {"down", type, 2, {FF, NX * NE, 1, 1}, dn_bytes, dn};
    static float x[NT * NE], out[NT * NE], xg[NT * NE], g[NT * 2 * FF], yd[NT * NE];
    static double ref[NT * NE];
    int32_t ids[NT * K];
    float w[NT * K];
    fill_float(x, NT * NE, -1.0f, 1.0f);
    for (int t = 0; t < NT; t++) { /* experts 0 and 3 popular, 5 never used */
        ids[t * K] = t % 2 ? 3 : 0;
        ids[t * K + 1] = (t % 4) + 1 == 3 ? 2 : (t % 4) + 1;
        w[t * K] = 0.25f + 0.05f * (float)t;
        w[t * K + 1] = 0.75f - 0.05f * (float)t;
    }
    cpu_pool *pool = NULL;
    cpu_mm_scratch *ws = NULL;
    SW_CHECK_OK(cpu_pool_create(threads, &pool));
    SW_CHECK_OK(cpu_mm_scratch_create(threads, NE, &ws));
    cpu_mm_scratch_set_exact(ws, true); /* f32 activations: comparable to double */
    const cpu_moe_args a = {.gate_up = &vgu, .down = &vdn, .x = x, .weights = w, .ids = ids,
                            .out = out, .xg = xg, .gu = g, .yd = yd, .n_tokens = NT,
                            .n_expert = NX, .k = K};
    SW_CHECK_OK(cpu_moe_experts(pool, ws, &a));
    reference(gu_f, dn_f, x, ids, w, ref);
    char what[64];
    snprintf(what, sizeof what, "experts %s, %d thread(s)", type_name(type), threads);
    check_close(what, out, ref, NT * NE, 1e-4, 1e-4);
    const tensor_view short_dn = {"down", type, 2, {FF, NX * NE - 1, 1, 1}, dn_bytes, dn};
    cpu_moe_args bad = a;
    bad.down = &short_dn;
    SW_CHECK(cpu_moe_experts(pool, ws, &bad) == SW_ERR_ARG, "mismatched expert shapes");
    cpu_mm_scratch_destroy(ws);
    cpu_pool_destroy(pool);
    free(gu);
    free(dn);
    free(gu_f);
    free(dn_f);
}

/* Decode's one token (moe.c's two passes over all its experts) against
 * the experts one by one as cpu_matmul computes them, summed in ascending
 * id: the same bits, with 8-bit activations, 1 and 2 threads, in shapes
 * large enough for the threads to split the rows. */
enum { DE = 512, DF = 256, DX = 8, DK = 4 };

static void decode_case(uint32_t type, int threads) {
    uint64_t gu_bytes, dn_bytes;
    uint8_t *gu = random_weights(type, DE, (uint64_t)DX * 2 * DF, &gu_bytes);
    uint8_t *dn = random_weights(type, DF, (uint64_t)DX * DE, &dn_bytes);
    const tensor_view vgu = {"gate_up", type, 2, {DE, DX * 2 * DF, 1, 1}, gu_bytes, gu};
    const tensor_view vdn = {"down", type, 2, {DF, DX * DE, 1, 1}, dn_bytes, dn};
    static float x[DE], out[DE], want[DE], xg[DK * DE], g[DK * 2 * DF], yd[DK * DE];
    static float h[2 * DF], y[DE];
    const int32_t ids[DK] = {6, 1, 3, 0};   /* routing order, not id order */
    const float w[DK] = {0.4f, 0.3f, 0.2f, 0.1f};
    fill_float(x, DE, -1.0f, 1.0f);
    cpu_pool *pool = NULL;
    cpu_mm_scratch *ws = NULL;
    SW_CHECK_OK(cpu_pool_create(threads, &pool));
    SW_CHECK_OK(cpu_mm_scratch_create(threads, DE, &ws));
    const cpu_moe_args a = {.gate_up = &vgu, .down = &vdn, .x = x, .weights = w, .ids = ids,
                            .out = out, .xg = xg, .gu = g, .yd = yd, .n_tokens = 1,
                            .n_expert = DX, .k = DK};
    SW_CHECK_OK(cpu_moe_experts(pool, ws, &a));
    memset(want, 0, sizeof want);
    for (int e = 0; e < DX; e++)
        for (int j = 0; j < DK; j++) {
            if (ids[j] != e)
                continue;
            const tensor_view eg = {"gate_up", type, 2, {DE, 2 * DF, 1, 1}, gu_bytes / DX,
                                    gu + (size_t)e * (gu_bytes / DX)};
            const tensor_view ed = {"down", type, 2, {DF, DE, 1, 1}, dn_bytes / DX,
                                    dn + (size_t)e * (dn_bytes / DX)};
            SW_CHECK_OK(cpu_matmul(pool, ws, &eg, x, h, 1));
            cpu_geglu(h, h + DF, h, DF);
            SW_CHECK_OK(cpu_matmul(pool, ws, &ed, h, y, 1));
            for (int c = 0; c < DE; c++)
                want[c] += y[c] * w[j];
        }
    SW_CHECK(!memcmp(out, want, sizeof out), "decode experts %s, %d thread(s): not the "
             "one-by-one bits", type_name(type), threads);
    cpu_mm_scratch_destroy(ws);
    cpu_pool_destroy(pool);
    free(gu);
    free(dn);
}

int main(void) {
    test_route();
    for (int threads = 1; threads <= 2; threads++) {
        decode_case(SW_TYPE_Q8_0, threads);
        decode_case(SW_TYPE_Q5_0, threads);
        decode_case(SW_TYPE_Q4_K, threads);
        decode_case(SW_TYPE_Q6_K, threads);
    }
    for (int threads = 1; threads <= 2; threads++) {
        experts_case(SW_TYPE_F32, threads);
        experts_case(SW_TYPE_Q8_0, threads);
    }
    return sw_check_finish("test_moe");
}

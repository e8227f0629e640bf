/*
 * elementwise.c — the CPU backend's row-local kernels: RMSNorm, RoPE,
 * GeGLU, soft-capping, add and scale. All f32 and single-threaded here
 * (elementwise_mt.c spreads the big ones over the pool), and each output
 * element depends only
 * on its own row, so results never depend on how callers batch tokens.
 * Formulas follow HF transformers' f32 code operation for operation where
 * that is cheap, to keep agreement with the golden files tight.
 */
#include <math.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/vmath.h"

/* The sum of squares is accumulated in double: a Gemma row is up to ~5k
 * values whose squares span many orders of magnitude, and torch's f32
 * reduction uses a different (pairwise) order anyway, so the most accurate
 * cheap choice is the best match. Each square is exact in double; they
 * are summed in 8 strided partial sums (element i into sum i % 8), joined
 * as ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)): one chain of
 * dependent additions per row would cost more than the rest of the norm
 * (Gemma 3 norms ~70 rows of up to 1024 values per token). Then, as HF:
 * mean and rsqrt in f32, y = (x * r) * w. */
void cpu_rmsnorm(const float *x, const float *w, float *y, uint32_t n, uint32_t n_rows,
                 float eps) {
    if (n == 0)
        return;
    for (uint32_t r = 0; r < n_rows; r++) {
        const float *xr = x + (uint64_t)r * n;
        float *yr = y + (uint64_t)r * n;
        double p[8] = {0};
        uint32_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++)
                p[k] += (double)xr[i + (uint32_t)k] * (double)xr[i + (uint32_t)k];
        for (; i < n; i++)
            p[i % 8] += (double)xr[i] * (double)xr[i];
        const double ss = ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
        const float mean = (float)(ss / (double)n);
        const float inv = 1.0f / sqrtf(mean + eps);
        if (w == NULL)
            for (i = 0; i < n; i++)
                yr[i] = xr[i] * inv;
        else
            for (i = 0; i < n; i++)
                yr[i] = (xr[i] * inv) * w[i];
    }
}

/* Angles as HF's default rope init computes them, all in f32:
 *   inv_freq_i = 1 / base^((float)(2i) / (float)hd)   (powf)
 *   theta      = (inv_freq_i * freq_scale) * (float)pos
 * HF applies linear scaling as inv_freq / factor; with factor a power of
 * two (Gemma 3 uses 8) that equals inv_freq * freq_scale exactly. cos and
 * sin are cosf/sinf in f32 and are not rounded to bf16 as HF does for a
 * bf16 model; positions are exact in f32 up to 2^24. The pair (i, i+hd/2)
 * is rotated as HF's q*cos + rotate_half(q)*sin. */
void cpu_rope(float *x, const int32_t *pos, uint32_t n_tokens, uint32_t n_heads,
              uint32_t head_dim, float base, float freq_scale, uint32_t n_pairs) {
    const uint32_t half = head_dim / 2;
    const uint32_t turned = n_pairs == 0 || n_pairs > half ? half : n_pairs;
    for (uint32_t i = 0; i < turned; i++) {
        const float inv_freq = 1.0f / powf(base, (float)(2 * i) / (float)head_dim);
        const float step = inv_freq * freq_scale;
        for (uint32_t t = 0; t < n_tokens; t++) {
            const float theta = step * (float)pos[t];
            const float c = cosf(theta), s = sinf(theta);
            float *xt = x + (uint64_t)t * n_heads * head_dim;
            for (uint32_t h = 0; h < n_heads; h++) {
                float *v = xt + (uint64_t)h * head_dim;
                const float a = v[i], b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = b * c + a * s;
            }
        }
    }
}

/* PyTorch's gelu(approximate='tanh') in f32, same operation order, with
 * vmath.h's tanh (libm's tanhf, one call per element, was 13% of prefill):
 * inner = kBeta * (x + kKappa * x^3); 0.5 * x * (1 + tanh(inner)). */
void cpu_geglu(const float *gate, const float *up, float *out, uint64_t n) {
    cpu_vmath_get(cpu_isa_best())->geglu(gate, up, out, n);
}

/* HF: (x / cap).tanh() * cap. */
void cpu_softcap(float *x, uint64_t n, float cap) {
    if (cap == 0.0f)
        return;
    cpu_vmath_get(cpu_isa_best())->softcap(x, n, cap);
}

void cpu_add(float *x, const float *y, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        x[i] += y[i];
}

void cpu_scale(float *x, uint64_t n, float s) {
    for (uint64_t i = 0; i < n; i++)
        x[i] *= s;
}

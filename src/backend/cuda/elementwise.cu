/*
 * elementwise.cu — the CUDA backend's small ops: embedding gather, RMSNorm,
 * RoPE, GeGLU, add, scale, soft-cap, row gather; and the fused steps of
 * the block entry (ck_qk_prep, ck_residual), which run the same per-
 * element functions in the same order as the ops they replace, so a
 * block gives the same bits fused or op by op.
 *
 * Every per-element formula is kmath.h's or qblock.h's (tested on the
 * CPU). RMSNorm's sum of squares is in f64 like the cpu backend's, summed
 * by one fixed tree (RMS_THREADS threads per row), so the standalone and
 * the fused norms agree bit for bit.
 */
#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/kmath.h"
#include "backend/cuda/qblock.h"

#define EW_THREADS 256
#define RMS_THREADS 256
#define ROPE_MAX_PAIRS (CK_ATTN_MAX_HD / 2)

static unsigned ew_blocks(uint64_t n) { return (unsigned)((n + EW_THREADS - 1) / EW_THREADS); }

/* ---- gathers ----------------------------------------------------------------- */

template <uint32_t TYPE>
__global__ void k_get_rows(const ck_weight w, const int32_t *ids, uint32_t n, float *out) {
    const uint64_t n_slots = w.ne0 / 8;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n * n_slots)
        return;
    const uint64_t t = i / n_slots, g = i % n_slots;
    float *o = out + t * w.ne0;
    const int32_t id = ids[t];
    if (id < 0 || (uint64_t)id >= w.ne1) {
        for (int j = 0; j < 8; j++)
            o[8 * g + j] = 0.0f;
        return;
    }
    float wt[8];
    uint64_t e0, e1;
    qb_row_slot(TYPE, w.data + (uint64_t)id * w.row_bytes, g, wt, &e0, &e1);
    for (int j = 0; j < 4; j++) {
        o[e0 + j] = wt[j];
        o[e1 + j] = wt[4 + j];
    }
}

__global__ void k_gather(const float *src, uint32_t n_src, const int32_t *idx, uint32_t n,
                         uint32_t cols, float *dst) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n * cols)
        return;
    const uint64_t r = i / cols, c = i % cols;
    const int32_t s = idx[r];
    dst[i] = s >= 0 && (uint32_t)s < n_src ? src[(uint64_t)s * cols + c] : 0.0f;
}

/* ---- RMSNorm ------------------------------------------------------------------- */

/* 1 / sqrt(mean(x^2) + eps) over x[0 .. n), by all RMS_THREADS threads of
 * the block (each returns it); f64 sum in a fixed order. */
static __device__ float row_rms_inv(const float *x, uint32_t n, float eps) {
    __shared__ double part[RMS_THREADS / 32];
    double ss = 0.0;
    for (uint32_t i = threadIdx.x; i < n; i += RMS_THREADS)
        ss += (double)x[i] * (double)x[i];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = ss;
    __syncthreads();
    double total = 0.0;
#pragma unroll
    for (int w = 0; w < RMS_THREADS / 32; w++)
        total += part[w];
    __syncthreads(); /* part is reused by the next call */
    const float mean = (float)(total / (double)n);
    return hd_div(1.0f, sqrtf(hd_add(mean, eps)));
}

/* y = (x * inv) * w over a row, or x * inv without w (x and y may alias:
 * each element is read and written by one thread, after the sum). */
static __device__ void row_scale(const float *x, float inv, const float *w, float *y,
                                 uint32_t n) {
    for (uint32_t i = threadIdx.x; i < n; i += RMS_THREADS)
        y[i] = w != NULL ? hd_mul(hd_mul(x[i], inv), w[i]) : hd_mul(x[i], inv);
}

__global__ void __launch_bounds__(RMS_THREADS)
k_rmsnorm(const float *x, const float *w, float *y, uint32_t n, float eps) {
    const uint64_t r = blockIdx.x;
    const float inv = row_rms_inv(x + r * n, n, eps);
    row_scale(x + r * n, inv, w, y + r * n, n);
}

/* ---- RoPE and the elementwise ops ---------------------------------------------- */

typedef struct rope_steps {
    float v[ROPE_MAX_PAIRS];
} rope_steps;

/* The steps of (head_dim, base, scale): 128 powf calls cost more than the
 * launch they feed, and a model has two such sets (local and global
 * layers), so each thread keeps the last few. */
#define STEP_CACHE 4
typedef struct step_entry {
    uint32_t head_dim;
    float base, freq_scale;
    rope_steps steps;
} step_entry;

static sw_status make_steps(uint32_t head_dim, float base, float freq_scale, rope_steps *st) {
    static thread_local step_entry cache[STEP_CACHE];
    static thread_local int next;
    if (head_dim == 0 || head_dim % 2 || head_dim / 2 > ROPE_MAX_PAIRS)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda rope: head_dim %u (even, at most %d)",
                         head_dim, 2 * ROPE_MAX_PAIRS);
    for (int i = 0; i < STEP_CACHE; i++) {
        const step_entry *e = &cache[i];
        if (e->head_dim == head_dim && e->base == base && e->freq_scale == freq_scale) {
            *st = e->steps;
            return SW_OK;
        }
    }
    for (uint32_t i = 0; i < head_dim / 2; i++)
        st->v[i] = km_rope_step(i, head_dim, base, freq_scale);
    cache[next] = (step_entry){head_dim, base, freq_scale, *st};
    next = (next + 1) % STEP_CACHE;
    return SW_OK;
}

/* Pairs p < turned rotate; the rest keep their values (as cpu_rope). */
__global__ void k_rope(float *x, const int32_t *pos, uint32_t n_tokens, uint32_t n_heads,
                       uint32_t head_dim, uint32_t turned, const rope_steps steps) {
    const uint32_t half = head_dim / 2;
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (uint64_t)n_tokens * n_heads * half)
        return;
    const uint64_t th = i / half; /* token * n_heads + head */
    const uint32_t p = (uint32_t)(i % half);
    if (p >= turned)
        return;
    float *v = x + th * head_dim;
    km_rope_pair(&v[p], &v[p + half], steps.v[p], pos[th / n_heads]);
}

__global__ void k_geglu(const float *gate, const float *up, float *out, uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = km_geglu(gate[i], up[i]);
}

__global__ void k_add(float *x, const float *y, uint64_t n) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = hd_add(x[i], y[i]);
}

__global__ void k_scale(float *x, uint64_t n, float f) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = hd_mul(x[i], f);
}

__global__ void k_softcap(float *x, uint64_t n, float cap) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = km_softcap(x[i], cap);
}

/* ---- fused steps of the block entry -------------------------------------------- */

/* Block (head slot, token): slots [0, n_head) are query heads, then
 * n_head_kv key heads, then n_head_kv value heads (appended only). */
__global__ void __launch_bounds__(RMS_THREADS)
k_qk_prep(float *q, float *k, const float *v, const float *q_norm, const float *k_norm,
          float eps, const int32_t *pos, const int32_t *seq, uint32_t n_head,
          uint32_t n_head_kv, uint32_t hd, const rope_steps steps, float query_scale,
          const ck_kv kv) {
    __shared__ float row[CK_ATTN_MAX_HD];
    const uint32_t slot = blockIdx.x, t = blockIdx.y, half = hd / 2;
    const bool is_q = slot < n_head, is_v = slot >= n_head + n_head_kv;
    const uint32_t head = is_q ? slot : is_v ? slot - n_head - n_head_kv : slot - n_head;
    float *src = is_q ? q + ((uint64_t)t * n_head + head) * hd
                      : (is_v ? (float *)v : k) + ((uint64_t)t * n_head_kv + head) * hd;
    if (!is_v) {
        const float *nw = is_q ? q_norm : k_norm;
        if (nw != NULL) {
            const float inv = row_rms_inv(src, hd, eps);
            row_scale(src, inv, nw, row, hd);
        } else {
            for (uint32_t d = threadIdx.x; d < hd; d += RMS_THREADS)
                row[d] = src[d];
        }
        __syncthreads();
        for (uint32_t p = threadIdx.x; p < half; p += RMS_THREADS)
            km_rope_pair(&row[p], &row[p + half], steps.v[p], pos[t]);
        __syncthreads();
        for (uint32_t d = threadIdx.x; d < hd; d += RMS_THREADS)
            src[d] = is_q ? hd_mul(row[d], query_scale) : row[d];
    }
    if (is_q || !km_kv_valid(seq[t], pos[t], kv.n_seq, kv.rows, kv.ring))
        return;
    __syncthreads();
    void *cache = is_v ? kv.v : kv.k;
    const uint64_t at = km_kv_row(seq[t], pos[t], kv.rows, kv.ring) * kv.row_elems +
                        (uint64_t)head * hd;
    for (uint32_t d = threadIdx.x; d < hd; d += RMS_THREADS) {
        const float f = src[d];
        if (kv.type == QB_F32)
            ((float *)cache)[at + d] = f;
        else
            ((unsigned short *)cache)[at + d] =
                (unsigned short)(kv.type == QB_F16 ? hd_to_f16(f) : hd_to_bf16(f));
    }
}

__global__ void __launch_bounds__(RMS_THREADS)
k_residual(float *x, float *h, const float *post_norm, const float *next_norm, uint32_t n,
           float eps) {
    float *xr = x + (uint64_t)blockIdx.x * n, *hr = h + (uint64_t)blockIdx.x * n;
    if (post_norm != NULL) {
        const float inv = row_rms_inv(hr, n, eps);
        row_scale(hr, inv, post_norm, hr, n);
        __syncthreads();
    }
    for (uint32_t i = threadIdx.x; i < n; i += RMS_THREADS)
        xr[i] = hd_add(xr[i], hr[i]);
    if (next_norm == NULL)
        return;
    __syncthreads();
    const float inv = row_rms_inv(xr, n, eps);
    row_scale(xr, inv, next_norm, hr, n);
}

/* ---- launchers ---------------------------------------------------------------------- */

typedef void (*rows_kernel)(const ck_weight, const int32_t *, uint32_t, float *);

static rows_kernel pick_rows(uint32_t type) {
    switch (type) {
#define CASE(T) case T: return k_get_rows<T>;
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

sw_status ck_get_rows(cudaStream_t s, const ck_weight *w, const int32_t *ids, uint32_t n,
                      float *out) {
    rows_kernel k = pick_rows(w->type);
    if (k == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda get_rows: type %u", w->type);
    const uint64_t total = (uint64_t)n * (w->ne0 / 8);
    if (total == 0)
        return SW_OK;
    k<<<ew_blocks(total), EW_THREADS, 0, s>>>(*w, ids, n, out);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_rmsnorm(cudaStream_t s, const float *x, const float *w, float *y, uint32_t n,
                     uint32_t n_rows, float eps) {
    if (n == 0 || n_rows == 0)
        return SW_OK;
    k_rmsnorm<<<n_rows, RMS_THREADS, 0, s>>>(x, w, y, n, eps);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_rope(cudaStream_t s, float *x, const int32_t *pos, uint32_t n_tokens,
                  uint32_t n_heads, uint32_t head_dim, float base, float freq_scale,
                  uint32_t n_pairs) {
    rope_steps steps;
    SW_TRY(make_steps(head_dim, base, freq_scale, &steps));
    const uint64_t n = (uint64_t)n_tokens * n_heads * (head_dim / 2);
    const uint32_t turned = n_pairs == 0 || n_pairs > head_dim / 2 ? head_dim / 2 : n_pairs;
    if (n == 0)
        return SW_OK;
    k_rope<<<ew_blocks(n), EW_THREADS, 0, s>>>(x, pos, n_tokens, n_heads, head_dim, turned,
                                               steps);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_geglu(cudaStream_t s, const float *gate, const float *up, float *out, uint64_t n) {
    if (n == 0)
        return SW_OK;
    k_geglu<<<ew_blocks(n), EW_THREADS, 0, s>>>(gate, up, out, n);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_add(cudaStream_t s, float *x, const float *y, uint64_t n) {
    if (n == 0)
        return SW_OK;
    k_add<<<ew_blocks(n), EW_THREADS, 0, s>>>(x, y, n);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_scale(cudaStream_t s, float *x, uint64_t n, float f) {
    if (n == 0)
        return SW_OK;
    k_scale<<<ew_blocks(n), EW_THREADS, 0, s>>>(x, n, f);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_softcap(cudaStream_t s, float *x, uint64_t n, float cap) {
    if (n == 0 || cap == 0.0f)
        return SW_OK;
    k_softcap<<<ew_blocks(n), EW_THREADS, 0, s>>>(x, n, cap);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_gather(cudaStream_t s, const float *src, uint32_t n_src, const int32_t *idx,
                    uint32_t n, uint32_t cols, float *dst) {
    const uint64_t total = (uint64_t)n * cols;
    if (total == 0)
        return SW_OK;
    k_gather<<<ew_blocks(total), EW_THREADS, 0, s>>>(src, n_src, idx, n, cols, dst);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_qk_prep(cudaStream_t s, float *q, float *k, const float *v, const float *q_norm,
                     const float *k_norm, float eps, const int32_t *pos, const int32_t *seq,
                     uint32_t n_tokens, uint32_t n_head, uint32_t n_head_kv,
                     uint32_t head_dim, float base, float freq_scale, float query_scale,
                     const ck_kv *kv) {
    rope_steps steps;
    SW_TRY(make_steps(head_dim, base, freq_scale, &steps));
    if (n_tokens == 0)
        return SW_OK;
    dim3 grid(n_head + 2 * n_head_kv, n_tokens);
    k_qk_prep<<<grid, RMS_THREADS, 0, s>>>(q, k, v, q_norm, k_norm, eps, pos, seq, n_head,
                                           n_head_kv, head_dim, steps, query_scale, *kv);
    return SW_CUDA_CHECK(cudaGetLastError());
}

sw_status ck_residual(cudaStream_t s, float *x, float *h, const float *post_norm,
                      const float *next_norm, uint32_t n, uint32_t n_rows, float eps) {
    if (n == 0 || n_rows == 0)
        return SW_OK;
    k_residual<<<n_rows, RMS_THREADS, 0, s>>>(x, h, post_norm, next_norm, n, eps);
    return SW_CUDA_CHECK(cudaGetLastError());
}

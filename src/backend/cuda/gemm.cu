/*
 * gemm.cu — prefill and batched matrix products on tensor cores:
 * y[t][r] = sum_c W[r][c] x[t][c] for many tokens, W in its stored type.
 *
 * Each block computes a GM_BM x GM_BN tile (weight rows x tokens) of y
 * with 8 warps of 2 x 2 WMMA fragments (m16n16k8, TF32 in, f32
 * accumulators). For every K tile of 128 elements it dequantizes 128 rows
 * of W into shared memory (16 slots per row: qblock.h's window property
 * makes those exactly the tile's 128 columns), loads 64 tokens of x beside
 * them, and runs the fragments over the tile. Nothing is dequantized to
 * device memory: a streamed layer's blocks are read once per token tile.
 *
 * TF32 keeps 10 mantissa bits. The split mode (the default) writes each
 * operand as hi + lo, two TF32 numbers, and adds hi·hi + hi·lo + lo·hi:
 * close to f32 products at three times the tensor work, which these sizes
 * (bound by decoding and loads, not by the tensor cores) barely notice.
 */
#include <mma.h>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/qblock.h"

using namespace nvcuda;

#define GM_BM 128             /* weight rows per block */
#define GM_BN 64              /* tokens per block */
#define GM_BK 128             /* elements per K tile: 16 slots */
#define GM_LD (GM_BK + 8)     /* padded row of a tile, floats */
#define GM_CLD (GM_BM + 4)    /* padded row of the output tile */
#define GM_THREADS 256        /* 8 warps: 4 along the rows, 2 along the tokens */
#define GM_SMEM_BYTES ((GM_BM + GM_BN) * GM_LD * sizeof(float))

typedef wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> frag_b;
typedef wmma::fragment<wmma::accumulator, 16, 16, 8, float> frag_c;

/* Rows m0 .. m0 + GM_BM - 1 of W, columns k0 .. k0 + 127, into As (zeros past
 * the matrix). A slot past the row's end is a whole missing block, whose
 * columns are exactly the slot-major positions zeroed here. */
template <uint32_t TYPE>
static __device__ void load_w_tile(const ck_weight &w, uint64_t m0, uint64_t k0, float *As) {
    const uint64_t n_slots = w.ne0 / 8, g0 = k0 / 8;
    for (int i = threadIdx.x; i < GM_BM * 16; i += GM_THREADS) {
        const int r = i / 16, sl = i % 16;
        const uint64_t row = m0 + (uint64_t)r, g = g0 + (uint64_t)sl;
        float *dst = As + r * GM_LD;
        if (row >= w.ne1 || g >= n_slots) {
#pragma unroll
            for (int j = 0; j < 8; j++)
                dst[sl * 8 + j] = 0.0f;
            continue;
        }
        float wt[8];
        uint64_t e0, e1;
        qb_row_slot(TYPE, w.data + row * w.row_bytes, g, wt, &e0, &e1);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            dst[e0 - k0 + j] = wt[j];
            dst[e1 - k0 + j] = wt[4 + j];
        }
    }
}

/* Tokens n0 .. n0 + 63 of x, columns k0 .. k0 + 127, into Bs, 16 bytes at
 * a time (x rows are 16-byte aligned and ne0 % 8 == 0, checked at submit). */
static __device__ void load_x_tile(const float *x, uint64_t ne0, uint32_t n_tokens,
                                   uint32_t n0, uint64_t k0, float *Bs) {
    for (int i = threadIdx.x; i < GM_BN * GM_BK / 4; i += GM_THREADS) {
        const int t = i / (GM_BK / 4), k = 4 * (i % (GM_BK / 4));
        const uint64_t col = k0 + (uint64_t)k;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (n0 + (uint32_t)t < n_tokens && col < ne0)
            v = __ldg((const float4 *)(x + (uint64_t)(n0 + t) * ne0 + col));
        *(float4 *)(Bs + t * GM_LD + k) = v;
    }
}

/* hi = f rounded to TF32, lo = the rest rounded to TF32. */
template <typename Frag>
static __device__ __forceinline__ void split(Frag &hi, Frag &lo) {
#pragma unroll
    for (int e = 0; e < hi.num_elements; e++) {
        const float f = hi.x[e], h = wmma::__float_to_tf32(f);
        hi.x[e] = h;
        lo.x[e] = wmma::__float_to_tf32(f - h);
    }
}

template <typename Frag>
static __device__ __forceinline__ void round_tf32(Frag &f) {
#pragma unroll
    for (int e = 0; e < f.num_elements; e++)
        f.x[e] = wmma::__float_to_tf32(f.x[e]);
}

template <uint32_t TYPE, bool SPLIT>
__global__ void __launch_bounds__(GM_THREADS)
k_gemm(const ck_weight w, const float *x, float *y, uint32_t n_tokens) {
    extern __shared__ __align__(128) float sm[];
    float *As = sm, *Bs = sm + GM_BM * GM_LD;
    const uint64_t m0 = (uint64_t)blockIdx.x * GM_BM;
    const uint32_t n0 = blockIdx.y * GM_BN;
    const int warp = threadIdx.x / 32, wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    frag_c acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (uint64_t k0 = 0; k0 < w.ne0; k0 += GM_BK) {
        load_w_tile<TYPE>(w, m0, k0, As);
        load_x_tile(x, w.ne0, n_tokens, n0, k0, Bs);
        __syncthreads();
#pragma unroll 2
        for (int kk = 0; kk < GM_BK; kk += 8) {
            frag_a a[2], a_lo[2];
            frag_b b[2], b_lo[2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * GM_LD + kk, GM_LD);
                wmma::load_matrix_sync(b[i], Bs + (wn + 16 * i) * GM_LD + kk, GM_LD);
                if (SPLIT) {
                    split(a[i], a_lo[i]);
                    split(b[i], b_lo[i]);
                } else {
                    round_tf32(a[i]);
                    round_tf32(b[i]);
                }
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    if (SPLIT) {
                        wmma::mma_sync(acc[i][j], a_lo[i], b[j], acc[i][j]);
                        wmma::mma_sync(acc[i][j], a[i], b_lo[j], acc[i][j]);
                    }
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
                }
        }
        __syncthreads();
    }

    /* The tile through shared memory (token-major), then y with bounds. */
    float *Cs = sm;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(Cs + (wn + 16 * j) * GM_CLD + wm + 16 * i, acc[i][j], GM_CLD,
                                    wmma::mem_col_major);
    __syncthreads();
    for (int i = threadIdx.x; i < GM_BM * GM_BN; i += GM_THREADS) {
        const int t = i / GM_BM, r = i % GM_BM;
        if (n0 + (uint32_t)t < n_tokens && m0 + (uint64_t)r < w.ne1)
            y[(uint64_t)(n0 + t) * w.ne1 + m0 + r] = Cs[t * GM_CLD + r];
    }
}

typedef void (*gemm_kernel)(const ck_weight, const float *, float *, uint32_t);

static gemm_kernel pick(uint32_t type, bool split) {
    switch (type) {
#define CASE(T) case T: return split ? k_gemm<T, true> : k_gemm<T, false>;
        CK_FOR_EACH_TYPE(CASE)
#undef CASE
    default: return NULL;
    }
}

/* Raises every instance's dynamic shared memory limit (the runtime keeps
 * it for the process; this also loads their code now, at creation). */
sw_status ck_gemm_init(void) {
    const uint32_t types[] = {CK_FOR_EACH_TYPE(CK_LIST_TYPE)};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int split = 0; split < 2; split++)
            SW_CUDA_TRY(cudaFuncSetAttribute((const void *)pick(types[i], split != 0),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)GM_SMEM_BYTES));
    return SW_OK;
}

sw_status ck_gemm(cudaStream_t s, const ck_weight *w, const float *x, float *y,
                  uint32_t n_tokens, bool split) {
    gemm_kernel k = pick(w->type, split);
    if (k == NULL)
        return sw_errorf(SW_ERR_UNSUPPORTED, "cuda gemm: type %u", w->type);
    if (n_tokens == 0 || w->ne1 == 0)
        return SW_OK;
    dim3 grid((unsigned)((w->ne1 + GM_BM - 1) / GM_BM), (n_tokens + GM_BN - 1) / GM_BN);
    k<<<grid, GM_THREADS, GM_SMEM_BYTES, s>>>(*w, x, y, n_tokens);
    return SW_CUDA_CHECK(cudaGetLastError());
}

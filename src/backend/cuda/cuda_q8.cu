/*
 * cuda_q8.cu — which decode matmuls take the integer path (matvec_q8.cu)
 * and its scratch. The path is the default, as 8-bit activations are on
 * the cpu backend: every matmul of at most MV_MAX_TOKENS tokens over an
 * integer type (q8dot.h: Q4_0, Q5_0, Q8_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K)
 * then gives the cpu default's bits. Exact dots (--cpu-dots f32) turn it
 * off, as does SPILLWAY_CUDA_DOTS=f32 (the device check compares the
 * two); other types and larger batches keep the f32 kernels.
 *
 * The scratch (MV_MAX_TOKENS quantized rows of the model's longest row,
 * ~1.2 bytes per element each: 0.2 MiB for a 27B) is the backend's own,
 * allocated once here and counted against the device budget like any
 * buffer, so a budget it does not fit fails at creation, by name.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_internal.h"

sw_status cuda_q8_init(cuda_backend *c, const backend_params *p) {
    const char *v = getenv("SPILLWAY_CUDA_DOTS");
    if (v != NULL && v[0] != '\0' && strcmp(v, "q8") != 0 && strcmp(v, "f32") != 0)
        return sw_errorf(SW_ERR_ARG, "SPILLWAY_CUDA_DOTS=%s: expected q8 (the default: 8-bit "
                         "activations, the cpu default's bits) or f32", v);
    if (p->exact_dots || (v != NULL && strcmp(v, "f32") == 0))
        return SW_OK;
    const uint64_t max_row = p->sizes.max_row_elems ? p->sizes.max_row_elems : 4096;
    SW_TRY(c->base.vt->alloc(&c->base, ck_q8_scratch_bytes(max_row), "8-bit activations",
                             &c->q8_buf));
    uint8_t *ptr = NULL;
    const bmem m = {.buf = c->q8_buf, .off = 0};
    SW_TRY(cuda_resolve("8-bit activations", m, ck_q8_scratch_bytes(max_row), &ptr));
    c->q8 = (ck_q8){.scratch = ptr, .max_row = max_row};
    return SW_OK;
}

sw_status cuda_mm(cuda_backend *c, const ck_weight *w, const float *x, float *y, uint32_t n,
                  bool fine) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    if (ck_q8_reads(&c->q8, w, n))
        return ck_matvec_q8(s, &c->q8, w, x, y, n, fine);
    return ck_matmul(s, w, x, y, n, c->gemm_mode);
}

sw_status cuda_mm_multi(cuda_backend *c, const ck_mv_multi *mm, const float *x, uint32_t n) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    bool q8 = mm->n > 0;
    for (int m = 0; m < mm->n; m++)
        q8 = q8 && ck_q8_reads(&c->q8, &mm->w[m], n);
    return q8 ? ck_matvec_multi_q8(s, &c->q8, mm, x, n) : ck_matvec_multi(s, mm, x, n);
}

sw_status cuda_mm_geglu(cuda_backend *c, const ck_weight *wg, const ck_weight *wu,
                        const float *x, float *gate, uint32_t n) {
    cudaStream_t s = c->stream[BQ_COMPUTE];
    if (ck_q8_reads(&c->q8, wg, n) && ck_q8_reads(&c->q8, wu, n))
        return ck_matvec_geglu_q8(s, &c->q8, wg, wu, x, gate, n);
    return ck_matvec_geglu(s, wg, wu, x, gate, n);
}

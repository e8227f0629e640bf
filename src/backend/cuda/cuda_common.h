/*
 * cuda_common.h — shared helpers for the CUDA backend's .cu files (never
 * included from C: it pulls in cuda_runtime.h).
 *
 * A CUDA failure becomes SW_ERR_DEVICE with a message naming the CUDA error,
 * its text, the failing call and file:line, e.g.
 *   "CUDA error cudaErrorInvalidValue (invalid argument) in
 *    cudaMemcpyAsync(d, src, (size_t)bytes, cudaMemcpyHostToDevice,
 *    c->stream[q]) at src/backend/cuda/cuda_backend.cu:173"
 *
 *   SW_CUDA_TRY(expr)        on failure records the message and returns
 *                            SW_ERR_DEVICE from the enclosing function
 *   if ((st = SW_CUDA_CHECK(expr)) != SW_OK) goto fail;
 *                            the same, for functions with a cleanup path
 */
#ifndef SW_BACKEND_CUDA_COMMON_H
#define SW_BACKEND_CUDA_COMMON_H

#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

extern "C" {
#include "util/error.h"
}

/* Drops the directory part of __FILE__ up to "src/", so messages name
 * repository paths rather than the build machine's absolute ones. */
static inline const char *sw_cuda_short_path(const char *file) {
    const char *p = strstr(file, "/src/");
    return p ? p + 1 : file;
}

/* A sticky error: the context is unusable for the rest of the process
 * (a kernel faulted, the memory failed). cuda_backend.cu keeps the first
 * one's text so that every later call says "device lost" and does nothing
 * rather than pretend to work. */
static inline bool sw_cuda_sticky(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorECCUncorrectable:
    case cudaErrorHardwareStackError: case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress: case cudaErrorInvalidAddressSpace: case cudaErrorInvalidPc:
    case cudaErrorAssert: case cudaErrorLaunchTimeout: case cudaErrorDevicesUnavailable:
        return true;
    default:
        return false;
    }
}

/* The first sticky error's message, or "" while the device works. */
extern char sw_cuda_lost[256];

/* Records the message for `err` (see the top of this file) and returns
 * SW_ERR_DEVICE; returns SW_OK untouched when err is cudaSuccess. Clears
 * the runtime's non-sticky "last error" so the failure is reported once.
 * A sticky error is said as "device lost" and remembered. */
static inline sw_status sw_cuda_check(cudaError_t err, const char *expr,
                                      const char *file, int line) {
    if (err == cudaSuccess)
        return SW_OK;
    (void)cudaGetLastError();
    if (sw_cuda_sticky(err)) {
        sw_status st = sw_errorf(SW_ERR_DEVICE, "device lost: CUDA error %s (%s) in %s at %s:%d; "
                                 "this process cannot use the GPU again (restart it; if it "
                                 "repeats, run `spillway doctor` and check nvidia-smi for ECC "
                                 "or Xid errors)", cudaGetErrorName(err),
                                 cudaGetErrorString(err), expr, sw_cuda_short_path(file), line);
        if (sw_cuda_lost[0] == '\0')
            snprintf(sw_cuda_lost, sizeof sw_cuda_lost, "%s", sw_last_error());
        return st;
    }
    return sw_errorf(SW_ERR_DEVICE, "CUDA error %s (%s) in %s at %s:%d",
                     cudaGetErrorName(err), cudaGetErrorString(err), expr,
                     sw_cuda_short_path(file), line);
}

/* SW_ERR_DEVICE repeating the loss, once the device is lost; else SW_OK. */
static inline sw_status sw_cuda_alive(void) {
    if (sw_cuda_lost[0] == '\0')
        return SW_OK;
    return sw_errorf(SW_ERR_DEVICE, "%s", sw_cuda_lost);
}

#define SW_CUDA_CHECK(expr) sw_cuda_check((expr), #expr, __FILE__, __LINE__)

#define SW_CUDA_TRY(expr)                                                      \
    do {                                                                       \
        sw_status sw_cuda_st_ = SW_CUDA_CHECK(expr);                           \
        if (sw_cuda_st_ != SW_OK)                                              \
            return sw_cuda_st_;                                                \
    } while (0)

/* Makes `device` current after checking it exists; *prev receives the
 * caller's device, to restore (doctor's measurements borrow a device). */
static inline sw_status sw_cuda_select(int device, int *prev) {
    int count = 0;
    *prev = -1;
    sw_status st = SW_CUDA_CHECK(cudaGetDeviceCount(&count));
    if (st != SW_OK)
        return st;
    if (device < 0 || device >= count)
        return sw_errorf(SW_ERR_NO_DEVICE, "no CUDA device visible as cuda:%d (%d visible)",
                         device, count);
    if ((st = SW_CUDA_CHECK(cudaGetDevice(prev))) != SW_OK)
        return st;
    return SW_CUDA_CHECK(cudaSetDevice(device));
}

#endif

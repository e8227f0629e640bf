/*
 * devices.cu — CUDA device discovery (see cuda_devices.h).
 *
 * Turns the runtime's answer into a report or into one message that says
 * why no device is visible and what to do. Without a driver, the static
 * runtime's cudaGetDeviceCount returns cudaErrorInsufficientDriver and
 * cudaDriverGetVersion reports 0 — the same as with a driver too old for
 * this runtime, except that the version is then non-zero. CUDA reads
 * CUDA_VISIBLE_DEVICES once per process, at the first runtime call.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_common.h"
#include "backend/cuda/cuda_devices.h"

#define NO_DEVICE_PREFIX "no CUDA device visible: "

/* Writes a note about CUDA_VISIBLE_DEVICES into buf ("" when it is unset).
 * Any value may hide devices, so a set variable is always named. */
static void visible_devices_note(char *buf, size_t cap, int none_seen) {
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    buf[0] = '\0';
    if (cvd == NULL)
        return;
    if (none_seen || cvd[0] == '\0')
        snprintf(buf, cap, "%sCUDA_VISIBLE_DEVICES='%.64s' hides all devices: "
                 "unset it or list a device index", none_seen ? "; " : "; also, ", cvd);
    else
        snprintf(buf, cap, "; also, CUDA_VISIBLE_DEVICES='%.64s' limits the devices "
                 "CUDA may use: unset it or list valid device indices", cvd);
}

/* Explains a failed (or empty) cudaGetDeviceCount. Returns SW_ERR_NO_DEVICE
 * for the causes a user can fix by setup, SW_ERR_DEVICE for the rest. */
static sw_status explain_no_device(cudaError_t err, int driver_version, int runtime_version) {
    char note[192];
    if (err == cudaErrorNoDevice || err == cudaSuccess) {
        visible_devices_note(note, sizeof note, 1);
        if (note[0] != '\0')
            return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "the driver sees no device%s", note);
        return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "the driver sees no device: "
                         "check nvidia-smi, or in a container run with the GPU exposed "
                         "(e.g. --gpus all)");
    }
    visible_devices_note(note, sizeof note, 0);
    if (err == cudaErrorStubLibrary)
        return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "the libcuda.so that was loaded is "
                         "the CUDA toolkit's stub, not a driver: install the NVIDIA driver, or "
                         "remove the toolkit's lib64/stubs folder from LD_LIBRARY_PATH%s", note);
    if (driver_version == 0)
        return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "no NVIDIA driver found "
                         "(libcuda.so.1 is not loadable): install the NVIDIA driver, or in a "
                         "container run with the GPU exposed (e.g. --gpus all)%s", note);
    if (err == cudaErrorInsufficientDriver)
        return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "the NVIDIA driver supports CUDA "
                         "up to %d.%d but this build uses the CUDA %d.%d runtime: update the "
                         "driver, or rebuild Spillway with a CUDA toolkit no newer than %d.%d%s",
                         driver_version / 1000, driver_version % 1000 / 10,
                         runtime_version / 1000, runtime_version % 1000 / 10,
                         driver_version / 1000, driver_version % 1000 / 10, note);
    return sw_errorf(SW_ERR_DEVICE, "CUDA device discovery failed: cudaGetDeviceCount: %s (%s)%s",
                     cudaGetErrorName(err), cudaGetErrorString(err), note);
}

/* "13.0" for 13000: CUDA encodes versions as 1000 * major + 10 * minor. */
static void version_text(int v, char *buf, size_t cap) {
    snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

/* Reads one device's properties and memory. cudaMemGetInfo needs the
 * device's primary context, which cudaSetDevice creates. */
static sw_status query_one(int index, sw_device_info *out) {
    cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    SW_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
    SW_CUDA_TRY(cudaSetDevice(index));
    SW_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    out->index = index;
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof out->name - 1, prop.name);
    out->total_bytes = total_bytes;
    out->free_bytes = free_bytes;
    out->arch_major = prop.major;        /* compute capability */
    out->arch_minor = prop.minor;
    out->n_compute_units = prop.multiProcessorCount;
    return SW_OK;
}

extern "C" sw_status cuda_device_open(int index, char *name, size_t cap) {
    int n = 0, driver_version = 0, runtime_version = 0;
    if (cudaDriverGetVersion(&driver_version) != cudaSuccess)
        driver_version = 0;
    if (cudaRuntimeGetVersion(&runtime_version) != cudaSuccess)
        runtime_version = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        return explain_no_device(err, driver_version, runtime_version);
    }
    if (index < 0 || index >= n)
        return sw_errorf(SW_ERR_NO_DEVICE, NO_DEVICE_PREFIX "cuda:%d asked for, %d visible",
                         index, n);
    cudaDeviceProp prop;
    SW_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
    SW_CUDA_TRY(cudaSetDevice(index));
    snprintf(name, cap, "cuda:%d %.100s (sm_%d%d)", index, prop.name, prop.major, prop.minor);
    return SW_OK;
}

extern "C" sw_status cuda_devices_query(sw_device_report *report) {
    sw_status st = SW_OK;
    int n = 0, prev_device = -1;
    int driver_version = 0, runtime_version = 0;
    cudaError_t count_err;

    /* Neither call needs a driver: both succeed, the first with 0. */
    if (cudaDriverGetVersion(&driver_version) != cudaSuccess)
        driver_version = 0;
    if (cudaRuntimeGetVersion(&runtime_version) != cudaSuccess)
        runtime_version = 0;
    version_text(runtime_version, report->runtime_version, sizeof report->runtime_version);
    if (driver_version > 0)
        version_text(driver_version, report->driver_version, sizeof report->driver_version);

    count_err = cudaGetDeviceCount(&n);
    if (count_err != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();
        return explain_no_device(count_err, driver_version, runtime_version);
    }
    if (n > SW_MAX_DEVICES)
        n = SW_MAX_DEVICES;

    if ((st = SW_CUDA_CHECK(cudaGetDevice(&prev_device))) != SW_OK)
        goto fail;
    for (int i = 0; i < n; i++) {
        if ((st = query_one(i, &report->devices[i])) != SW_OK)
            goto fail;
    }
    if ((st = SW_CUDA_CHECK(cudaSetDevice(prev_device))) != SW_OK)
        goto fail;
    report->n_devices = (size_t)n;
    return SW_OK;

fail:
    /* Best effort: the first error's message is the one kept. */
    if (prev_device >= 0)
        (void)cudaSetDevice(prev_device);
    (void)cudaGetLastError();
    memset(report->devices, 0, sizeof report->devices);
    report->n_devices = 0;
    return st;
}

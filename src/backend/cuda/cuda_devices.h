/*
 * cuda_devices.h — CUDA device discovery, as plain C (no CUDA types), for
 * backend/registry.c. Implemented in cuda/devices.cu.
 *
 * registry.c includes this (only when the CUDA backend is built), and so
 * does the backend itself (cuda_backend.cu) to open its device.
 */
#ifndef SW_BACKEND_CUDA_DEVICES_H
#define SW_BACKEND_CUDA_DEVICES_H

#include "spillway.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills report->runtime_version and ->driver_version ("13.0"; the driver's
 * stays "" when none is found), ->n_devices and ->devices[] (at most
 * SW_MAX_DEVICES; more are not listed; arch_* is the compute capability,
 * n_compute_units the multiprocessors). The caller zeroes *report first;
 * this leaves backend and message alone.
 *
 * Returns SW_OK with n_devices >= 1, or records a message (sw_errorf) and
 * returns SW_ERR_NO_DEVICE ("no CUDA device visible: <cause and fix>", for
 * a missing/old/stub driver or no device — CUDA_VISIBLE_DEVICES is named
 * whenever it is set) or SW_ERR_DEVICE (any other CUDA failure; n_devices
 * is then 0).
 *
 * Cost: makes the primary context current on each device in order to read
 * its free memory (about 0.1-0.5 s and a few hundred MiB per device on
 * first use). The contexts are left alive for the engine to reuse, and the
 * caller's current device is restored. Thread-safe (CUDA runtime is). */
sw_status cuda_devices_query(sw_device_report *report);

/* Makes device `index` current for the calling thread and writes "cuda:N
 * NAME (sm_XY)" into name. Errors: SW_ERR_NO_DEVICE with the same causes
 * and advice as cuda_devices_query (no driver, an old driver, the stub
 * library, no device, CUDA_VISIBLE_DEVICES), SW_ERR_DEVICE. */
sw_status cuda_device_open(int index, char *name, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

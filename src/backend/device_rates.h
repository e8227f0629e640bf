/*
 * device_rates.h — measuring an accelerator's link, memory and compute
 * rates for doctor, without knowing which backend provides the device.
 *
 * Implemented in backend/registry.c, the one file that knows whether the
 * build has CUDA (STYLE.md 2); without it every call is SW_ERR_NO_DEVICE.
 */
#ifndef SW_BACKEND_DEVICE_RATES_H
#define SW_BACKEND_DEVICE_RATES_H

#include <stdint.h>

#include "spillway.h"

typedef struct backend_device_rates {
    double h2d_pinned_Bps;    /* host-to-device from page-locked memory */
    double h2d_pageable_Bps;  /* host-to-device from ordinary memory */
    double device_mem_Bps;    /* device-to-device copy, read + write bytes */
    double device_flops;      /* the backend's prefill matmul rate */
    double device_op_s;       /* per op: launch and dispatch of an empty kernel */
    double decode_Bps[SW_DOCTOR_DECODE_TYPES]; /* decode matvec over each decode
                                                * type (quant/types.h), bytes/s */
} backend_device_rates;

/* Measures accelerator `index` (as in sw_device_report) with transfers of
 * up to `bytes` (fewer when the device has less free memory). Takes about
 * a second and allocates 2 x bytes on the device, freed before returning.
 * Errors: SW_ERR_NO_DEVICE (no accelerator backend, or no such device),
 * SW_ERR_OOM_DEVICE (too little free device memory for the test; the
 * message names the device, the request and what is free), SW_ERR_DEVICE. */
sw_status backend_measure_device(int index, uint64_t bytes, backend_device_rates *out);

#endif

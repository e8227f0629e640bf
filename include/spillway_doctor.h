/*
 * spillway_doctor.h — the accelerators a process sees (sw_devices_query:
 * a missing device told from a full one) and the rates `spillway doctor`
 * measures for the planner (sw_doctor_*), as spillway.h declares them.
 * Included by spillway.h, at its end; not meant to be included alone.
 */
#ifndef SPILLWAY_DOCTOR_H
#define SPILLWAY_DOCTOR_H

/* ---- devices ------------------------------------------------------------- */

#define SW_MAX_DEVICES 16

/* One accelerator, in its backend's terms. */
typedef struct sw_device_info {
    int index;                   /* backend-local ordinal: N in "cuda:N" */
    char name[128];
    uint64_t total_bytes;
    uint64_t free_bytes;
    int arch_major, arch_minor;  /* architecture version (CUDA: compute capability) */
    int n_compute_units;         /* parallel units (CUDA: multiprocessors) */
} sw_device_info;

typedef struct sw_device_report {
    char backend[16];            /* the accelerator backend built in ("cuda"), "" if none */
    char runtime_version[32];    /* its runtime's version ("13.0"), "" if none */
    char driver_version[32];     /* the driver's ("13.0"), "" if none was found */
    size_t n_devices;
    sw_device_info devices[SW_MAX_DEVICES];
    char message[512];           /* why none are visible, when n_devices==0 */
} sw_device_report;

/* Discovers accelerators. Returns SW_OK with n_devices >= 1, or
 * SW_ERR_NO_DEVICE with report->message (also sw_last_error()) naming the
 * likely cause: backend not compiled in, no driver, CUDA_VISIBLE_DEVICES
 * hiding all devices. A missing device is never reported as out of memory.
 * Errors: SW_ERR_ARG, SW_ERR_NO_DEVICE, SW_ERR_DEVICE. */
SW_API sw_status sw_devices_query(sw_device_report *report);

/* ---- doctor: measured rates for the planner ------------------------------ */

/* sw_doctor_run (`spillway doctor`) measures the rates the planner uses
 * (bytes/s, flop/s: sw_doctor_rates) and sw_doctor_save caches them in
 *   ${XDG_CACHE_HOME:-$HOME/.cache}/spillway/SW_DOCTOR_CACHE_FILE
 * as one flat JSON object, which every plan reads (sw_doctor_load reads it
 * too): sw_doctor_rates's fields under their names, the decode arrays as
 * host_decode_TYPE_Bps and device_decode_TYPE_Bps (TYPE: f16, bf16, q8_0,
 * q4_0, q5_0, q4_k, q5_k, q6_k), plus "version": 1. Without an accelerator
 * the device rates are the sim device's: h2d = the host's memcpy rate,
 * device memory = host memory, device flops = host flops. The report also
 * holds what only `spillway doctor` prints (host facts, each device's own
 * rates, the disk test): to a library it is opaque.
 *
 * Example
 *   sw_doctor_options o = sw_doctor_options_default();
 *   sw_doctor_report *r;  char path[4096];
 *   if (sw_doctor_run(&o, &r) == SW_OK && sw_doctor_save(r, path, sizeof path) == SW_OK)
 *       printf("host memory %.1f GB/s, cached in %s\n",
 *              sw_doctor_report_rates(r)->host_mem_Bps / 1e9, path);
 *   sw_doctor_report_destroy(r);
 */
#define SW_DOCTOR_CACHE_FILE "doctor.json"

/* The weight types doctor times the decode matmul on, in this order:
 * F16 BF16 Q8_0 Q4_0 Q5_0 Q4_K Q5_K Q6_K (sw_doctor_decode_type_name). */
#define SW_DOCTOR_DECODE_TYPES 8

/* "BF16", ... for index i of the list above; "?" outside it. */
SW_API const char *sw_doctor_decode_type_name(int i);

typedef struct sw_doctor_options {
    int quick;              /* small buffers, few runs (under ~3 s): rough rates */
    const char *model_path; /* file whose read speed is measured; NULL: the default
                             * model if present, else a temp file in the cache folder */
    int n_threads;          /* host measurement threads; 0 = all cores */
} sw_doctor_options;

SW_API sw_doctor_options sw_doctor_options_default(void);

/* What the cache holds. Rates of 0 are unknown: the planner uses its
 * defaults for them (a decode rate of 0: the memory rate stands in). */
typedef struct sw_doctor_rates {
    double h2d_pinned_Bps;   /* host-to-device from page-locked memory */
    double h2d_pageable_Bps; /* host-to-device from ordinary memory */
    double host_mem_Bps;     /* host memory read, all threads */
    double device_mem_Bps;   /* device memory: copy, read + write bytes */
    double disk_read_Bps;    /* the model file's sequential read */
    double host_flops;       /* the CPU backend's f32 matmul */
    double device_flops;     /* the device's prefill matmul */
    double device_op_s;      /* least seconds per device op: launch and dispatch */
    double host_decode_Bps[SW_DOCTOR_DECODE_TYPES];   /* the decode matmul, one token, */
    double device_decode_Bps[SW_DOCTOR_DECODE_TYPES]; /* weight bytes/s of each type */
    double memcpy_Bps;       /* one thread's memcpy (the sim device's link) */
    int64_t measured_at;     /* unix seconds */
    int quick;               /* 1: measured with small buffers, rough */
    char host[256];          /* the machine measured */
    char device[160];        /* whose device rates these are: "sim", "cuda:0 NVIDIA H200" */
} sw_doctor_rates;

typedef struct sw_doctor_report sw_doctor_report;

/* Gathers the facts and runs the measurements (about 10 s; quick: < 3 s)
 * into a new report *out, destroyed with sw_doctor_report_destroy. No
 * device is an answer, not a failure; so is a disk that could not be
 * measured. Prints nothing, writes nothing except a temp file in the cache
 * folder that it removes. Errors: SW_ERR_ARG, SW_ERR_OOM_HOST (*out NULL). */
SW_API sw_status sw_doctor_run(const sw_doctor_options *opt, sw_doctor_report **out);
SW_API void sw_doctor_report_destroy(sw_doctor_report *report); /* accepts NULL */

/* The report's planner rates, borrowed until the report is destroyed. */
SW_API const sw_doctor_rates *sw_doctor_report_rates(const sw_doctor_report *report);

/* Writes the report's rates to the cache folder's SW_DOCTOR_CACHE_FILE
 * atomically (temp file + rename), creating the folder. path_out (may be
 * NULL) receives the file's path. Errors: SW_ERR_ARG, SW_ERR_IO (message
 * names the path and the reason). */
SW_API sw_status sw_doctor_save(const sw_doctor_report *report, char *path_out, size_t cap);

/* Reads the cache file into *out (keys it lacks, and rates that are not
 * positive, read as 0); path_out (may be NULL) receives its path. Errors:
 * SW_ERR_IO (no cache yet: run `spillway doctor`), SW_ERR_FORMAT (not a
 * flat JSON object; the message names the path and the offset). */
SW_API sw_status sw_doctor_load(sw_doctor_rates *out, char *path_out, size_t cap);

#endif /* SPILLWAY_DOCTOR_H */

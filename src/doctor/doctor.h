/*
 * doctor.h — all that sw_doctor_run finds (struct sw_doctor_report, opaque
 * in spillway.h), for `spillway doctor` (cli/doctor.c) to print, and the
 * doctor files' interfaces to each other. One concern per file:
 *
 *   doctor.c   the report: host facts, device discovery (sw_devices_query),
 *              which device's rates the planner gets; its lifecycle
 *   measure.c  every measurement: host memory, compute, decode, memcpy,
 *              each device (backend/device_rates.h), the disk
 *   cache.c    the cache file (doctor.json): written by sw_doctor_save,
 *              read by sw_doctor_load and the planner (plan/rates.c)
 *
 * Backend-neutral: a device is its backend's name and index ("cuda:0");
 * nothing here knows CUDA.
 */
#ifndef SW_DOCTOR_DOCTOR_H
#define SW_DOCTOR_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "backend/device_rates.h"
#include "spillway.h"

/* One accelerator's measurement; rates zero when status != SW_OK. */
typedef struct doctor_device {
    sw_status status;            /* SW_OK, or why it could not be measured */
    char message[256];           /* the reason when status != SW_OK */
    uint64_t test_bytes;         /* transfer size used */
    backend_device_rates rates;
} doctor_device;

struct sw_doctor_report {
    double elapsed_s;                /* wall time of the whole run */
    /* devices */
    sw_device_report devices;        /* sw_devices_query's answer */
    sw_status devices_status;        /* SW_OK, SW_ERR_NO_DEVICE (devices.message
                                      * says why) or SW_ERR_DEVICE */
    doctor_device device[SW_MAX_DEVICES]; /* per devices.devices[i] */
    /* host facts (the host's name is rates.host) */
    int n_cpus;                      /* online cores */
    int n_threads;                   /* threads the host measurements used */
    uint64_t host_total_bytes;       /* /proc/meminfo MemTotal; 0 if unknown */
    uint64_t host_available_bytes;   /* MemAvailable; 0 if unknown */
    uint64_t memlock_limit_bytes;    /* RLIMIT_MEMLOCK (page-locked = pinned host
                                      * memory); UINT64_MAX: unlimited */
    /* host measurement sizes (the rates are in rates) */
    uint64_t host_mem_test_bytes;
    uint32_t host_flops_n, host_flops_tokens; /* f32 matmul n x n, tokens */
    uint64_t host_decode_test_bytes; /* weights per decode type */
    uint64_t memcpy_test_bytes;
    /* disk (the rate is rates.disk_read_Bps: 0 when not measured) */
    char disk_path[4096];            /* file read; "" when none */
    int disk_temp_file;              /* 1: no model, a temp file was written */
    uint64_t disk_read_bytes;
    double disk_cached_fraction;     /* share already in the page cache when
                                      * the read began (0..1) */
    char disk_message[256];          /* why not measured, or a caveat */
    /* cache folder */
    char cache_dir[4096];
    uint64_t cache_free_bytes;       /* free space for this user there */
    /* what the planner gets (sw_doctor_save writes it): the host's own
     * measurements, and the first measured device's rates, or the sim
     * device's (rates_from_sim), or 0 for a device that could not be
     * measured */
    int rates_from_sim;
    sw_doctor_rates rates;
};

/* ---- measure.c ----------------------------------------------------------- */

/* Runs every measurement for r, whose devices, cache folder and host facts
 * are filled: the host's (rates.host_*, rates.memcpy_Bps and the sizes),
 * each visible device's (device[], failures kept per device) and the
 * disk's (-m, else the default model if present, else a temp file in the
 * cache folder; failures become disk_message). quick: small buffers.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST (host buffers). */
sw_status doctor_measure(const sw_doctor_options *opt, int n_threads, sw_doctor_report *r);

/* ---- cache.c ------------------------------------------------------------- */

/* Creates dir and its missing parents (mode 0755). Errors: SW_ERR_ARG (too
 * long), SW_ERR_IO (names the folder). */
sw_status doctor_make_dirs(const char *dir);

/* Parses the cache file's text[0..len) into *out (zeroed first): one flat
 * object; numbers under known keys are kept when in (0, 1e18], strings
 * under "host" and "device" copied, other keys, strings, booleans and null
 * skipped, nested values refused. Errors: SW_ERR_FORMAT naming the offset. */
sw_status doctor_cache_parse(const char *text, size_t len, sw_doctor_rates *out);

#endif

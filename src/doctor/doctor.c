/*
 * doctor.c — sw_doctor_run: the report behind `spillway doctor` (doctor.h
 * says which file holds which part). Here: the host's facts, the devices
 * sw_devices_query finds, the run itself, and which rates the planner
 * gets.
 *
 * A missing accelerator is a fact to report, never a failure and never
 * "out of memory": the report keeps sw_devices_query's own message, and the
 * planner's device rates become the sim device's (memcpy link, host memory,
 * host compute). A visible device that could not be measured gets rates of
 * 0 (unknown), so the planner falls back to its defaults rather than to
 * host numbers that would misstate the card.
 * Linux-specific facts (/proc/meminfo) read as 0 where unavailable.
 */
#define _DEFAULT_SOURCE /* gethostname, statvfs */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "quant/types.h"
#include "util/clock.h"
#include "util/error.h"

#define DOCTOR_MAX_THREADS 64       /* more rarely adds memory bandwidth */

const char *sw_doctor_decode_type_name(int i) {
    return i >= 0 && i < SW_DOCTOR_DECODE_TYPES ? type_name(type_decode_type(i)) : "?";
}

sw_doctor_options sw_doctor_options_default(void) {
    sw_doctor_options o;
    memset(&o, 0, sizeof o);
    return o;
}

/* ---- host facts --------------------------------------------------------- */

/* MemTotal and MemAvailable from /proc/meminfo (kB there); 0 if absent. */
static void read_meminfo(uint64_t *total, uint64_t *available) {
    char line[256];
    unsigned long long kb;
    *total = *available = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            *total = (uint64_t)kb * 1024;
        else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            *available = (uint64_t)kb * 1024;
    }
    fclose(f);
}

/* Free bytes for an unprivileged user on the file system holding `dir`,
 * or its nearest existing parent when dir does not exist yet. */
static uint64_t free_space(const char *dir) {
    char path[4096];
    struct statvfs vfs;
    snprintf(path, sizeof path, "%s", dir);
    for (;;) {
        if (statvfs(path, &vfs) == 0)
            return (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
        char *slash = strrchr(path, '/');
        if (slash == NULL || slash == path)
            return 0;
        *slash = '\0';
    }
}

static void host_facts(sw_doctor_report *r) {
    struct rlimit rl;
    char *host = r->rates.host;
    if (gethostname(host, sizeof r->rates.host) != 0)
        snprintf(host, sizeof r->rates.host, "unknown");
    host[sizeof r->rates.host - 1] = '\0';
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    r->n_cpus = n < 1 ? 1 : n > INT32_MAX ? INT32_MAX : (int)n;
    read_meminfo(&r->host_total_bytes, &r->host_available_bytes);
    r->memlock_limit_bytes = 0;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        r->memlock_limit_bytes = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

/* ---- the planner's rates ------------------------------------------------- */

/* The device rates the planner uses: the first measured device's, the sim
 * device's when none is visible, unknown (0) when one is visible but
 * could not be measured. The host's are already in r->rates. */
static void choose_rates(sw_doctor_report *r) {
    sw_doctor_rates *out = &r->rates;
    const char *backend = r->devices.backend;
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const backend_device_rates *d = &r->device[i].rates;
        if (r->device[i].status != SW_OK)
            continue;
        snprintf(out->device, sizeof out->device, "%s:%d %s", backend,
                 r->devices.devices[i].index, r->devices.devices[i].name);
        out->h2d_pinned_Bps = d->h2d_pinned_Bps;
        out->h2d_pageable_Bps = d->h2d_pageable_Bps;
        out->device_mem_Bps = d->device_mem_Bps;
        out->device_flops = d->device_flops;
        out->device_op_s = d->device_op_s;
        memcpy(out->device_decode_Bps, d->decode_Bps, sizeof out->device_decode_Bps);
        return;
    }
    if (r->devices.n_devices > 0) {
        snprintf(out->device, sizeof out->device, "%s:%d (not measured)", backend,
                 r->devices.devices[0].index);
        return;
    }
    r->rates_from_sim = 1;
    snprintf(out->device, sizeof out->device, "sim");
    out->h2d_pinned_Bps = out->memcpy_Bps;
    out->h2d_pageable_Bps = out->memcpy_Bps;
    out->device_mem_Bps = out->host_mem_Bps;
    out->device_flops = out->host_flops;
    memcpy(out->device_decode_Bps, out->host_decode_Bps, sizeof out->device_decode_Bps);
}

/* ---- the run ------------------------------------------------------------- */

/* Fills the zeroed report r. */
static sw_status run(const sw_doctor_options *opt, sw_doctor_report *r) {
    double t0 = sw_clock_s();
    r->rates.quick = opt->quick != 0;
    r->rates.measured_at = (int64_t)time(NULL);
    sw_status st = sw_cache_dir(r->cache_dir, sizeof r->cache_dir);
    if (st != SW_OK)
        return st;
    r->cache_free_bytes = free_space(r->cache_dir);
    host_facts(r);
    r->devices_status = sw_devices_query(&r->devices);
    if (r->devices_status == SW_ERR_ARG)
        return r->devices_status;
    int n_threads = opt->n_threads > 0 ? opt->n_threads : r->n_cpus;
    if (n_threads > DOCTOR_MAX_THREADS)
        n_threads = DOCTOR_MAX_THREADS;
    if ((st = doctor_measure(opt, n_threads, r)) != SW_OK)
        return st;
    choose_rates(r);
    r->elapsed_s = sw_clock_s() - t0;
    return SW_OK;
}

sw_status sw_doctor_run(const sw_doctor_options *opt, sw_doctor_report **out) {
    if (out != NULL)
        *out = NULL;
    if (opt == NULL || out == NULL || opt->n_threads < 0)
        return sw_errorf(SW_ERR_ARG, "sw_doctor_run: %s",
                         opt == NULL || out == NULL ? "NULL argument" : "n_threads < 0");
    sw_doctor_report *r = calloc(1, sizeof *r);
    if (r == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for the doctor report "
                         "(%zu bytes)", sizeof *r);
    sw_status st = run(opt, r);
    if (st != SW_OK) {
        free(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

void sw_doctor_report_destroy(sw_doctor_report *report) {
    free(report);
}

const sw_doctor_rates *sw_doctor_report_rates(const sw_doctor_report *report) {
    return report != NULL ? &report->rates : NULL;
}

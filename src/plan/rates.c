/*
 * rates.c — the speeds the cost model divides by: stated defaults, or what
 * `spillway doctor` measured and cached (a flat JSON object of numbers),
 * and how much host memory a plan may use. The only file in src/plan/ that
 * reads the machine; plan_build never calls it.
 *
 * The doctor cache file is doctor/cache.c's to read (doctor_cache_parse,
 * sw_doctor_load); here its rates replace the defaults they are known for.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_AVPHYS_PAGES) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "plan/plan_api.h"

void plan_rates_default(plan_rates *r) {
    memset(r, 0, sizeof *r);
    r->h2d_pinned_Bps = 20e9;
    r->h2d_pageable_Bps = 8e9;
    r->host_mem_Bps = 20e9;
    r->device_mem_Bps = 1e12;
    r->disk_read_Bps = 1e9;
    r->host_flops = 1e11;
    r->device_flops = 2e13;
    r->device_op_s = 5e-6;
    r->measured = false;
}

void plan_rates_for_sim(plan_rates *r, double sim_link_Bps) {
    r->device_mem_Bps = r->host_mem_Bps;
    memcpy(r->device_decode_Bps, r->host_decode_Bps, sizeof r->device_decode_Bps);
    r->device_flops = r->host_flops;
    r->h2d_pinned_Bps = sim_link_Bps > 0 ? sim_link_Bps : r->host_mem_Bps;
    r->h2d_pageable_Bps = r->h2d_pinned_Bps;
    r->device_op_s = 0;
}

/* Each rate the cache knows (positive: the reader dropped the rest)
 * replaces the default. */
static void rates_from_doctor(const sw_doctor_rates *d, plan_rates *r) {
    const struct { double from; double *to; } one[] = {
        {d->h2d_pinned_Bps, &r->h2d_pinned_Bps}, {d->h2d_pageable_Bps, &r->h2d_pageable_Bps},
        {d->host_mem_Bps, &r->host_mem_Bps}, {d->device_mem_Bps, &r->device_mem_Bps},
        {d->disk_read_Bps, &r->disk_read_Bps}, {d->host_flops, &r->host_flops},
        {d->device_flops, &r->device_flops}, {d->device_op_s, &r->device_op_s},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if (one[i].from > 0)
            *one[i].to = one[i].from;
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        if (d->host_decode_Bps[i] > 0)
            r->host_decode_Bps[i] = d->host_decode_Bps[i];
        if (d->device_decode_Bps[i] > 0)
            r->device_decode_Bps[i] = d->device_decode_Bps[i];
    }
    r->measured = true;
}

sw_status plan_rates_parse(const char *json, size_t len, plan_rates *out) {
    sw_doctor_rates d;
    plan_rates_default(out);
    sw_status st = doctor_cache_parse(json, len, &d);
    if (st == SW_OK)
        rates_from_doctor(&d, out);
    return st;
}

sw_status plan_rates_load_cache(plan_rates *out) {
    sw_doctor_rates d;
    plan_rates_default(out);
    sw_status st = sw_doctor_load(&d, NULL, 0);
    if (st == SW_OK)
        rates_from_doctor(&d, out);
    return st;
}

/* MemAvailable from /proc/meminfo in bytes, 0 if unreadable. */
static uint64_t meminfo_available(void) {
    char line[256];
    unsigned long long kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return kib > UINT64_MAX / 1024 ? 0 : (uint64_t)kib * 1024;
}

uint64_t plan_host_available(uint64_t host_mem_bytes) {
    uint64_t avail = meminfo_available();
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    if (avail == 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0)
            avail = (uint64_t)pages * (uint64_t)page;
    }
#endif
    if (avail == 0)
        return host_mem_bytes ? host_mem_bytes : 8ull << 30;
    return host_mem_bytes && host_mem_bytes < avail ? host_mem_bytes : avail;
}

/*
 * doctor.c — sw_doctor_run and sw_doctor_save: the facts and measured rates
 * behind `spillway doctor`, and the cache file the planner reads.
 *
 * A missing accelerator is a fact to report, never a failure and never
 * "out of memory": the report keeps sw_devices_query's own message, and the
 * planner's device rates become the sim device's (memcpy link, host memory,
 * host compute). A visible device that could not be measured gets rates of
 * 0 (unknown), so the planner falls back to its defaults rather than to
 * host numbers that would misstate the card.
 * Linux-specific facts (/proc/meminfo) read as 0 where unavailable.
 */
#define _DEFAULT_SOURCE /* gethostname, statvfs, mkstemp, fchmod, fsync */

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/threadpool.h"
#include "backend/device_rates.h"
#include "doctor/measure.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/clock.h"

#define MIB (1024ull * 1024ull)
#define DOCTOR_MAX_THREADS 64       /* more rarely adds memory bandwidth */
#define DISK_MIN_FREE_FACTOR 4      /* temp file only with 4x its size free */
#define CACHED_MOSTLY 0.5           /* above: the rate is the page cache's */

/* How much work each measurement does; quick keeps the whole run < 3 s
 * on a 2-core machine (and under the sanitizers). */
typedef struct doctor_sizes {
    uint64_t host_read_bytes;
    int host_read_runs;
    uint64_t memcpy_bytes;
    int memcpy_runs;
    uint32_t flops_n, flops_tokens;  /* 64 tokens: the default prefill chunk */
    int flops_runs;
    uint64_t disk_max_bytes, disk_temp_bytes;
    uint64_t device_bytes;
    uint64_t decode_bytes;           /* weights per decode-matmul test (each type) */
} doctor_sizes;

static const doctor_sizes SIZES_FULL = {256 * MIB, 5, 256 * MIB, 3, 4096, 64, 3,
                                        1024 * MIB, 256 * MIB, 256 * MIB, 128 * MIB};
static const doctor_sizes SIZES_QUICK = {32 * MIB, 3, 16 * MIB, 3, 1024, 32, 2,
                                         32 * MIB, 8 * MIB, 32 * MIB, 8 * MIB};

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
    if (gethostname(r->hostname, sizeof r->hostname) != 0)
        snprintf(r->hostname, sizeof r->hostname, "unknown");
    r->hostname[sizeof r->hostname - 1] = '\0';
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    r->n_cpus = n < 1 ? 1 : n > INT32_MAX ? INT32_MAX : (int)n;
    read_meminfo(&r->host_total_bytes, &r->host_available_bytes);
    r->memlock_limit_bytes = 0;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
        r->memlock_limit_bytes = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

/* Creates dir and its missing parents (mode 0755). Errors: SW_ERR_IO. */
static sw_status make_dirs(const char *dir) {
    char path[4096];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof path)
        return sw_errorf(SW_ERR_ARG, "cache folder path is too long");
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return sw_errorf(SW_ERR_IO, "cannot create the cache folder %s: %s", path,
                             strerror(errno));
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return sw_errorf(SW_ERR_IO, "cannot use the cache folder %s: not a folder", dir);
    return SW_OK;
}

/* ---- measurements -------------------------------------------------------- */

static sw_status measure_host(const doctor_sizes *z, int n_threads, sw_doctor_report *r) {
    cpu_pool *pool = NULL;
    sw_status st = cpu_pool_create(n_threads, &pool);
    if (st != SW_OK)
        return st;
    r->n_threads = cpu_pool_size(pool);
    r->host_mem_test_bytes = z->host_read_bytes;
    r->memcpy_test_bytes = z->memcpy_bytes;
    r->host_flops_n = z->flops_n;
    r->host_flops_tokens = z->flops_tokens;
    if ((st = measure_host_read(pool, z->host_read_bytes, z->host_read_runs,
                                &r->host_mem_Bps)) == SW_OK &&
        (st = measure_memcpy(z->memcpy_bytes, z->memcpy_runs, &r->memcpy_Bps)) == SW_OK &&
        (st = measure_host_flops(pool, z->flops_n, z->flops_tokens, z->flops_runs,
                                 &r->host_flops)) == SW_OK) {
        r->host_decode_test_bytes = z->decode_bytes;
        for (int i = 0; st == SW_OK && i < SW_DOCTOR_DECODE_TYPES; i++)
            st = measure_host_decode(pool, type_decode_type(i), z->decode_bytes,
                                     z->host_read_runs, &r->host_decode_Bps[i]);
    }
    cpu_pool_destroy(pool);
    return st;
}

/* Measures each visible device; a failure is kept per device. */
static void measure_devices(const doctor_sizes *z, sw_doctor_report *r) {
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        sw_doctor_device *d = &r->device[i];
        backend_device_rates rates;
        d->test_bytes = z->device_bytes;
        d->status = backend_measure_device(r->devices.devices[i].index, z->device_bytes, &rates);
        if (d->status != SW_OK) {
            snprintf(d->message, sizeof d->message, "%s", sw_last_error());
            continue;
        }
        d->h2d_pinned_Bps = rates.h2d_pinned_Bps;
        d->h2d_pageable_Bps = rates.h2d_pageable_Bps;
        d->device_mem_Bps = rates.device_mem_Bps;
        d->device_flops = rates.device_flops;
        d->device_op_s = rates.device_op_s;
        memcpy(d->decode_Bps, rates.decode_Bps, sizeof d->decode_Bps);
    }
}

/* For a Hugging Face folder: its largest .safetensors file (the one the
 * read speed matters most for) into out; the folder itself otherwise. */
static void pick_weights_file(const char *path, char *out, size_t cap) {
    struct stat sb;
    snprintf(out, cap, "%s", path);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return;
    DIR *d = opendir(path);
    struct dirent *e;
    off_t best = -1;
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char full[4096];
        if (n < 12 || strcmp(e->d_name + n - 12, ".safetensors") != 0)
            continue;
        if ((size_t)snprintf(full, sizeof full, "%s/%s", path, e->d_name) >= sizeof full)
            continue;
        if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > best) {
            best = sb.st_size;
            snprintf(out, cap, "%s", full);
        }
    }
    if (d != NULL)
        closedir(d);
}

/* The model file (-m, else the default model when present), else a temp
 * file in the cache folder. Failures become disk_message. */
static void measure_disk(const sw_doctor_options *opt, const doctor_sizes *z,
                         sw_doctor_report *r) {
    char def[4096];
    measure_file_result res;
    sw_status st;
    const char *path = opt->model_path;
    if (path == NULL && sw_default_model_path(def, sizeof def) == SW_OK && access(def, R_OK) == 0)
        path = def;
    if (path != NULL) {
        pick_weights_file(path, r->disk_path, sizeof r->disk_path);
        st = measure_file_read(r->disk_path, z->disk_max_bytes, &res);
    } else if (r->cache_free_bytes < DISK_MIN_FREE_FACTOR * z->disk_temp_bytes) {
        snprintf(r->disk_message, sizeof r->disk_message, "not measured: no model file, and "
                 "only %llu MiB free in %.150s for a test file",
                 (unsigned long long)(r->cache_free_bytes / MIB), r->cache_dir);
        return;
    } else {
        r->disk_temp_file = 1;
        st = make_dirs(r->cache_dir);
        if (st == SW_OK)
            st = measure_temp_file_read(r->cache_dir, z->disk_temp_bytes, &res);
        snprintf(r->disk_path, sizeof r->disk_path, "%.*s/.doctor-read-*",
                 (int)sizeof r->disk_path - 32, r->cache_dir);
    }
    if (st != SW_OK) {
        snprintf(r->disk_message, sizeof r->disk_message, "not measured: %s", sw_last_error());
        return;
    }
    r->disk_read_bytes = res.bytes;
    r->disk_read_Bps = res.Bps;
    r->disk_cached_fraction = res.cached_fraction;
    if (res.cached_fraction > CACHED_MOSTLY)
        snprintf(r->disk_message, sizeof r->disk_message, "%.0f%% of the bytes were already in "
                 "the page cache and could not be dropped: this is the page cache's rate, not "
                 "the disk's", res.cached_fraction * 100.0);
}

/* The rates the planner uses: the first measured device's, the sim
 * device's when none is visible, unknown (0) when one is visible but
 * could not be measured. */
static void choose_rates(sw_doctor_report *r) {
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const sw_doctor_device *d = &r->device[i];
        if (d->status != SW_OK)
            continue;
        snprintf(r->rates_device, sizeof r->rates_device, "cuda:%d %s",
                 r->devices.devices[i].index, r->devices.devices[i].name);
        r->h2d_pinned_Bps = d->h2d_pinned_Bps;
        r->h2d_pageable_Bps = d->h2d_pageable_Bps;
        r->device_mem_Bps = d->device_mem_Bps;
        r->device_flops = d->device_flops;
        r->device_op_s = d->device_op_s;
        memcpy(r->device_decode_Bps, d->decode_Bps, sizeof r->device_decode_Bps);
        return;
    }
    if (r->devices.n_devices > 0) {
        snprintf(r->rates_device, sizeof r->rates_device, "cuda:%d (not measured)",
                 r->devices.devices[0].index);
        return;
    }
    r->rates_from_sim = 1;
    snprintf(r->rates_device, sizeof r->rates_device, "sim");
    r->h2d_pinned_Bps = r->memcpy_Bps;
    r->h2d_pageable_Bps = r->memcpy_Bps;
    r->device_mem_Bps = r->host_mem_Bps;
    r->device_flops = r->host_flops;
    memcpy(r->device_decode_Bps, r->host_decode_Bps, sizeof r->device_decode_Bps);
}

sw_status sw_doctor_run(const sw_doctor_options *opt, sw_doctor_report *out) {
    if (opt == NULL || out == NULL || opt->n_threads < 0)
        return sw_errorf(SW_ERR_ARG, "sw_doctor_run: %s",
                         opt == NULL || out == NULL ? "NULL argument" : "n_threads < 0");
    double t0 = sw_clock_s();
    const doctor_sizes *z = opt->quick ? &SIZES_QUICK : &SIZES_FULL;
    memset(out, 0, sizeof *out);
    out->quick = opt->quick != 0;
    out->measured_at = (int64_t)time(NULL);
    sw_status st = sw_cache_dir(out->cache_dir, sizeof out->cache_dir);
    if (st != SW_OK)
        return st;
    out->cache_free_bytes = free_space(out->cache_dir);
    host_facts(out);
    out->devices_status = sw_devices_query(&out->devices);
    if (out->devices_status == SW_ERR_ARG)
        return out->devices_status;
    int n_threads = opt->n_threads > 0 ? opt->n_threads : out->n_cpus;
    if (n_threads > DOCTOR_MAX_THREADS)
        n_threads = DOCTOR_MAX_THREADS;
    if ((st = measure_host(z, n_threads, out)) != SW_OK)
        return st;
    measure_devices(z, out);
    measure_disk(opt, z, out);
    choose_rates(out);
    out->elapsed_s = sw_clock_s() - t0;
    return SW_OK;
}

/* ---- the cache file ------------------------------------------------------- */

/* A JSON number; non-finite values (never expected) become 0. */
static void put_number(FILE *f, const char *key, double v) {
    fprintf(f, "\"%s\":%.6g,", key, isfinite(v) ? v : 0.0);
}

/* A JSON string; control characters become spaces (names only). */
static void put_string(FILE *f, const char *key, const char *s) {
    fprintf(f, "\"%s\":\"", key);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else
            fputc(*p < 0x20 ? ' ' : *p, f);
    }
    fputc('"', f);
}

/* One flat object: the planner's numeric keys first, then the context. */
static void write_cache_json(FILE *f, const sw_doctor_report *r) {
    fputc('{', f);
    put_number(f, "h2d_pinned_Bps", r->h2d_pinned_Bps);
    put_number(f, "h2d_pageable_Bps", r->h2d_pageable_Bps);
    put_number(f, "host_mem_Bps", r->host_mem_Bps);
    put_number(f, "device_mem_Bps", r->device_mem_Bps);
    put_number(f, "disk_read_Bps", r->disk_read_Bps);
    put_number(f, "host_flops", r->host_flops);
    put_number(f, "device_flops", r->device_flops);
    put_number(f, "device_op_s", r->device_op_s);
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        char key[48];
        snprintf(key, sizeof key, "host_decode_%s_Bps", type_decode_key(i));
        put_number(f, key, r->host_decode_Bps[i]);
        snprintf(key, sizeof key, "device_decode_%s_Bps", type_decode_key(i));
        put_number(f, key, r->device_decode_Bps[i]);
    }
    put_number(f, "memcpy_Bps", r->memcpy_Bps);
    fprintf(f, "\"measured_at\":%lld,\"quick\":%d,\"version\":1,", (long long)r->measured_at,
            r->quick ? 1 : 0);
    put_string(f, "host", r->hostname);
    fputc(',', f);
    put_string(f, "device", r->rates_device);
    fputs("}\n", f);
}

/* Writes the JSON to an open temp file and syncs it; closes f. */
static sw_status finish_temp(FILE *f, const sw_doctor_report *r, const char *tmp) {
    write_cache_json(f, r);
    int bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return sw_errorf(SW_ERR_IO, "cannot write %s: %s", tmp, strerror(e));
    return SW_OK;
}

sw_status sw_doctor_save(const sw_doctor_report *r, char *path_out, size_t cap) {
    char path[4200], tmp[4200];
    if (r == NULL || r->cache_dir[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "sw_doctor_save: no report");
    snprintf(path, sizeof path, "%s/%s", r->cache_dir, SW_DOCTOR_CACHE_FILE);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", r->cache_dir, SW_DOCTOR_CACHE_FILE);
    if (path_out != NULL && cap > 0)
        snprintf(path_out, cap, "%s", path);
    sw_status st = make_dirs(r->cache_dir);
    if (st != SW_OK)
        return sw_error_prefix(st, "cannot save the doctor cache %s", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        st = sw_errorf(SW_ERR_IO, "cannot save the doctor cache %s: cannot create a file in "
                       "%s: %s", path, r->cache_dir, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return st;
    }
    (void)fchmod(fd, 0644); /* mkstemp's 0600 would hide it from other tools */
    if ((st = finish_temp(f, r, tmp)) != SW_OK) {
        unlink(tmp);
        return st;
    }
    if (rename(tmp, path) != 0) {
        st = sw_errorf(SW_ERR_IO, "cannot save the doctor cache %s: rename: %s", path,
                       strerror(errno));
        unlink(tmp);
    }
    return st;
}

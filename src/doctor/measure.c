/*
 * measure.c — every measurement doctor makes (doctor_measure, doctor.h):
 * host memory read bandwidth, memcpy (the sim device's link), the CPU
 * backend's f32 matmul and decode matmul rates, each visible device
 * through backend/device_rates.h, and a file's sequential read speed.
 *
 * Each rate is the best of a few timed runs after a warm-up, because the
 * planner wants what the hardware can do, not a noisy average. Buffers are
 * allocated per test and freed before it returns; nothing is kept. The
 * read loops keep several independent sums so a core issues loads back to
 * back; the sums land in a volatile sink so the compiler cannot drop the
 * reads. Buffers are first touched by the threads that later read them, so
 * on multi-socket hosts each slice sits in its reader's memory node.
 * Linux-specific: mincore() tells how much of a file was already cached.
 */
#define _DEFAULT_SOURCE /* mincore, posix_fadvise, mkstemp, clock_gettime */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/threadpool.h"
#include "doctor/doctor.h"
#include "quant/random.h"
#include "quant/types.h"
#include "util/clock.h"
#include "util/error.h"

#define MIB (1024ull * 1024ull)
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

typedef struct measure_file_result {
    uint64_t bytes;           /* bytes read */
    double Bps;
    double cached_fraction;   /* share of those bytes in the page cache at the
                               * start, after asking the kernel to drop them */
} measure_file_result;

enum {
    MEASURE_MAX_THREADS = 256,        /* per-thread sums in a read job */
    MEASURE_IO_CHUNK = 8 << 20,       /* read()/write() size for file tests */
    MEASURE_LINE_WORDS = 8            /* one 64-byte cache line of uint64 */
};

static volatile uint64_t measure_sink; /* keeps measured reads alive */


/* 64-byte aligned buffer of at least `bytes`, or NULL. */
static void *alloc_aligned(uint64_t bytes) {
    uint64_t rounded = (bytes + 63) & ~(uint64_t)63;
    if (rounded == 0 || rounded > SIZE_MAX)
        return NULL;
    return aligned_alloc(64, (size_t)rounded);
}

/* ---- host memory read bandwidth ---------------------------------------- */

typedef struct read_job {
    uint64_t *words;
    uint64_t n_words;
    int fill;                                   /* 1: write the pattern */
    uint64_t sums[MEASURE_MAX_THREADS][MEASURE_LINE_WORDS]; /* a line each */
} read_job;

/* Thread ith's slice [w0, w1) of the buffer, in whole cache lines. */
static void read_slice(const read_job *j, int ith, int nth, uint64_t *w0, uint64_t *w1) {
    uint64_t lines = j->n_words / MEASURE_LINE_WORDS;
    *w0 = lines * (uint64_t)ith / (uint64_t)nth * MEASURE_LINE_WORDS;
    *w1 = lines * (uint64_t)(ith + 1) / (uint64_t)nth * MEASURE_LINE_WORDS;
}

static void read_task(void *arg, int ith, int nth) {
    read_job *j = arg;
    uint64_t w0, w1;
    read_slice(j, ith, nth, &w0, &w1);
    uint64_t *p = j->words;
    if (j->fill) {
        for (uint64_t i = w0; i < w1; i++)
            p[i] = i * 0x9e3779b97f4a7c15u;
        return;
    }
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (uint64_t i = w0; i < w1; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    j->sums[ith][0] = s0 ^ s1 ^ s2 ^ s3;
}

/* Read bandwidth over a `bytes` buffer (much larger than the caches), all
 * of pool's threads reading disjoint slices, best of n_runs.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
static sw_status measure_host_read(cpu_pool *pool, uint64_t bytes, int n_runs, double *Bps) {
    if (Bps == NULL || bytes < 4096 || n_runs < 1 || cpu_pool_size(pool) > MEASURE_MAX_THREADS)
        return sw_errorf(SW_ERR_ARG, "measure_host_read: bad arguments");
    *Bps = 0;
    read_job *j = calloc(1, sizeof *j);
    uint64_t *buf = alloc_aligned(bytes);
    if (j == NULL || buf == NULL) {
        free(j);
        free(buf);
        return sw_errorf(SW_ERR_OOM_HOST, "doctor: cannot allocate %llu MiB of host memory "
                         "for the memory bandwidth test", (unsigned long long)(bytes >> 20));
    }
    j->words = buf;
    j->n_words = bytes / sizeof(uint64_t);
    j->fill = 1;
    cpu_pool_run(pool, read_task, j);   /* first touch by the readers */
    j->fill = 0;
    cpu_pool_run(pool, read_task, j);   /* warm-up: TLB, page tables */
    double best = 0;
    for (int r = 0; r < n_runs; r++) {
        double t0 = sw_clock_s();
        cpu_pool_run(pool, read_task, j);
        double dt = sw_clock_s() - t0;
        if (dt > 0 && (double)bytes / dt > best)
            best = (double)bytes / dt;
    }
    measure_sink = j->sums[0][0];
    *Bps = best;
    free(buf);
    free(j);
    return SW_OK;
}

/* ---- memcpy (the sim link) -------------------------------------------- */

/* One thread's memcpy rate (bytes copied per second) between two `bytes`
 * buffers: what the sim device's copy thread achieves without a link cap.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
static sw_status measure_memcpy(uint64_t bytes, int n_runs, double *Bps) {
    if (Bps == NULL || bytes == 0 || bytes > SIZE_MAX || n_runs < 1)
        return sw_errorf(SW_ERR_ARG, "measure_memcpy: bad arguments");
    *Bps = 0;
    unsigned char *src = alloc_aligned(bytes), *dst = alloc_aligned(bytes);
    if (src == NULL || dst == NULL) {
        free(src);
        free(dst);
        return sw_errorf(SW_ERR_OOM_HOST, "doctor: cannot allocate 2 x %llu MiB of host "
                         "memory for the memcpy test", (unsigned long long)(bytes >> 20));
    }
    memset(src, 0x5a, (size_t)bytes);
    memset(dst, 0, (size_t)bytes);
    memcpy(dst, src, (size_t)bytes);    /* warm-up */
    double best = 0;
    for (int r = 0; r < n_runs; r++) {
        double t0 = sw_clock_s();
        memcpy(dst, src, (size_t)bytes);
        double dt = sw_clock_s() - t0;
        if (dt > 0 && (double)bytes / dt > best)
            best = (double)bytes / dt;
    }
    measure_sink = dst[bytes / 2];
    *Bps = best;
    free(src);
    free(dst);
    return SW_OK;
}

/* ---- CPU matmul rate ---------------------------------------------------- */

/* Small values in [-0.5, 0.5): no overflow, no denormals, nothing the
 * kernel could shortcut. */
static void fill_floats(float *x, uint64_t n, uint32_t seed) {
    uint32_t s = seed;
    for (uint64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
}

/* The best of n_runs seconds of cpu_matmul(w, x -> y, n_tokens) after a
 * warm-up (which also touches every page of w). */
static sw_status best_matmul_s(cpu_pool *pool, const tensor_view *w, const float *x, float *y,
                               uint32_t n_tokens, int n_runs, double *best_s) {
    cpu_mm_scratch *ws = NULL;
    sw_status st = cpu_mm_scratch_create(cpu_pool_size(pool), w->ne[0], &ws);
    *best_s = 0;
    if (st == SW_OK)
        st = cpu_matmul(pool, ws, w, x, y, n_tokens);
    for (int r = 0; st == SW_OK && r < n_runs; r++) {
        double t0 = sw_clock_s();
        st = cpu_matmul(pool, ws, w, x, y, n_tokens);
        double dt = sw_clock_s() - t0;
        if (st == SW_OK && dt > 0 && (*best_s == 0 || dt < *best_s))
            *best_s = dt;
    }
    cpu_mm_scratch_destroy(ws);
    return st;
}

/* cpu_matmul on an n x n F32 weight and n_tokens activation rows:
 * 2 * n * n * n_tokens flops per run, best of n_runs.
 * Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
static sw_status measure_host_flops(cpu_pool *pool, uint32_t n, uint32_t n_tokens, int n_runs,
                                    double *flops) {
    if (flops == NULL || n < 64 || n_tokens == 0 || n_runs < 1)
        return sw_errorf(SW_ERR_ARG, "measure_host_flops: bad arguments");
    *flops = 0;
    uint64_t w_floats = (uint64_t)n * n, x_floats = (uint64_t)n * n_tokens;
    float *w = alloc_aligned(w_floats * sizeof(float));
    float *x = alloc_aligned(x_floats * sizeof(float));
    float *y = alloc_aligned(x_floats * sizeof(float));
    double best_s = 0;
    sw_status st = SW_OK;
    if (w == NULL || x == NULL || y == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "doctor: cannot allocate %llu MiB of host memory "
                       "for the matmul test", (unsigned long long)(w_floats * 4 >> 20));
    } else {
        fill_floats(w, w_floats, 1);
        fill_floats(x, x_floats, 2);
        tensor_view view = {.name = "doctor.matmul", .type = SW_TYPE_F32, .n_dims = 2,
                            .ne = {n, n, 1, 1}, .n_bytes = w_floats * sizeof(float), .data = w};
        st = best_matmul_s(pool, &view, x, y, n_tokens, n_runs, &best_s);
        if (st == SW_OK && best_s > 0)
            *flops = 2.0 * (double)w_floats * n_tokens / best_s;
    }
    free(w);
    free(x);
    free(y);
    return st;
}

/* ---- CPU decode matmul rate ------------------------------------------------ */

/* The decode matmul (cpu_matmul, one token, the pool's threads) over a
 * random weight of about `bytes` of `type`, in weight bytes per second,
 * best of n_runs after a warm-up: the rate the planner divides a host
 * layer's bytes of that type by. Errors: SW_ERR_ARG, SW_ERR_OOM_HOST. */
static sw_status measure_host_decode(cpu_pool *pool, uint32_t type, uint64_t bytes, int n_runs,
                                     double *Bps) {
    const uint64_t cols = 8192;
    uint64_t row = 0;
    if (Bps == NULL || n_runs < 1 || !type_row_bytes(type, cols, &row) || bytes < row)
        return sw_errorf(SW_ERR_ARG, "measure_host_decode: bad arguments");
    *Bps = 0;
    const uint64_t rows = bytes / row, n_bytes = rows * row;
    uint8_t *w = alloc_aligned(n_bytes);
    float *x = alloc_aligned(cols * sizeof(float)), *y = alloc_aligned(rows * sizeof(float));
    double best_s = 0;
    sw_status st = SW_OK;
    if (w == NULL || x == NULL || y == NULL) {
        st = sw_errorf(SW_ERR_OOM_HOST, "doctor: cannot allocate %llu MiB of host memory for "
                       "the decode test", (unsigned long long)(n_bytes >> 20));
    } else {
        uint64_t seed = 0x853c49e6748fea9bull + type;
        quant_fill_random(type, w, n_bytes, &seed);
        fill_floats(x, cols, 3);
        tensor_view view = {.name = "doctor.decode", .type = type, .n_dims = 2,
                            .ne = {cols, rows, 1, 1}, .n_bytes = n_bytes, .data = w};
        st = best_matmul_s(pool, &view, x, y, 1, n_runs, &best_s);
        if (st == SW_OK && best_s > 0)
            *Bps = (double)n_bytes / best_s;
    }
    free(w);
    free(x);
    free(y);
    return st;
}

/* ---- file read speed ---------------------------------------------------- */

/* Share of [0, n) of fd's pages resident in the page cache; 0 when the
 * kernel will not say (then the read speed is reported as if uncached). */
static double resident_fraction(int fd, uint64_t n) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || n > SIZE_MAX)
        return 0;
    void *map = mmap(NULL, (size_t)n, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return 0;
    size_t n_pages = (size_t)((n + (uint64_t)page - 1) / (uint64_t)page);
    unsigned char *vec = malloc(n_pages);
    size_t resident = 0;
    if (vec != NULL && mincore(map, (size_t)n, vec) == 0)
        for (size_t i = 0; i < n_pages; i++)
            resident += vec[i] & 1;
    free(vec);
    munmap(map, (size_t)n);
    return n_pages ? (double)resident / (double)n_pages : 0;
}

/* Reads n bytes of fd from offset 0 into a scratch buffer; *got receives
 * the bytes read (fewer if the file shrank). */
static sw_status read_all(int fd, const char *path, uint64_t n, uint64_t *got) {
    char *buf = malloc(MEASURE_IO_CHUNK);
    if (buf == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "doctor: out of host memory for a read buffer");
    uint64_t done = 0;
    while (done < n) {
        uint64_t want = n - done < MEASURE_IO_CHUNK ? n - done : MEASURE_IO_CHUNK;
        ssize_t r = read(fd, buf, (size_t)want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return sw_errorf(SW_ERR_IO, "cannot read %s at byte %llu: %s", path,
                             (unsigned long long)done, strerror(e));
        }
        if (r == 0)
            break;
        measure_sink = (unsigned char)buf[0];
        done += (uint64_t)r;
    }
    free(buf);
    *got = done;
    return SW_OK;
}

/* Sequential read of the first min(file size, max_bytes) bytes of `path`.
 * Asks the kernel first to drop the file's clean cached pages
 * (posix_fadvise DONTNEED) so the disk, not the page cache, is measured;
 * pages it would not drop (mapped or dirty elsewhere) show in
 * cached_fraction. Errors: SW_ERR_ARG, SW_ERR_IO (message names the path). */
static sw_status measure_file_read(const char *path, uint64_t max_bytes,
                                   measure_file_result *out) {
    if (path == NULL || out == NULL || max_bytes == 0)
        return sw_errorf(SW_ERR_ARG, "measure_file_read: bad arguments");
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sw_errorf(SW_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    sw_status st = SW_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0) {
        st = sw_errorf(SW_ERR_IO, "%s is not a non-empty regular file", path);
        goto done;
    }
    uint64_t n = (uint64_t)sb.st_size < max_bytes ? (uint64_t)sb.st_size : max_bytes;
    /* Advice only: ignored where unsupported, and then cached_fraction says so. */
    (void)posix_fadvise(fd, 0, (off_t)n, POSIX_FADV_DONTNEED);
    out->cached_fraction = resident_fraction(fd, n);
    (void)posix_fadvise(fd, 0, (off_t)n, POSIX_FADV_SEQUENTIAL);
    double t0 = sw_clock_s();
    if ((st = read_all(fd, path, n, &out->bytes)) != SW_OK)
        goto done;
    double dt = sw_clock_s() - t0;
    out->Bps = dt > 0 ? (double)out->bytes / dt : 0;
done:
    close(fd);
    return st;
}

/* Writes `bytes` of a non-zero pattern to fd and syncs it to the disk. */
static sw_status write_test_file(int fd, const char *dir, uint64_t bytes) {
    char *buf = malloc(MEASURE_IO_CHUNK);
    if (buf == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "doctor: out of host memory for a write buffer");
    for (size_t i = 0; i < MEASURE_IO_CHUNK; i++)
        buf[i] = (char)(i * 131u + 7u);
    uint64_t done = 0;
    while (done < bytes) {
        uint64_t want = bytes - done < MEASURE_IO_CHUNK ? bytes - done : MEASURE_IO_CHUNK;
        ssize_t w = write(fd, buf, (size_t)want);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            free(buf);
            return sw_errorf(SW_ERR_IO, "cannot write a %llu MiB test file in %s: %s",
                             (unsigned long long)(bytes >> 20), dir, strerror(e));
        }
        done += (uint64_t)w;
    }
    free(buf);
    if (fsync(fd) != 0)
        return sw_errorf(SW_ERR_IO, "cannot sync a test file in %s: %s", dir, strerror(errno));
    return SW_OK;
}

/* Writes a `bytes` temp file in `dir`, syncs it to disk, measures it with
 * measure_file_read and removes it. For machines with no model file yet.
 * Errors: SW_ERR_ARG, SW_ERR_IO (message names the folder and reason). */
static sw_status measure_temp_file_read(const char *dir, uint64_t bytes,
                                        measure_file_result *out) {
    char path[4200];
    if (dir == NULL || out == NULL || bytes == 0)
        return sw_errorf(SW_ERR_ARG, "measure_temp_file_read: bad arguments");
    memset(out, 0, sizeof *out);
    int n = snprintf(path, sizeof path, "%s/.doctor-read-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path)
        return sw_errorf(SW_ERR_ARG, "cache folder path is too long: %s", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return sw_errorf(SW_ERR_IO, "cannot create a test file in %s: %s", dir, strerror(errno));
    sw_status st = write_test_file(fd, dir, bytes);
    close(fd);
    if (st == SW_OK)
        st = measure_file_read(path, bytes, out);
    unlink(path);
    return st;
}

/* ---- the report's measurements ------------------------------------------ */

static sw_status measure_host(const doctor_sizes *z, int n_threads, sw_doctor_report *r) {
    sw_doctor_rates *out = &r->rates;
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
                                &out->host_mem_Bps)) == SW_OK &&
        (st = measure_memcpy(z->memcpy_bytes, z->memcpy_runs, &out->memcpy_Bps)) == SW_OK &&
        (st = measure_host_flops(pool, z->flops_n, z->flops_tokens, z->flops_runs,
                                 &out->host_flops)) == SW_OK) {
        r->host_decode_test_bytes = z->decode_bytes;
        for (int i = 0; st == SW_OK && i < SW_DOCTOR_DECODE_TYPES; i++)
            st = measure_host_decode(pool, type_decode_type(i), z->decode_bytes,
                                     z->host_read_runs, &out->host_decode_Bps[i]);
    }
    cpu_pool_destroy(pool);
    return st;
}

/* Measures each visible device; a failure is kept per device. */
static void measure_devices(const doctor_sizes *z, sw_doctor_report *r) {
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        doctor_device *d = &r->device[i];
        d->test_bytes = z->device_bytes;
        d->status = backend_measure_device(r->devices.devices[i].index, z->device_bytes,
                                           &d->rates);
        if (d->status != SW_OK)
            snprintf(d->message, sizeof d->message, "%s", sw_last_error());
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
        st = doctor_make_dirs(r->cache_dir);
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
    r->rates.disk_read_Bps = res.Bps;
    r->disk_cached_fraction = res.cached_fraction;
    if (res.cached_fraction > CACHED_MOSTLY)
        snprintf(r->disk_message, sizeof r->disk_message, "%.0f%% of the bytes were already in "
                 "the page cache and could not be dropped: this is the page cache's rate, not "
                 "the disk's", res.cached_fraction * 100.0);
}

/* A sysfs number with an optional K/M/G suffix ("491520K"), or 0. */
static uint64_t read_sysfs_size(const char *path) {
    FILE *f = fopen(path, "r");
    char buf[32] = {0};
    if (f == NULL)
        return 0;
    const bool got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    char *end = NULL;
    const unsigned long long v = got ? strtoull(buf, &end, 10) : 0;
    if (end == NULL || end == buf)
        return 0;
    const uint64_t unit = *end == 'K' ? 1024 : *end == 'M' ? MIB : *end == 'G' ? 1024 * MIB : 1;
    return v > UINT64_MAX / unit ? 0 : (uint64_t)v * unit;
}

/* The size of cpu0's highest cache level (data or unified), or 0. */
static uint64_t llc_bytes(void) {
    uint64_t best = 0, best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        const uint64_t level = read_sysfs_size(path);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        const uint64_t size = read_sysfs_size(path);
        if (level > best_level || (level == best_level && size > best)) {
            best_level = level;
            best = size;
        }
    }
    return best;
}

/* A full run's memory tests sized past the last-level cache (twice it),
 * so that they give memory's rates, not the cache's: a VM that reports a
 * 480 MiB L3 kept most of the 128 MiB decode test between its runs and
 * measured Q8_0 at twice the memory's read rate. At most 1 GiB, and an
 * eighth of the memory available. */
static doctor_sizes past_llc(const doctor_sizes *z) {
    doctor_sizes out = *z;
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t avail = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t want = 2 * llc_bytes();
    want = want > 1024 * MIB ? 1024 * MIB : want;
    want = avail > 0 && want > avail / 8 ? avail / 8 : want;
    out.host_read_bytes = want > out.host_read_bytes ? want : out.host_read_bytes;
    out.decode_bytes = want > out.decode_bytes ? want : out.decode_bytes;
    return out;
}

sw_status doctor_measure(const sw_doctor_options *opt, int n_threads, sw_doctor_report *r) {
    if (opt == NULL || r == NULL || n_threads < 1)
        return sw_errorf(SW_ERR_ARG, "doctor_measure: bad arguments");
    const doctor_sizes full = past_llc(&SIZES_FULL);
    const doctor_sizes *z = opt->quick ? &SIZES_QUICK : &full;
    sw_status st = measure_host(z, n_threads, r);
    if (st != SW_OK)
        return st;
    measure_devices(z, r);
    measure_disk(opt, z, r);
    return SW_OK;
}

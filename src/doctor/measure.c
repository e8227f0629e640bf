/*
 * measure.c — host benchmarks for doctor (see measure.h).
 *
 * The read loops keep several independent sums so a core issues loads back
 * to back; the sums land in a volatile sink so the compiler cannot drop the
 * reads. Buffers are first touched by the threads that later read them, so
 * on multi-socket hosts each slice sits in its reader's memory node.
 * Linux-specific: mincore() tells how much of a file was already cached.
 */
#define _DEFAULT_SOURCE /* mincore, posix_fadvise, mkstemp, clock_gettime */

#include "doctor/measure.h"

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
#include "quant/random.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/clock.h"

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

sw_status measure_host_read(cpu_pool *pool, uint64_t bytes, int n_runs, double *Bps) {
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

sw_status measure_memcpy(uint64_t bytes, int n_runs, double *Bps) {
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

sw_status measure_host_flops(cpu_pool *pool, uint32_t n, uint32_t n_tokens, int n_runs,
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

sw_status measure_host_decode(cpu_pool *pool, uint32_t type, uint64_t bytes, int n_runs,
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

sw_status measure_file_read(const char *path, uint64_t max_bytes, measure_file_result *out) {
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

sw_status measure_temp_file_read(const char *dir, uint64_t bytes, measure_file_result *out) {
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

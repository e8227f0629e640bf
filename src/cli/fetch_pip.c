/*
 * fetch_pip.c — what `spillway fetch` needs for any target (fetch_pip.h):
 * path and folder helpers for the cache folder, pip's private workspace
 * and environment, running pip, and ending a fetch after an interrupt.
 *
 * Both fetch.c (the default model) and fetch_pjrt.c (the PJRT plugins)
 * call these; this file calls neither, so the fetch files form no circle.
 * Everything prints through cli_error and returns exit statuses, as the
 * commands do.
 */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, fsync */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/fetch_pip.h"
#include "cli/interrupt.h"
#include "cli/spawn.h"

extern char **environ;

/* ---- paths and folders --------------------------------------------------- */

bool fetch_path_fmt(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < cap)
        return true;
    cli_error("path too long (over %zu bytes): %s...; set XDG_CACHE_HOME to a shorter "
              "folder", cap - 1, out);
    return false;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fetch_mkdir_p(const char *dir) {
    char buf[FETCH_PATH_CAP];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf)
        return ENAMETOOLONG;
    memcpy(buf, dir, n + 1);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        /* EACCES etc. on a folder that already exists is fine (e.g. /home). */
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            int err = errno;
            if (!is_dir(buf))
                return err;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    return is_dir(dir) ? 0 : ENOTDIR;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0; /* keep going: remove as much as we can */
}

void fetch_remove_tree(const char *dir) {
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (access(dir, F_OK) == 0)
        fprintf(stderr, "spillway: warning: could not remove temporary folder %s; "
                        "delete it by hand\n", dir);
}

/* Not every file system lets a folder be fsynced, hence best effort. */
void fetch_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* ---- pip ----------------------------------------------------------------- */

/* Our environment for pip, with TMPDIR pointing into our workspace (so its
 * downloads land on the cache disk and are removed with it) and without
 * settings that conflict with --target. Borrows the strings; free() the
 * array. */
static char **pip_environment(char *tmpdir_assign) {
    static const char *drop[] = {"TMPDIR=", "PIP_USER=", "PIP_REQUIRE_VIRTUALENV=",
                                 "PIP_ROOT_USER_ACTION="};
    /* Containers and CI run as root; pip's warning about that is noise here.
     * An environment variable, unlike --root-user-action, is harmless to a
     * pip older than 22.1. */
    static char root_action[] = "PIP_ROOT_USER_ACTION=ignore";
    size_t n = 0, m = 0;
    while (environ[n] != NULL)
        n++;
    char **env = malloc((n + 3) * sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        bool keep = true;
        for (size_t d = 0; d < sizeof drop / sizeof drop[0]; d++)
            keep = keep && strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
        if (keep)
            env[m++] = environ[i];
    }
    env[m++] = tmpdir_assign;
    env[m++] = root_action;
    env[m] = NULL;
    return env;
}

const char *fetch_python_name(void) {
    const char *py = getenv("SPILLWAY_PYTHON");
    return py != NULL && py[0] != '\0' ? py : "python3";
}

/* `python3 -m pip --version`, silenced (the version line would only be
 * noise). */
int fetch_pip_probe(const char *otherwise) {
    char *argv[] = {(char *)fetch_python_name(), "-m", "pip", "--version", NULL};
    cli_spawn_opts so = {.stdout_to = CLI_SPAWN_STDOUT_NULL, .envp = NULL,
                         .stop = &cli_interrupt_signal};
    int status = 0;
    int err = cli_spawn_wait(argv, &so, &status);
    if (err != 0 || status != 0) {
        if (!cli_interrupt_signal)
            cli_error("cannot run '%s -m pip' (%s); install Python 3 with pip (Debian/Ubuntu: "
                      "apt-get install python3-pip; or set SPILLWAY_PYTHON), or %s", argv[0],
                      err != 0 ? strerror(err) : "pip is not installed for it", otherwise);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int fetch_pip_ws_create(fetch_pip_ws *ws, const char *cache_dir) {
    int rc = CLI_EXIT_IO;
    memset(ws, 0, sizeof *ws);
    /* If pkgs fits, so do dir and TMPDIR=... below. */
    if (!fetch_path_fmt(ws->pkgs, sizeof ws->pkgs, "%s/fetch-XXXXXX/pkgs", cache_dir) ||
        !fetch_path_fmt(ws->dir, sizeof ws->dir, "%s/fetch-XXXXXX", cache_dir)) {
        ws->dir[0] = '\0';
        return rc;
    }
    if (mkdtemp(ws->dir) == NULL) {
        cli_error("cannot create a temporary folder in %s: %s", cache_dir, strerror(errno));
        ws->dir[0] = '\0';
        return rc;
    }
    fetch_path_fmt(ws->pkgs, sizeof ws->pkgs, "%s/pkgs", ws->dir);
    fetch_path_fmt(ws->tmpdir_assign, sizeof ws->tmpdir_assign, "TMPDIR=%s/tmp", ws->dir);
    const char *tmp = ws->tmpdir_assign + strlen("TMPDIR=");
    if (mkdir(tmp, 0700) != 0) {
        cli_error("cannot create %s: %s", tmp, strerror(errno));
        goto fail;
    }
    if ((ws->env = pip_environment(ws->tmpdir_assign)) == NULL) {
        cli_error("out of host memory building pip's environment");
        rc = CLI_EXIT_OOM_HOST;
        goto fail;
    }
    return CLI_EXIT_OK;

fail:
    fetch_pip_ws_destroy(ws);
    return rc;
}

void fetch_pip_ws_destroy(fetch_pip_ws *ws) {
    if (ws->dir[0] != '\0')
        fetch_remove_tree(ws->dir);
    ws->dir[0] = '\0';
    free(ws->env);
    ws->env = NULL;
}

int fetch_pip_install(const fetch_pip_ws *ws, char *const *args, int n_args, bool quiet,
                      char *why, size_t why_cap) {
    const char *fixed[] = {"-m", "pip", "install", "--no-deps", "--no-compile",
                           "--disable-pip-version-check", "--no-cache-dir", "--no-input",
                           "--only-binary=:all:", "--target"};
    char *argv[16 + FETCH_PIP_MAX_ARGS];
    int n = 0, status = 0;
    assert(n_args >= 0 && n_args <= FETCH_PIP_MAX_ARGS);
    argv[n++] = (char *)fetch_python_name();
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = (char *)fixed[i];
    argv[n++] = (char *)ws->pkgs;
    if (quiet)
        argv[n++] = "-q";
    for (int k = 0; k < n_args; k++)
        argv[n++] = args[k];
    argv[n] = NULL;
    cli_spawn_opts so = {.stdout_to = CLI_SPAWN_STDOUT_TO_STDERR, .envp = ws->env,
                         .stop = &cli_interrupt_signal};
    int err = cli_spawn_wait(argv, &so, &status);
    if (cli_interrupt_signal)
        return CLI_EXIT_FAILURE;
    if (err == 0 && status == 0)
        return CLI_EXIT_OK;
    if (err != 0)
        snprintf(why, why_cap, "could not start: %s", strerror(err));
    else
        snprintf(why, why_cap, "exit status %d", status);
    return CLI_EXIT_IO;
}

/* ---- the end of a fetch -------------------------------------------------- */

int fetch_finish(int rc, const char *kept) {
    cli_interrupt_restore();
    if (!cli_interrupt_signal)
        return rc;
    cli_error("interrupted (signal %d); temporary files removed, %s left as it was",
              (int)cli_interrupt_signal, kept);
    return 128 + (int)cli_interrupt_signal;
}

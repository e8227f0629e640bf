/*
 * spawn.h — run a helper program (today: python3 -m pip) and wait for it.
 *
 * The child is started with posix_spawnp from an argv array: no shell, so
 * paths and package names are never re-parsed or interpolated. It inherits
 * stdin and stderr; its stdout can be sent to our stderr (so that only
 * Spillway's own result lines reach stdout) or discarded.
 */
#ifndef SW_CLI_SPAWN_H
#define SW_CLI_SPAWN_H

#include <signal.h>

typedef enum cli_spawn_stdout {
    CLI_SPAWN_STDOUT_INHERIT = 0,    /* child writes to our stdout */
    CLI_SPAWN_STDOUT_TO_STDERR,      /* child's fd 1 becomes our fd 2 */
    CLI_SPAWN_STDOUT_NULL            /* child's stdout is discarded */
} cli_spawn_stdout;

typedef struct cli_spawn_opts {
    cli_spawn_stdout stdout_to;
    char *const *envp;               /* NULL: inherit our environment */
    /* Optional stop request (a flag set by our signal handler). When given,
     * the child runs in its own process group; once *stop is non-zero the
     * whole group gets SIGTERM (SIGKILL if it lingers) and we return only
     * when it is gone, so nothing writes into files we are about to
     * remove. A group is needed because wrappers such as pyenv's python3
     * shim run the interpreter as a child instead of exec'ing it. As the
     * child is then not in the terminal's foreground group, it must not
     * read the terminal (pass pip --no-input). */
    volatile sig_atomic_t *stop;
} cli_spawn_opts;

/* Runs argv[0] (searched on PATH) and waits for it to end.
 * Returns 0 with *exit_status set to the child's exit status (0..255), or to
 * 128 + N when signal N ended it. Returns an errno value when the child could
 * not be started (ENOENT: argv[0] is not on PATH). opts may be NULL. */
int cli_spawn_wait(char *const argv[], const cli_spawn_opts *opts, int *exit_status);

#endif

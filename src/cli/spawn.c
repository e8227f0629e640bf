/*
 * spawn.c — posix_spawnp + waitpid (see spawn.h).
 *
 * waitpid is retried on EINTR because `spillway fetch` installs signal
 * handlers without SA_RESTART: an interrupt must not orphan the child. We
 * stop it (and its process group) and wait, so that its files can be
 * removed afterwards.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* After a stop: waits (up to about 5 s) for the rest of the group, e.g. the
 * interpreter a wrapper started, then kills what is left. */
static void stop_group(pid_t pgid) {
    for (int i = 0; i < 100 && kill(-pgid, 0) == 0; i++)
        sleep_ms(50);
    if (kill(-pgid, SIGKILL) == 0)
        for (int i = 0; i < 40 && kill(-pgid, 0) == 0; i++)
            sleep_ms(50);
}

/* Waits for pid, forwarding a stop request to its group once. */
static int wait_child(pid_t pid, volatile sig_atomic_t *stop, int *exit_status) {
    int wstatus = 0;
    bool forwarded = false;
    for (;;) {
        if (stop != NULL && *stop && !forwarded) {
            kill(-pid, SIGTERM);
            forwarded = true;
        }
        if (waitpid(pid, &wstatus, 0) == pid)
            break;
        if (errno != EINTR)
            return errno;
    }
    if (forwarded || (stop != NULL && *stop))
        stop_group(pid);
    if (WIFEXITED(wstatus))
        *exit_status = WEXITSTATUS(wstatus);
    else if (WIFSIGNALED(wstatus))
        *exit_status = 128 + WTERMSIG(wstatus);
    else
        *exit_status = 255;
    return 0;
}

int cli_spawn_wait(char *const argv[], const cli_spawn_opts *opts, int *exit_status) {
    static const cli_spawn_opts defaults = {CLI_SPAWN_STDOUT_INHERIT, NULL, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    bool have_fa = false, have_attr = false;
    pid_t pid;
    if (opts == NULL)
        opts = &defaults;
    int err = posix_spawn_file_actions_init(&fa);
    if (err != 0)
        goto fail;
    have_fa = true;
    if (opts->stdout_to == CLI_SPAWN_STDOUT_TO_STDERR)
        err = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
    else if (opts->stdout_to == CLI_SPAWN_STDOUT_NULL)
        err = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    if (err != 0 || (err = posix_spawnattr_init(&attr)) != 0)
        goto fail;
    have_attr = true;
    if (opts->stop != NULL) { /* own process group: see spawn.h */
        err = posix_spawnattr_setpgroup(&attr, 0);
        if (err == 0)
            err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
        if (err != 0)
            goto fail;
    }
    err = posix_spawnp(&pid, argv[0], &fa, &attr, argv,
                       opts->envp != NULL ? opts->envp : environ);
    if (err == 0)
        err = wait_child(pid, opts->stop, exit_status);

fail:
    if (have_attr)
        posix_spawnattr_destroy(&attr);
    if (have_fa)
        posix_spawn_file_actions_destroy(&fa);
    return err;
}

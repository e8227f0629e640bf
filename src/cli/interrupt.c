/*
 * interrupt.c — recording SIGINT/SIGTERM/SIGHUP for long file work
 * (interrupt.h).
 */
#define _POSIX_C_SOURCE 200809L /* sigaction */

#include <string.h>

#include "cli/interrupt.h"

volatile sig_atomic_t cli_interrupt_signal = 0;

static const int caught[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved[3];

static void on_signal(int sig) { cli_interrupt_signal = sig; }

void cli_interrupt_catch(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(caught[i], NULL, &saved[i]);
        if (saved[i].sa_handler != SIG_IGN)
            sigaction(caught[i], &sa, NULL);
    }
}

void cli_interrupt_restore(void) {
    for (int i = 0; i < 3; i++)
        sigaction(caught[i], &saved[i], NULL);
}

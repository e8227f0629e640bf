/*
 * interrupt.h — Ctrl-C, SIGTERM and SIGHUP during long file work (fetch,
 * synth): the handler only records the signal; loops poll it, stop, and
 * the command removes its temporary files before exiting 128 + signal.
 */
#ifndef SW_CLI_INTERRUPT_H
#define SW_CLI_INTERRUPT_H

#include <signal.h>

/* Non-zero (the signal number) once a caught signal arrived. */
extern volatile sig_atomic_t cli_interrupt_signal;

/* Installs the handler for SIGINT/SIGTERM/SIGHUP without SA_RESTART, so
 * blocking read/write/waitpid return EINTR and the loop notices. A signal
 * that was ignored (nohup) stays ignored. */
void cli_interrupt_catch(void);

/* Puts the previous handlers back. */
void cli_interrupt_restore(void);

#endif

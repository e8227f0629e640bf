/*
 * cli.h — shared pieces of the `spillway` command-line program.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` with argv[0] the
 * subcommand name; it returns the process exit status. Only the CLI prints;
 * the library reports through sw_status + sw_last_error().
 */
#ifndef SW_CLI_CLI_H
#define SW_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "spillway.h"

/* Exit statuses: 0 success; otherwise one per failure class so scripts can
 * tell a bad file from a missing device. A command a caught signal stopped
 * (interrupt.h) exits CLI_EXIT_SIGNAL + the signal, as a shell reports a
 * command the signal killed (130: Ctrl-C). README.md lists them. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,     /* anything not listed below */
    CLI_EXIT_USAGE = 2,       /* bad flags or arguments */
    CLI_EXIT_IO = 3,
    CLI_EXIT_FORMAT = 4,
    CLI_EXIT_UNSUPPORTED = 5,
    CLI_EXIT_NO_DEVICE = 6,
    CLI_EXIT_OOM_DEVICE = 7,
    CLI_EXIT_OOM_HOST = 8,
    CLI_EXIT_DEVICE = 9,
    CLI_EXIT_CANCELLED = 10,  /* a generation cancelled before it ended */
    CLI_EXIT_SIGNAL = 128     /* + the signal: interrupted */
};

int cmd_info(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_synth(int argc, char **argv);

/* Prints the device report (text or JSON) to stdout; returns an exit
 * status (CLI_EXIT_NO_DEVICE when none is visible). */
int cli_print_devices(bool json);

/* --report / --report-json (report.c), with the speculative-decoding
 * line (or "speculative" object) when spec is not NULL. Return exit
 * statuses. */
int cli_print_report(const sw_engine *e, const sw_scheduler_stats *spec, FILE *out);
int cli_write_report_json(const sw_engine *e, const sw_scheduler_stats *spec,
                          const char *path);
/* q's stats in *buf when it has a drafter (buf returned), else NULL. */
const sw_scheduler_stats *cli_spec_stats(sw_scheduler *q, sw_scheduler_stats *buf);
/* "speculative: D drafted, A accepted (R%), T tokens per verify over V
 * verifies" and a newline. */
void cli_print_spec(const sw_scheduler_stats *t, FILE *out);

/* An sw_progress_fn drawing "loading weights N/M MiB" on stderr when it is
 * a terminal. */
void cli_load_progress(void *user, size_t done, size_t total);

/* Maps a library status to an exit status. */
int cli_exit_code(sw_status status);

/* Prints "spillway: error: <message>" (one line) to stderr. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Reports a failed library call: prints sw_last_error() and returns the
 * exit status for `status`. */
int cli_fail(sw_status status);

/* Parses flag's value s as an integer in [lo, hi] (whole string, no
 * overflow). Returns 0, or -1 after printing a usage error naming flag. */
int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out);

/* Writes s as a JSON string literal (quotes and escapes included). */
void json_put_string(FILE *out, const char *s);

/* Says once on stderr, prefixed by `who`, when model does not look
 * instruction-tuned (sw_model_instruction_tuned): its chat answers
 * continue the text and may repeat themselves. */
void cli_note_base_model(const sw_model *model, const char *who);

/* A device's fields as JSON keys, inside an object the caller opened,
 * under the CUDA names scripts read (cc_major, n_multiprocessors). */
struct jsonw;
void cli_json_device_fields(struct jsonw *j, const sw_device_info *d);

#endif

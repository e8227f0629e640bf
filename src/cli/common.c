/*
 * common.c — error reporting and exit statuses shared by all subcommands.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int cli_exit_code(sw_status status) {
    switch (status) {
    case SW_OK: return CLI_EXIT_OK;
    case SW_ERR_ARG: return CLI_EXIT_USAGE;
    case SW_ERR_IO: return CLI_EXIT_IO;
    case SW_ERR_FORMAT: return CLI_EXIT_FORMAT;
    case SW_ERR_UNSUPPORTED: return CLI_EXIT_UNSUPPORTED;
    case SW_ERR_NO_DEVICE: return CLI_EXIT_NO_DEVICE;
    case SW_ERR_OOM_DEVICE: return CLI_EXIT_OOM_DEVICE;
    case SW_ERR_OOM_HOST: return CLI_EXIT_OOM_HOST;
    case SW_ERR_DEVICE: return CLI_EXIT_DEVICE;
    }
    return CLI_EXIT_FAILURE;
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fputs("spillway: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_fail(sw_status status) {
    const char *msg = sw_last_error();
    cli_error("%s", msg[0] ? msg : sw_status_name(status));
    return cli_exit_code(status);
}

void cli_load_progress(void *user, size_t done, size_t total) {
    (void)user;
    if (!isatty(STDERR_FILENO) || total == 0)
        return;
    fprintf(stderr, "\rloading weights to the device %.1f/%.1f MiB",
            (double)done / 1048576.0, (double)total / 1048576.0);
    if (done >= total)
        fputc('\n', stderr);
}

int cli_parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) {
        cli_error("%s expects an integer in %ld..%ld, got '%s'", flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

void cli_note_base_model(const sw_model *model, const char *who) {
    sw_model_summary ms;
    if (model == NULL || sw_model_instruction_tuned(model) ||
        sw_model_get_summary(model, &ms) != SW_OK)
        return;
    const char *slash = strrchr(ms.path, '/');
    const char *name = ms.name[0] ? ms.name : slash && slash[1] ? slash + 1 : ms.path;
    fprintf(stderr, "%s: note: '%s' does not look instruction-tuned (no chat template, no "
            "\"it\" tune in its name): a base model continues the text, so its chat "
            "answers may repeat themselves; chat with an instruction-tuned (-it) "
            "checkpoint\n", who, name);
}

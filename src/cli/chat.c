/*
 * chat.c — `spillway chat`: an interactive conversation using Gemma's chat
 * format, on the library's scheduler. Each turn continues the previous
 * one's sequence (sw_scheduler_continue), so it only evaluates its new
 * tokens (the KV cache is reused across turns).
 *
 * Turn format: the library's (sw_chat_format, which serve writes too):
 * <start_of_turn>user\n{text}<end_of_turn>\n <start_of_turn>model\n and
 * the reply closed with <end_of_turn>\n; a --system text folded into the
 * first user turn followed by a blank line, as Gemma 3's template does
 * (Gemma 1-3 have no system role). Gemma 4: <|turn>...<turn|>, and the
 * system text a turn of its own.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/gen_opts.h"
#include "cli/generate.h"
#include "cli/model_arg.h"
#include "spillway_grammar.h"

#define LINE_MAX_BYTES (1 << 20)

static void usage(FILE *out) {
    fputs("usage: spillway chat [-m MODEL] [--system TEXT] [options]\n"
          "  reads one user message per line from standard input; an empty line or\n"
          "  end of input ends the conversation\n" GEN_OPTS_JSON_SCHEMA_USAGE, out);
    gen_opts_usage(out);
}

typedef struct chat_state {
    sw_model *model;
    sw_engine *engine;
    sw_scheduler *sched;
    draft_ctx draft;        /* the drafter the draft flags ask for, after sched goes */
    sw_request *prev;       /* the last turn, keeping the conversation's sequence */
    int32_t *ids;           /* tokens of the turn being sent */
    size_t ids_cap;
    bool first_turn;
    struct sw_grammar *grammar; /* --json-schema's, or NULL */
} chat_state;

/* Appends the tokens of `text` to st->ids at *n (special tokens parsed). */
static int append_text(chat_state *st, const char *text, bool bos, size_t *n) {
    size_t len = strlen(text);
    size_t need = *n + SW_TOKENIZE_MAX_IDS(len);
    if (need > st->ids_cap) {
        int32_t *bigger = realloc(st->ids, need * sizeof *bigger);
        if (bigger == NULL) {
            cli_error("out of memory");
            return CLI_EXIT_OOM_HOST;
        }
        st->ids = bigger;
        st->ids_cap = need;
    }
    size_t got = 0;
    unsigned flags = SW_TOK_PARSE_SPECIAL | (bos ? SW_TOK_ADD_BOS : 0);
    sw_status s = sw_tokenize(st->model, text, len, flags, st->ids + *n,
                              SW_TOKENIZE_MAX_IDS(len), &got);
    if (s != SW_OK)
        return cli_fail(s);
    *n += got;
    return CLI_EXIT_OK;
}

/* Builds the tokens for one user turn (closing the previous reply), by
 * the library's template. */
static int build_turn(chat_state *st, const char *system, const char *user, size_t *n) {
    sw_chat_message m[2];
    size_t k = 0, len = 0;
    *n = 0;
    if (st->first_turn && system && system[0])
        m[k++] = (sw_chat_message){"system", system, strlen(system)};
    m[k++] = (sw_chat_message){"user", user, strlen(user)};
    const unsigned flags = SW_CHAT_OPEN_REPLY | (st->first_turn ? 0 : SW_CHAT_CLOSE_REPLY);
    sw_status s = sw_chat_format(st->model, m, k, flags, NULL, 0, &len);
    char *text = s == SW_OK ? malloc(len + 1) : NULL;
    if (s == SW_OK && text == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OOM_HOST;
    }
    if (s == SW_OK)
        s = sw_chat_format(st->model, m, k, flags, text, len + 1, &len);
    int rc = s == SW_OK ? append_text(st, text, st->first_turn, n) : cli_fail(s);
    free(text);
    if (rc == CLI_EXIT_OK)
        st->first_turn = false;
    return rc;
}

static int chat_loop(chat_state *st, const gen_opts *o) {
    char *line = malloc(LINE_MAX_BYTES);
    int rc = CLI_EXIT_OK;
    bool tty = isatty(STDIN_FILENO);
    if (line == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OOM_HOST;
    }
    for (;;) {
        if (tty)
            fputs("\n> ", stdout), fflush(stdout);
        if (fgets(line, LINE_MAX_BYTES, stdin) == NULL)
            break;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0')
            break;
        size_t n = 0;
        if ((rc = build_turn(st, o->system, line, &n)) != CLI_EXIT_OK)
            break;
        const uint32_t n_ctx = sw_engine_n_ctx(st->engine);
        sw_request_options ro = sw_request_options_default();
        ro.sampling = o->sampler;
        ro.n_predict = o->n_predict;
        ro.on_token = gen_print_piece;
        ro.user = stdout;
        ro.keep_sequence = 1;
        ro.grammar = st->grammar;
        sw_request *r = NULL;
        sw_status s = st->prev ? sw_scheduler_continue(st->sched, st->prev, st->ids, n, &ro, &r)
                      : n < n_ctx ? sw_scheduler_submit(st->sched, st->ids, n, &ro, &r)
                                  : SW_ERR_ARG;
        if (s == SW_ERR_ARG) {
            cli_error("the conversation has filled the %u-token context; start again with a "
                      "larger -c", n_ctx);
            rc = CLI_EXIT_USAGE;
            break;
        }
        if (s != SW_OK) {
            rc = cli_fail(s);
            break;
        }
        sw_request_release(st->sched, st->prev); /* its sequence went on to r */
        st->prev = r;
        gen_stats stats;
        if ((rc = gen_wait(st->sched, r, n_ctx, &stats)) != CLI_EXIT_OK)
            break;
        fputc('\n', stdout);
        fflush(stdout);
    }
    free(line);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    gen_opts o;
    gen_opts_init(&o);
    int parsed = gen_opts_take_json_schema(&o, &argc, argv);
    if (parsed == CLI_EXIT_OK)
        parsed = gen_opts_parse_all(&o, argc, argv, usage);
    if (parsed != CLI_EXIT_OK)
        return parsed < 0 ? CLI_EXIT_OK : parsed;
    chat_state st = {.first_turn = true};
    int rc = cli_open_model(o.model, &st.model);
    if (rc != CLI_EXIT_OK)
        return rc;
    cli_note_base_model(st.model, "chat");
    if ((rc = gen_opts_grammar(&o, &st.grammar)) != CLI_EXIT_OK ||
        (rc = gen_opts_start_engine(&o, st.model, &st.engine)) != CLI_EXIT_OK ||
        (rc = gen_opts_start_scheduler(&o, st.model, st.engine, &st.sched, &st.draft)) !=
            CLI_EXIT_OK)
        goto done;
    rc = chat_loop(&st, &o);
    sw_scheduler_stats t;
    const sw_scheduler_stats *spec = cli_spec_stats(st.sched, &t);
    if (rc == CLI_EXIT_OK && o.report)
        rc = cli_print_report(st.engine, spec, stderr);
    if (rc == CLI_EXIT_OK && o.report_json)
        rc = cli_write_report_json(st.engine, spec, o.report_json);
done:
    free(st.ids);
    sw_request_release(st.sched, st.prev);
    sw_scheduler_destroy(st.sched);
    draft_end(&st.draft);
    sw_grammar_destroy(st.grammar);
    sw_engine_destroy(st.engine);
    sw_model_close(st.model);
    return rc;
}

/*
 * run.c — `spillway run`: generate a continuation of a prompt, one
 * request on the library's scheduler (as batch and serve run theirs).
 * Tokens are printed as produced; statistics go to stderr at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/gen_opts.h"
#include "cli/generate.h"
#include "cli/model_arg.h"
#include "spillway_grammar.h"

static void usage(FILE *out) {
    fputs("usage: spillway run [-m MODEL] -p PROMPT | -f FILE [options]\n"
          GEN_OPTS_JSON_SCHEMA_USAGE, out);
    gen_opts_usage(out);
}

/* The request's timing; with a drafter (spec not NULL) the share of
 * drafts kept and the tokens each verify gave. */
static void print_stats(const gen_stats *s, const sw_scheduler_stats *spec) {
    fprintf(stderr, "\n\nprompt %zu tokens in %.2f s (%.1f tok/s); generated %zu tokens in "
            "%.2f s (%.1f tok/s)", s->n_prompt, s->prefill_s,
            s->prefill_s > 0 ? (double)s->n_prompt / s->prefill_s : 0.0, s->n_generated,
            s->decode_s, s->decode_s > 0 ? (double)s->n_generated / s->decode_s : 0.0);
    if (spec != NULL && spec->drafted_tokens > 0)
        fprintf(stderr, "; %.0f%% of %llu drafts accepted, %.2f tokens per verify",
                100.0 * (double)spec->accepted_tokens / (double)spec->drafted_tokens,
                (unsigned long long)spec->drafted_tokens,
                (double)spec->verify_tokens / (double)spec->verify_forwards);
    fputc('\n', stderr);
}

int cmd_run(int argc, char **argv) {
    gen_opts o;
    gen_opts_init(&o);
    int parsed = gen_opts_take_json_schema(&o, &argc, argv);
    if (parsed == CLI_EXIT_OK)
        parsed = gen_opts_parse_all(&o, argc, argv, usage);
    if (parsed != CLI_EXIT_OK)
        return parsed < 0 ? CLI_EXIT_OK : parsed;
    char *text = NULL;
    int32_t *ids = NULL;
    size_t len = 0, n = 0;
    sw_model *m = NULL;
    sw_engine *e = NULL;
    sw_scheduler *q = NULL;
    draft_ctx draft = {0};
    sw_request *r = NULL;
    sw_grammar *grammar = NULL;
    sw_status st;
    gen_stats stats;
    int rc = gen_opts_read_prompt(&o, &text, &len);
    if (rc == CLI_EXIT_OK)
        rc = gen_opts_grammar(&o, &grammar);
    if (rc != CLI_EXIT_OK || (rc = cli_open_model(o.model, &m)) != CLI_EXIT_OK)
        goto done;
    if ((rc = gen_opts_start_engine(&o, m, &e)) != CLI_EXIT_OK)
        goto done;
    if ((rc = gen_prompt_tokens(m, o.no_special, o.truncate, o.n_predict, sw_engine_n_ctx(e),
                                text, len, NULL, &ids, &n)) != CLI_EXIT_OK)
        goto done;
    sw_request_options ro = sw_request_options_default();
    ro.sampling = o.sampler;
    ro.n_predict = o.n_predict;
    ro.on_token = gen_print_piece;
    ro.user = stdout;
    ro.grammar = grammar;
    if ((rc = gen_opts_start_scheduler(&o, m, e, &q, &draft)) != CLI_EXIT_OK)
        goto done;
    if ((st = sw_scheduler_submit(q, ids, n, &ro, &r)) != SW_OK) {
        rc = cli_fail(st);
        goto done;
    }
    rc = gen_wait(q, r, sw_engine_n_ctx(e), &stats);
    sw_scheduler_stats t;
    const sw_scheduler_stats *spec = cli_spec_stats(q, &t);
    if (rc == CLI_EXIT_OK)
        print_stats(&stats, spec);
    if (rc == CLI_EXIT_OK && o.report)
        rc = cli_print_report(e, spec, stderr);
    if (rc == CLI_EXIT_OK && o.report_json)
        rc = cli_write_report_json(e, spec, o.report_json);
done:
    free(text);
    free(ids);
    sw_request_release(q, r);
    sw_scheduler_destroy(q);
    sw_grammar_destroy(grammar);
    draft_end(&draft);
    sw_engine_destroy(e);
    sw_model_close(m);
    return rc;
}

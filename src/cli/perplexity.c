/*
 * perplexity.c — `spillway perplexity`: llama-perplexity's workflow
 * (sw_perplexity in spillway.h) on any backend and plan. The figures go to
 * stdout (a table, or one JSON object with --json); progress to stderr.
 * --save-logits writes a base in llama.cpp's .kld format, which
 * --kl-divergence-base (ours or llama-perplexity's) compares against.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/gen_opts.h"
#include "cli/model_arg.h"
#include "eval/kld_file.h"

typedef struct ppl_args {
    gen_opts g;
    long chunks;
    const char *save_base, *kld_base;
    bool json;
} ppl_args;

static void usage(FILE *out) {
    fputs("usage: spillway perplexity [-m MODEL] -f FILE [-c 512] [--chunks N] [-b N]\n"
          "                           [--save-logits BASE | --kl-divergence-base BASE]\n"
          "                           [--json] [planning options]\n"
          "  perplexity over chunks of -c tokens (each scored on its second half), as\n"
          "  llama-perplexity computes it; -c defaults to 512, or to the base's chunk\n"
          "  length\n"
          "  --chunks N        at most N chunks (default: all the text makes)\n"
          "  --save-logits B   write the log-probabilities to B (llama.cpp's .kld format:\n"
          "                    llama-perplexity --kl-divergence-base reads it)\n"
          "  --kl-divergence-base B\n"
          "                    compare with the base B (ours or llama-perplexity's): mean\n"
          "                    and 99th-percentile KL divergence, same top token, RMS of\n"
          "                    the change in p(next token); the tokens come from B, -f is\n"
          "                    not needed\n"
          "  --json            the figures as one JSON object\n", out);
    gen_opts_usage(out);
}

/* Our flags, then the shared ones. Returns an exit status, or -1 after
 * --help. */
static int parse(ppl_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        bool value = !strcmp(f, "--chunks") || !strcmp(f, "--save-logits") ||
                     !strcmp(f, "--kl-divergence-base");
        if (value && i + 1 >= argc) {
            cli_error("%s needs a value", f);
            return CLI_EXIT_USAGE;
        }
        if (!strcmp(f, "--json")) {
            a->json = true;
        } else if (!strcmp(f, "--chunks")) {
            if (cli_parse_long(f, argv[++i], 1, 1L << 24, &a->chunks))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(f, "--save-logits")) {
            a->save_base = argv[++i];
        } else if (!strcmp(f, "--kl-divergence-base")) {
            a->kld_base = argv[++i];
        } else if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return -1;
        } else {
            int n = gen_opts_parse(&a->g, argc, argv, i);
            if (n < 0)
                return CLI_EXIT_USAGE;
            if (n == 0) {
                cli_error("perplexity: unknown argument '%s' (see --help)", f);
                return CLI_EXIT_USAGE;
            }
            i += n - 1;
        }
    }
    if (a->save_base && a->kld_base) {
        cli_error("--save-logits and --kl-divergence-base are two runs: save with one engine, "
                  "compare with another");
        return CLI_EXIT_USAGE;
    }
    if (!a->kld_base && !a->g.prompt_file && !a->g.prompt) {
        cli_error("perplexity needs a text (-f FILE) or a base (--kl-divergence-base BASE)");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Without -c: a base's chunk length (the engine needs no more), else
 * llama-perplexity's 512. Returns an exit status. */
static int default_ctx(ppl_args *a) {
    a->g.plan.n_ctx = 512;
    if (a->kld_base == NULL)
        return CLI_EXIT_OK;
    kld_file *f = NULL;
    sw_status st = kld_file_open(a->kld_base, &f);
    if (st != SW_OK)
        return cli_fail(st);
    a->g.plan.n_ctx = kld_file_n_ctx(f);
    kld_file_close(f);
    return CLI_EXIT_OK;
}

static void chunk_progress(void *user, size_t done, size_t total) {
    (void)user;
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\rperplexity: chunk %zu/%zu", done, total);
    else if (done == total)
        fprintf(stderr, "perplexity: %zu chunks\n", total);
    if (done == total && isatty(STDERR_FILENO))
        fputc('\n', stderr);
}

/* The text's tokens (BOS first), malloc'd. Returns an exit status. */
static int tokenize_text(const gen_opts *g, const sw_model *m, int32_t **ids, size_t *n) {
    char *text = NULL;
    size_t len = 0;
    int rc = gen_opts_read_prompt(g, &text, &len);
    if (rc != CLI_EXIT_OK)
        return rc;
    size_t cap = SW_TOKENIZE_MAX_IDS(len);
    *ids = malloc(cap * sizeof **ids);
    sw_status st = *ids ? sw_tokenize(m, text, len, SW_TOK_ADD_BOS, *ids, cap, n)
                        : SW_ERR_OOM_HOST;
    free(text);
    return st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
}

static void print_result(const sw_perplexity_result *r, bool json) {
    if (json) {
        printf("{\"n_ctx\":%u,\"n_chunks\":%u,\"n_scored\":%" PRIu64 ",\"ppl\":%.6f,"
               "\"ppl_unc\":%.6f", r->n_ctx, r->n_chunks, r->n_scored, r->ppl, r->ppl_unc);
        if (r->has_base)
            printf(",\"ppl_base\":%.6f,\"ln_ppl_ratio\":%.6f,\"ln_ppl_ratio_unc\":%.6f,"
                   "\"kld_mean\":%.8f,\"kld_unc\":%.8f,\"kld_median\":%.8f,\"kld_p99\":%.8f,"
                   "\"kld_max\":%.8f,\"same_top\":%.6f,\"same_top_unc\":%.6f,\"dp_rms\":%.6f,"
                   "\"dp_rms_unc\":%.6f", r->ppl_base, r->ln_ratio, r->ln_ratio_unc,
                   r->kld_mean, r->kld_unc, r->kld_median, r->kld_p99, r->kld_max, r->same_top,
                   r->same_top_unc, r->dp_rms, r->dp_rms_unc);
        printf("}\n");
        return;
    }
    printf("chunks %u x %u tokens, %" PRIu64 " positions scored\n", r->n_chunks, r->n_ctx,
           r->n_scored);
    printf("PPL                 %10.4f +- %.4f\n", r->ppl, r->ppl_unc);
    if (!r->has_base)
        return;
    printf("PPL(base)           %10.4f\n", r->ppl_base);
    printf("ln(PPL/PPL(base))   %10.6f +- %.6f\n", r->ln_ratio, r->ln_ratio_unc);
    printf("KLD mean            %10.6f +- %.6f\n", r->kld_mean, r->kld_unc);
    printf("KLD median, 99%%, max %9.6f  %.6f  %.6f\n", r->kld_median, r->kld_p99, r->kld_max);
    printf("same top token      %9.3f%% +- %.3f%%\n", 100 * r->same_top, 100 * r->same_top_unc);
    printf("RMS dp              %9.3f%% +- %.3f%%\n", 100 * r->dp_rms, 100 * r->dp_rms_unc);
}

int cmd_perplexity(int argc, char **argv) {
    ppl_args a = {.chunks = 0};
    gen_opts_init(&a.g);
    a.g.plan.n_ctx = 0;
    int rc = parse(&a, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (a.g.plan.n_ctx == 0 && (rc = default_ctx(&a)) != CLI_EXIT_OK)
        return rc;
    sw_model *m = NULL;
    sw_engine *e = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    if ((rc = cli_open_model(a.g.model, &m)) != CLI_EXIT_OK)
        return rc;
    if (!a.kld_base && (rc = tokenize_text(&a.g, m, &ids, &n)) != CLI_EXIT_OK)
        goto done;
    if ((rc = gen_opts_start_engine(&a.g, m, &e)) != CLI_EXIT_OK)
        goto done;
    sw_perplexity_options po = sw_perplexity_options_default();
    po.n_ctx = sw_engine_n_ctx(e);
    po.n_chunks = (uint32_t)a.chunks;
    po.save_base = a.save_base;
    po.kld_base = a.kld_base;
    po.progress = chunk_progress;
    sw_perplexity_result res;
    sw_status st = sw_perplexity(e, m, ids, n, &po, &res);
    if (st != SW_OK) {
        rc = cli_fail(st);
        goto done;
    }
    print_result(&res, a.json);
    if (a.save_base)
        fprintf(stderr, "perplexity: base written to %s\n", a.save_base);
done:
    free(ids);
    sw_engine_destroy(e);
    sw_model_close(m);
    return rc;
}

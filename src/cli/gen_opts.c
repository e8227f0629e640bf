/*
 * gen_opts.c — parsing of the generation flags (gen_opts.h); the planning
 * flags go to plan_opts.c. Numbers are parsed strictly: trailing junk,
 * overflow and out-of-range values are errors that name the flag, never
 * silently clamped.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gen_opts.h"
#include "cli/plan_opts.h"
#include "engine/split_engine.h"
#include "spillway_grammar.h"

void gen_opts_init(gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    o->plan = sw_plan_options_default();
    o->engine = sw_engine_options_default();
    o->sampler = sw_sampler_options_default();
    o->sampler.seed = 0x5eed;
}

static int parse_float(const char *flag, const char *s, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        cli_error("%s expects a number in %g..%g, got '%s'", flag, lo, hi, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

static int parse_value(gen_opts *o, const char *f, const char *v) {
    long n;
    if (!strcmp(f, "--device-mem") && strchr(v, ',') != NULL)
        return plan_opts_parse_split(v, o->split, &o->n_split);
    if (!strcmp(f, "--devices"))
        return plan_opts_parse_devices(v, o->devices, &o->n_devices);
    if (plan_opts_has(f)) return plan_opts_parse(&o->plan, f, v);
    if (!strcmp(f, "-m") || !strcmp(f, "--model")) { o->model = v; return 0; }
    if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) { o->prompt = v; return 0; }
    if (!strcmp(f, "-f") || !strcmp(f, "--file")) { o->prompt_file = v; return 0; }
    if (!strcmp(f, "--system")) { o->system = v; return 0; }
    if (!strcmp(f, "--report-json")) { o->report_json = v; return 0; }
    if (!strcmp(f, "--plan-json")) { o->plan_json = v; return 0; }
    if (!strcmp(f, "--expert-trace")) { o->engine.expert_trace = v; return 0; }
    if (!strcmp(f, "-n") || !strcmp(f, "--n-predict"))
        return cli_parse_long(f, v, -1, 1L << 30, &o->n_predict);
    if (!strcmp(f, "--temp")) return parse_float(f, v, 0.0, 100.0, &o->sampler.temp);
    if (!strcmp(f, "--top-p")) return parse_float(f, v, 1e-9, 1.0, &o->sampler.top_p);
    if (!strcmp(f, "--min-p")) return parse_float(f, v, 0.0, 0.999999, &o->sampler.min_p);
    if (!strcmp(f, "--top-k")) {
        if (cli_parse_long(f, v, 0, 1L << 30, &n)) return -1;
        o->sampler.top_k = (int)n;
        return 0;
    }
    if (!strcmp(f, "--seed")) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (errno || end == v || *end != '\0' || v[0] == '-') {
            cli_error("--seed expects a non-negative integer, got '%s'", v);
            return -1;
        }
        o->sampler.seed = s;
        return 0;
    }
    return 1; /* not a flag with a value */
}

int gen_opts_parse(gen_opts *o, int argc, char **argv, int i) {
    const char *f = argv[i];
    const int drafted = draft_flags_parse(&o->draft, argc, argv, i);
    if (drafted != 0)
        return drafted;
    if (!strcmp(f, "--truncate")) { o->truncate = true; return 1; }
    if (!strcmp(f, "--no-special")) { o->no_special = true; return 1; }
    if (!strcmp(f, "--verbose-prompt")) { o->verbose_prompt = true; return 1; }
    if (!strcmp(f, "--report")) { o->report = true; return 1; }
    static const char *const with_value[] = {
        "-m", "--model", "-p", "--prompt", "-f", "--file", "--system", "-n", "--n-predict",
        "--temp", "--top-p", "--min-p", "--top-k", "--seed", "--report-json", "--plan-json",
        "--expert-trace"};
    bool ours = plan_opts_has(f);
    for (size_t k = 0; !ours && k < sizeof with_value / sizeof with_value[0]; k++)
        ours = !strcmp(f, with_value[k]);
    if (!ours)
        return 0;
    if (i + 1 >= argc) {
        cli_error("%s needs a value", f);
        return -1;
    }
    return parse_value(o, f, argv[i + 1]) == 0 ? 2 : -1;
}

void gen_opts_usage(FILE *out) {
    fputs("  -m FILE|DIR      GGUF file or Hugging Face folder (default: the fetched\n"
          "                   Gemma 3 270M)\n"
          "  -p TEXT | -f FILE  prompt text, or a file holding it\n"
          "  -n N             tokens to generate (-1: until end of turn or context)\n"
          "  --temp T         temperature (0: greedy; default 0.8)\n"
          "  --top-k K        keep the K most likely tokens (0: off; default 40)\n"
          "  --top-p P        nucleus sampling (1: off; default 0.95)\n"
          "  --min-p P        drop tokens below P x the best (0: off; default 0.05)\n"
          "  --seed S         random seed (same seed, same output)\n"
          "  --truncate       keep the end of a prompt longer than the context\n"
          "  --no-special     treat <start_of_turn> etc. in the prompt as plain text\n"
          "  --report         print memory and speed measured vs the plan's prediction\n"
          "  --report-json P  write the same as one JSON object to P\n"
          "  --plan-json P    write the plan being executed as JSON to P (what\n"
          "                   `spillway plan --json` prints for the same flags)\n"
          "  --expert-trace P write each forward's expert routing to P, one JSON line\n"
          "                   per layer and token (Gemma 4's experts; replay it with\n"
          "                   `spillway bench --expert-trace P --cache-slots N,...`)\n",
          out);
    draft_flags_usage(out);
    plan_opts_usage(out);
}

static int read_file(const char *path, char **text, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        cli_error("cannot open prompt file '%s': %s", path, strerror(errno));
        return CLI_EXIT_IO;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        n += fread(buf + n, 1, cap - n - 1, fp);
        if (n < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int err = ferror(fp);
    fclose(fp);
    if (buf == NULL || err) {
        free(buf);
        cli_error("cannot read prompt file '%s'%s", path, err ? "" : ": out of memory");
        return err ? CLI_EXIT_IO : CLI_EXIT_OOM_HOST;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return CLI_EXIT_OK;
}

int gen_opts_take_json_schema(gen_opts *o, int *argc, char **argv) {
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--json-schema") != 0)
            continue;
        if (i + 1 >= *argc) {
            cli_error("--json-schema needs a value");
            return CLI_EXIT_USAGE;
        }
        o->json_schema = argv[i + 1];
        memmove(argv + i, argv + i + 2, (size_t)(*argc - i - 2) * sizeof *argv);
        *argc -= 2;
        i--;
    }
    return CLI_EXIT_OK;
}

int gen_opts_grammar(const gen_opts *o, struct sw_grammar **out) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    if (o->json_schema == NULL)
        return CLI_EXIT_OK;
    int rc = read_file(o->json_schema, &text, &len);
    if (rc != CLI_EXIT_OK)
        return rc;
    const sw_status st = sw_grammar_from_json_schema(text, len, out);
    free(text);
    if (st != SW_OK) {
        cli_error("--json-schema %s: %s", o->json_schema, sw_last_error());
        return st == SW_ERR_OOM_HOST ? CLI_EXIT_OOM_HOST : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int gen_opts_read_prompt(const gen_opts *o, char **text, size_t *len) {
    if (o->prompt && o->prompt_file) {
        cli_error("give either -p or -f, not both");
        return CLI_EXIT_USAGE;
    }
    if (o->prompt_file)
        return read_file(o->prompt_file, text, len);
    if (o->prompt == NULL) {
        cli_error("no prompt: pass -p TEXT or -f FILE");
        return CLI_EXIT_USAGE;
    }
    *len = strlen(o->prompt);
    *text = malloc(*len + 1);
    if (*text == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_OOM_HOST;
    }
    memcpy(*text, o->prompt, *len + 1);
    return CLI_EXIT_OK;
}

int gen_opts_parse_all(gen_opts *o, int argc, char **argv, void (*usage)(FILE *out)) {
    for (int i = 1; i < argc;) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return -1;
        }
        int used = gen_opts_parse(o, argc, argv, i);
        if (used < 0)
            return CLI_EXIT_USAGE;
        if (used == 0) {
            cli_error("%s: unknown option '%s' (see spillway %s --help)", argv[0], argv[i],
                      argv[0]);
            return CLI_EXIT_USAGE;
        }
        i += used;
    }
    if (plan_opts_check_devices(o->n_devices, o->n_split) != 0)
        return CLI_EXIT_USAGE;
    return draft_flags_check(&o->draft);
}

/* --device-mem A,B,...: the split planned (a draft model's share off the
 * first device's budget), then an engine per device
 * (sw_engine_launch_split). Returns an exit status (error printed). */
static int start_split(gen_opts *o, const sw_model *m, const sw_engine_options *eo,
                       sw_engine **out) {
    o->draft.split = o->split;
    o->draft.n_split = o->n_split;
    o->draft.split_devices = o->n_devices ? o->devices : NULL;
    bool assistant = false;
    const int rc = draft_reserve(&o->draft, m, NULL, &o->plan, &assistant);
    if (rc != CLI_EXIT_OK)
        return rc;
    const sw_status st = sw_engine_launch_split(m, &o->plan, o->split,
                                                o->n_devices ? o->devices : NULL, o->n_split,
                                                eo, out);
    return st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
}

int gen_opts_start_engine(gen_opts *o, const sw_model *m, sw_engine **out) {
    sw_engine_options eo = o->engine;
    eo.load_progress = cli_load_progress;
    sw_status st = SW_OK;
    if (o->n_split) {
        const int rc = start_split(o, m, &eo, out);
        if (rc != CLI_EXIT_OK)
            return rc;
    } else {
        bool assistant = false; /* a drafter's device bytes come off the target's budget */
        int rc = draft_reserve(&o->draft, m, NULL, &o->plan, &assistant);
        if (rc != CLI_EXIT_OK)
            return rc;
        if ((st = sw_engine_launch(m, &o->plan, &eo, out)) != SW_OK)
            return cli_fail(st);
    }
    if (sw_engine_notes(*out)[0])
        fprintf(stderr, "note: %s", sw_engine_notes(*out));
    if (o->plan_json == NULL)
        return CLI_EXIT_OK;
    FILE *f = fopen(o->plan_json, "w");
    if (f == NULL) {
        cli_error("cannot write the plan to '%s': %s", o->plan_json, strerror(errno));
        return CLI_EXIT_IO;
    }
    sw_engine_print_plan(*out, f, 1);
    if (fclose(f) != 0) {
        cli_error("cannot write the plan to '%s'", o->plan_json);
        return CLI_EXIT_IO;
    }
    return CLI_EXIT_OK;
}

int gen_opts_start_scheduler(const gen_opts *o, const sw_model *m, sw_engine *e,
                             sw_scheduler **q, draft_ctx *draft) {
    sw_status st = sw_scheduler_create(e, m, q);
    if (st != SW_OK)
        return cli_fail(st);
    /* the draft model holds the target's sequences whole: the context the
     * target's plan resolved (-c 0 is each model's own default) */
    sw_plan_options p = o->plan;
    p.n_ctx = sw_engine_n_ctx(e);
    /* the drafter beside the target's first layers: a replica's device, a
     * split's first */
    sw_engine_device first = {0};
    if (sw_engine_n_devices(e) > 0 && sw_engine_device_report(e, 0, &first) != SW_OK)
        first.device = 0;
    return draft_start(&o->draft, &p, m, first.device, *q, draft);
}

/*
 * gen_opts.h — flags shared by the generating subcommands (run, chat,
 * verify, batch): model, prompt, sampling, reports, and the planning flags
 * of plan_opts.h (workload, memory, precision), parsed once.
 */
#ifndef SW_CLI_GEN_OPTS_H
#define SW_CLI_GEN_OPTS_H

#include "cli/cli.h"
#include "cli/draft.h"
#include "plan/split.h"

typedef struct gen_opts {
    const char *model;         /* -m; NULL = default model */
    const char *prompt;        /* -p */
    const char *prompt_file;   /* -f */
    const char *system;        /* --system (chat) */
    long n_predict;            /* -n; -1 = until end of sequence or context */
    sw_plan_options plan;      /* -c, -t, -b, -np, memory and precision flags */
    sw_engine_options engine;  /* load progress */
    sw_sampler_options sampler;/* --temp --top-k --top-p --min-p --seed */
    bool truncate;             /* --truncate: keep the prompt's tail */
    bool no_special;           /* --no-special: control tokens are plain text */
    bool verbose_prompt;       /* --verbose-prompt: echo prompt tokens */
    bool report;               /* --report: memory and speed, plan beside */
    const char *report_json;   /* --report-json PATH */
    const char *plan_json;     /* --plan-json PATH: the executed plan as JSON */
    draft_flags draft;         /* --draft-ngram, --draft-model, --draft-max */
    const char *json_schema;   /* --json-schema FILE (run, chat: gen_opts_take_json_schema) */
    uint64_t split[PLAN_MAX_DEVICES]; /* --device-mem A,B,...: a split over devices */
    uint32_t n_split;          /* 0: one device */
    uint32_t devices[PLAN_MAX_DEVICES]; /* --devices: which, for the split */
    uint32_t n_devices;        /* 0: devices 0, 1, ... */
} gen_opts;

void gen_opts_init(gen_opts *o);

/* Parses argv[i] (and its value) if it is a shared flag: returns the
 * number of arguments consumed (1 or 2), 0 if the flag is not ours, -1 on
 * a bad value (message printed). */
int gen_opts_parse(gen_opts *o, int argc, char **argv, int i);

/* Parses a whole command line (argv[0] = the subcommand) of shared flags.
 * Returns CLI_EXIT_OK, CLI_EXIT_USAGE (message printed), or -1 when --help
 * was given and `usage` printed (the caller then exits 0). */
int gen_opts_parse_all(gen_opts *o, int argc, char **argv, void (*usage)(FILE *out));

/* Usage lines for the shared flags. */
void gen_opts_usage(FILE *out);

/* Plans and loads the engine for o (sw_engine_launch, with the load
 * progress bar; with several --device-mem budgets, the split over them
 * and an engine per device), prints its notes, and writes --plan-json. A drafter's
 * device bytes (draft_reserve) come off the plan's budget first and are
 * kept in o->plan for gen_opts_start_scheduler. Returns an exit status
 * (error printed). */
int gen_opts_start_engine(gen_opts *o, const sw_model *m, sw_engine **out);

/* The scheduler over engine e of model m, with the drafter the draft
 * flags ask for (held by *draft until draft_end, after the scheduler is
 * destroyed). Returns an exit status (error printed). */
int gen_opts_start_scheduler(const gen_opts *o, const sw_model *m, sw_engine *e,
                             sw_scheduler **q, draft_ctx *draft);

/* Takes --json-schema FILE out of argv (run and chat call it before
 * gen_opts_parse_all; the other commands refuse the flag as unknown).
 * Returns an exit status (error printed). */
int gen_opts_take_json_schema(gen_opts *o, int *argc, char **argv);

/* Usage line of --json-schema. */
#define GEN_OPTS_JSON_SCHEMA_USAGE                                                            \
    "  --json-schema F  keep the output to the JSON schema in file F (compact JSON\n"          \
    "                   that validates; include/spillway_grammar.h lists what is supported)\n"

/* The grammar of --json-schema (NULL without it; destroy it after the
 * requests). Returns an exit status (error printed: an unsupported
 * keyword is named). */
int gen_opts_grammar(const gen_opts *o, struct sw_grammar **out);

/* Reads -p or -f into a malloc'd buffer (*len bytes, NUL-terminated).
 * Returns an exit status; prints the error. */
int gen_opts_read_prompt(const gen_opts *o, char **text, size_t *len);

#endif

/*
 * batch.c — `spillway batch -f prompts.jsonl [-np N] [-n N] [--temp T]
 * [-o out.jsonl]`: one JSON object per input line ({"id", "prompt"} and
 * optionally "n_predict", "temperature", "seed"), one per output line
 * ({"id", "text", token counts, stop reason, timings}) in input order. A
 * bad line is reported with its number and skipped; the rest still run.
 * A progress line goes to stderr, and a summary with the aggregate
 * tokens/s at the end. Scheduling is batch_run.c's.
 */
#define _POSIX_C_SOURCE 200809L /* getline */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch.h"
#include "cli/model_arg.h"
#include "format/json_util.h"
#include "util/error.h"
#include "util/utf8.h"

static void usage(FILE *out) {
    fputs("usage: spillway batch -f PROMPTS.jsonl [-o OUT.jsonl] [-np N] [options]\n"
          "  each input line: {\"id\": ..., \"prompt\": \"...\"} with optional \"n_predict\",\n"
          "  \"temperature\", \"seed\" (defaults: -n, --temp, --seed) and \"stop\" (a string or\n"
          "  up to 16: the text ends where the first one starts); each output line:\n"
          "  {\"id\", \"text\", \"n_prompt\", \"n_generated\", \"stop\", \"prefill_ms\",\n"
          "  \"decode_ms\"} in input order (stdout without -o). Up to -np requests run at\n"
          "  once; with --temp 0 every text equals `spillway run`'s for its prompt.\n"
          "  -o FILE          where the results go (default: standard output)\n"
          "  --replicas N     N engines of the plan, each with its own device (cuda/pjrt:\n"
          "                   device i) and -np sequences; a request goes to the one with\n"
          "                   the fewest tokens assigned (default 1)\n", out);
    gen_opts_usage(out);
}

/* An optional number member in [lo, hi]: SW_OK (set or absent), or
 * SW_ERR_FORMAT with a message. */
static sw_status opt_number(json_object *root, const char *key, double lo, double hi,
                            bool integer, double *out) {
    int64_t i = 0;
    double d = 0;
    sw_status st = integer ? jsonu_get_i64(root, key, "the line", &i)
                           : jsonu_get_f64(root, key, "the line", &d);
    if (st == SW_ERR_ARG)
        return SW_OK; /* absent: the command line's value */
    if (st != SW_OK)
        return st;
    d = integer ? (double)i : d;
    if (!(d >= lo && d <= hi))
        return sw_errorf(SW_ERR_FORMAT, "\"%s\" %g is out of range (%g..%g)", key, d, lo, hi);
    *out = d;
    return SW_OK;
}

/* "stop": absent, a string, or an array of up to BATCH_MAX_STOP
 * non-empty strings, copied into j. */
static sw_status read_stops(json_object *root, batch_job *j) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(root, "stop", &v) || v == NULL)
        return SW_OK;
    const bool one = json_object_is_type(v, json_type_string);
    if (!one && !json_object_is_type(v, json_type_array))
        return sw_errorf(SW_ERR_FORMAT, "\"stop\" must be a string or an array of strings");
    const size_t n = one ? 1 : json_object_array_length(v);
    if (n > BATCH_MAX_STOP)
        return sw_errorf(SW_ERR_FORMAT, "\"stop\" holds %zu strings (at most %d)", n,
                         BATCH_MAX_STOP);
    for (size_t i = 0; i < n; i++) {
        json_object *s = one ? v : json_object_array_get_idx(v, i);
        if (!json_object_is_type(s, json_type_string) || json_object_get_string_len(s) == 0)
            return sw_errorf(SW_ERR_FORMAT, "\"stop\" strings must be non-empty strings");
        if ((j->stop[i] = strdup(json_object_get_string(s))) == NULL)
            return sw_errorf(SW_ERR_OOM_HOST, "out of memory for a stop string");
        j->n_stop = i + 1;
    }
    return SW_OK;
}

/* The members of one request; *prompt borrows from root. */
static sw_status read_request(json_object *root, batch_job *j, const char **prompt,
                              size_t *plen) {
    json_object *id = NULL;
    double n = (double)j->n_predict, temp = j->sampling.temp, seed = (double)j->sampling.seed;
    if (!json_object_is_type(root, json_type_object))
        return sw_errorf(SW_ERR_FORMAT, "not a JSON object");
    if (!json_object_object_get_ex(root, "id", &id))
        return sw_errorf(SW_ERR_FORMAT, "no \"id\"");
    if (jsonu_get_str(root, "prompt", "the line", prompt, plen) != SW_OK)
        return sw_errorf(SW_ERR_FORMAT, "no \"prompt\" string");
    sw_status st = opt_number(root, "n_predict", -1, 1 << 30, true, &n);
    if (st == SW_OK)
        st = opt_number(root, "temperature", 0, 100, false, &temp);
    if (st == SW_OK)
        st = opt_number(root, "seed", 0, 9007199254740992.0, true, &seed);
    if (st == SW_OK)
        st = read_stops(root, j);
    j->n_predict = (long)n;
    j->sampling.temp = (float)temp;
    j->sampling.seed = (uint64_t)seed;
    j->id = json_object_get(id);
    return st;
}

/* One request line into job j. A bad line gets its message in why (""
 * when it was printed already) and a non-zero status. */
static int parse_job(batch_ctx *b, const char *line, size_t len, batch_job *j, char *why,
                     size_t cap) {
    json_object *root = NULL;
    const char *prompt = NULL;
    size_t plen = 0;
    j->n_predict = b->opt->n_predict;
    j->sampling = b->opt->sampler;
    sw_status st = jsonu_parse(line, len, "the line", &root);
    if (st == SW_OK)
        st = read_request(root, j, &prompt, &plen);
    int rc = cli_exit_code(st);
    if (st != SW_OK) {
        snprintf(why, cap, "%s", sw_last_error());
    } else {
        char where[32];
        snprintf(where, sizeof where, "line %zu", j->line);
        why[0] = '\0'; /* gen_prompt_tokens prints its own error */
        rc = gen_prompt_tokens(b->model, b->opt->no_special, b->opt->truncate, j->n_predict,
                               sw_engine_n_ctx(b->engine), prompt, plen, where, &j->prompt,
                               &j->n_prompt);
    }
    json_object_put(root);
    if (rc != CLI_EXIT_OK) {
        json_object_put(j->id);
        j->id = NULL;
    }
    return rc;
}

static void free_stops(batch_job *j) {
    for (size_t i = 0; i < j->n_stop; i++)
        free(j->stop[i]);
    j->n_stop = 0;
}

static bool line_is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Reads every line; bad ones are reported and left out. */
static int read_jobs(batch_ctx *b, const char *path, size_t *n_bad) {
    FILE *f = fopen(path, "rb");
    char *line = NULL, why[512];
    size_t cap = 0, n_line = 0;
    ssize_t len;
    if (f == NULL) {
        cli_error("cannot open '%s': %s", path, strerror(errno));
        return CLI_EXIT_IO;
    }
    int rc = CLI_EXIT_OK;
    while (rc == CLI_EXIT_OK && (len = getline(&line, &cap, f)) >= 0) {
        n_line++;
        size_t n = (size_t)len;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (line_is_blank(line, n))
            continue;
        batch_job *grown = realloc(b->jobs, (b->n_jobs + 1) * sizeof *grown);
        if (grown == NULL) {
            cli_error("out of memory reading '%s'", path);
            rc = CLI_EXIT_OOM_HOST;
            break;
        }
        b->jobs = grown;
        batch_job *j = &b->jobs[b->n_jobs];
        memset(j, 0, sizeof *j);
        j->line = n_line;
        int jr = parse_job(b, line, n, j, why, sizeof why);
        if (jr == CLI_EXIT_OK) {
            b->n_jobs++;
        } else if (jr == CLI_EXIT_OOM_HOST) {
            rc = jr;
        } else {
            if (why[0])
                cli_error("%s: line %zu: %s (skipped)", path, n_line, why);
            free(j->prompt);
            free_stops(j);
            (*n_bad)++;
        }
    }
    if (rc == CLI_EXIT_OK && ferror(f)) {
        cli_error("cannot read '%s'", path);
        rc = CLI_EXIT_IO;
    }
    free(line);
    fclose(f);
    return rc;
}

/* The text as a JSON string: invalid UTF-8 (a character cut by -n) becomes
 * U+FFFD, as JSON requires; valid text is kept byte for byte. */
static json_object *text_json(const batch_job *j) {
    const uint8_t *s = (const uint8_t *)(j->text ? j->text : "");
    size_t n = j->text_len, done = 0, len = 0;
    char *out = malloc(3 * n + 1);
    if (out == NULL)
        return NULL;
    while (done < n) {
        uint64_t ok = utf8_valid_prefix(s + done, n - done);
        memcpy(out + len, s + done, (size_t)ok);
        len += (size_t)ok;
        done += (size_t)ok;
        if (done < n) {
            memcpy(out + len, "\xEF\xBF\xBD", 3);
            len += 3;
            done++;
        }
    }
    json_object *o = json_object_new_string_len(out, (int)len);
    free(out);
    return o;
}

int batch_write_job(batch_ctx *b, const batch_job *j) {
    json_object *o = json_object_new_object();
    double decode_s = j->t_end - j->t_first;
    json_object_object_add(o, "id", json_object_get(j->id));
    json_object_object_add(o, "text", text_json(j));
    json_object_object_add(o, "n_prompt", json_object_new_int64((int64_t)j->n_prompt));
    json_object_object_add(o, "n_generated", json_object_new_int64((int64_t)j->n_generated));
    json_object_object_add(o, "stop", json_object_new_string(sw_finish_name(j->finish)));
    json_object_object_add(o, "prefill_ms", json_object_new_double(
                                                (j->t_first - j->t_start) * 1e3));
    json_object_object_add(o, "decode_ms", json_object_new_double(decode_s * 1e3));
    fprintf(b->out, "%s\n", json_object_to_json_string_ext(
                                o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return fflush(b->out) == 0 ? CLI_EXIT_OK : CLI_EXIT_IO;
}

static void summary(const batch_ctx *b, size_t n_bad) {
    const batch_totals *t = &b->totals;
    fprintf(stderr, "batch: %zu requests (%zu skipped), -np %u%s: %zu prompt tokens, %zu "
            "generated in %.2f s: %.1f tok/s generated overall, decode %.1f tok/s aggregate "
            "(%zu tokens in %.2f s of all-decode forwards), %zu forwards\n",
            b->n_jobs, n_bad, sw_engine_n_seq(b->engine), b->n_rep > 1 ? " per replica" : "",
            t->n_prompt, t->n_generated,
            t->wall_s, t->wall_s > 0 ? (double)t->n_generated / t->wall_s : 0.0,
            t->decode_s > 0 ? (double)t->n_decode_tokens / t->decode_s : 0.0,
            t->n_decode_tokens, t->decode_s, t->n_forwards);
    if (t->drafted)
        cli_print_spec(&t->spec, stderr);
}

/* -o is batch's own; everything else is the generation flags. */
static int parse_args(gen_opts *o, const char **out_path, long *replicas, int argc,
                      char **argv) {
    int n = 0;
    char **rest = malloc((size_t)argc * sizeof *rest);
    if (rest == NULL)
        return CLI_EXIT_OOM_HOST;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) &&
            i + 1 < argc) {
            *out_path = argv[++i];
            continue;
        }
        if (i > 0 && !strcmp(argv[i], "--replicas")) {
            char *end = NULL;
            const long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || end == argv[i + 1] || *end != '\0' || v < 1 ||
                v > CLI_MAX_REPLICAS) {
                cli_error("--replicas needs an integer in [1, %d]", CLI_MAX_REPLICAS);
                free(rest);
                return CLI_EXIT_USAGE;
            }
            *replicas = v;
            i++;
            continue;
        }
        rest[n++] = argv[i];
    }
    int rc = gen_opts_parse_all(o, n, rest, usage);
    free(rest);
    if (rc == CLI_EXIT_OK && o->prompt_file == NULL) {
        cli_error("batch needs -f PROMPTS.jsonl (see spillway batch --help)");
        rc = CLI_EXIT_USAGE;
    }
    return rc;
}

static void free_jobs(batch_ctx *b) {
    for (size_t i = 0; i < b->n_jobs; i++) {
        json_object_put(b->jobs[i].id);
        free(b->jobs[i].prompt);
        free(b->jobs[i].text);
        free_stops(&b->jobs[i]);
    }
    free(b->jobs);
}

int cmd_batch(int argc, char **argv) {
    gen_opts o;
    const char *out_path = NULL;
    sw_model *m = NULL;
    size_t n_bad = 0;
    batch_ctx b = {.opt = &o, .out = stdout, .replicas = 1};
    gen_opts_init(&o);
    int rc = parse_args(&o, &out_path, &b.replicas, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if ((rc = cli_replicas_check(b.replicas, &o)) != CLI_EXIT_OK ||
        (rc = cli_open_model(o.model, &m)) != CLI_EXIT_OK)
        return rc;
    b.model = m;
    sw_model_special_tokens(m, &b.special);
    for (; b.n_rep < (size_t)b.replicas; b.n_rep++) {
        if (b.replicas > 1)
            fprintf(stderr, "batch: replica %zu of %ld\n", b.n_rep + 1, b.replicas);
        if ((rc = cli_replica_engine(&o, m, b.n_rep, &b.engines[b.n_rep])) != CLI_EXIT_OK)
            goto done;
    }
    b.engine = b.engines[0];
    if ((rc = read_jobs(&b, o.prompt_file, &n_bad)) != CLI_EXIT_OK)
        goto done;
    if (out_path != NULL && (b.out = fopen(out_path, "w")) == NULL) {
        cli_error("cannot write '%s': %s", out_path, strerror(errno));
        rc = CLI_EXIT_IO;
        goto done;
    }
    if ((rc = batch_run(&b)) == CLI_EXIT_OK)
        summary(&b, n_bad);
    const sw_scheduler_stats *spec = b.totals.drafted ? &b.totals.spec : NULL;
    if (rc == CLI_EXIT_OK && o.report)
        rc = cli_print_report(b.engine, spec, stderr);
    if (rc == CLI_EXIT_OK && o.report_json)
        rc = cli_write_report_json(b.engine, spec, o.report_json);
done:
    if (b.out != NULL && b.out != stdout && fclose(b.out) != 0 && rc == CLI_EXIT_OK) {
        cli_error("cannot write '%s'", out_path);
        rc = CLI_EXIT_IO;
    }
    free_jobs(&b);
    for (size_t i = 0; i < b.n_rep; i++)
        sw_engine_destroy(b.engines[i]);
    sw_model_close(m);
    return rc;
}

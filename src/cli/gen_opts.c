/*
 * gen_opts.c — parsing of the generation flags (gen_opts.h). Numbers are
 * parsed strictly: trailing junk, overflow and out-of-range values are
 * errors that name the flag, never silently clamped.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gen_opts.h"

void gen_opts_init(gen_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_predict = -1;
    o->engine = sw_engine_options_default();
    o->sampler = sw_sampler_options_default();
    o->sampler.seed = 0x5eed;
}

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
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

/* v must be one of the NULL-terminated names; else a usage error that
 * lists them. */
static int parse_choice(const char *flag, const char *v, const char *const *names,
                        const char **out) {
    for (size_t i = 0; names[i] != NULL; i++)
        if (!strcmp(v, names[i])) {
            *out = names[i];
            return 0;
        }
    char list[64] = "";
    for (size_t i = 0, len = 0; names[i] != NULL && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    cli_error("%s expects one of %s, got '%s'", flag, list, v);
    return -1;
}

static int parse_value(gen_opts *o, const char *f, const char *v) {
    static const char *const kv_types[] = {"f32", "f16", "bf16", NULL};
    /* Conversions a model file takes at load; q4_k_m and the like are
     * chosen when a file is made, not here. */
    static const char *const weight_types[] = {"bf16", "f16", "q8_0", NULL};
    long n;
    if (!strcmp(f, "-m") || !strcmp(f, "--model")) { o->model = v; return 0; }
    if (!strcmp(f, "-p") || !strcmp(f, "--prompt")) { o->prompt = v; return 0; }
    if (!strcmp(f, "-f") || !strcmp(f, "--file")) { o->prompt_file = v; return 0; }
    if (!strcmp(f, "--system")) { o->system = v; return 0; }
    if (!strcmp(f, "-n") || !strcmp(f, "--n-predict"))
        return parse_long(f, v, -1, 1L << 30, &o->n_predict);
    if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
        if (parse_long(f, v, 1, 1L << 30, &n)) return -1;
        o->engine.n_ctx = (uint32_t)n;
        return 0;
    }
    if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
        if (parse_long(f, v, 1, 256, &n)) return -1;
        o->engine.n_threads = (int)n;
        return 0;
    }
    if (!strcmp(f, "-b") || !strcmp(f, "--batch-size")) {
        if (parse_long(f, v, 1, 4096, &n)) return -1;
        o->engine.n_batch = (uint32_t)n;
        return 0;
    }
    if (!strcmp(f, "--backend")) { o->engine.backend = v; return 0; }
    if (!strcmp(f, "--place")) { o->engine.place = v; return 0; }
    if (!strcmp(f, "--report-json")) { o->report_json = v; return 0; }
    if (!strcmp(f, "--kv-type"))
        return parse_choice(f, v, kv_types, &o->engine.kv_type);
    if (!strcmp(f, "--weights"))
        return parse_choice(f, v, weight_types, &o->engine.weights_type);
    if (!strcmp(f, "--device-mem") || !strcmp(f, "--host-mem")) {
        uint64_t bytes;
        if (sw_parse_size(v, 0, &bytes) != SW_OK) {
            cli_error("%s: %s", f, sw_last_error());
            return -1;
        }
        *(f[2] == 'd' ? &o->engine.device_mem_bytes : &o->engine.host_mem_bytes) = bytes;
        return 0;
    }
    if (!strcmp(f, "--sim-link-bw")) {
        uint64_t bps;
        if (sw_parse_rate(v, &bps) != SW_OK) {
            cli_error("%s: %s", f, sw_last_error());
            return -1;
        }
        o->engine.sim_link_Bps = (double)bps;
        return 0;
    }
    if (!strcmp(f, "-ngl") || !strcmp(f, "--n-gpu-layers")) {
        if (parse_long(f, v, 0, 100000, &n)) return -1;
        o->engine.n_gpu_layers = (int)n;
        return 0;
    }
    if (!strcmp(f, "--temp")) return parse_float(f, v, 0.0, 100.0, &o->sampler.temp);
    if (!strcmp(f, "--top-p")) return parse_float(f, v, 1e-9, 1.0, &o->sampler.top_p);
    if (!strcmp(f, "--min-p")) return parse_float(f, v, 0.0, 0.999999, &o->sampler.min_p);
    if (!strcmp(f, "--top-k")) {
        if (parse_long(f, v, 0, 1L << 30, &n)) return -1;
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
    if (!strcmp(f, "--truncate")) { o->truncate = true; return 1; }
    if (!strcmp(f, "--no-special")) { o->no_special = true; return 1; }
    if (!strcmp(f, "--verbose-prompt")) { o->verbose_prompt = true; return 1; }
    if (!strcmp(f, "--report")) { o->report = true; return 1; }
    static const char *const with_value[] = {
        "-m", "--model", "-p", "--prompt", "-f", "--file", "--system", "-n", "--n-predict",
        "-c", "--ctx-size", "-t", "--threads", "-b", "--batch-size", "--temp", "--top-p",
        "--min-p", "--top-k", "--seed", "--backend", "--place", "--report-json",
        "--device-mem", "--host-mem", "--sim-link-bw", "-ngl", "--n-gpu-layers", "--kv-type",
        "--weights"};
    for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
        if (strcmp(f, with_value[k]) != 0)
            continue;
        if (i + 1 >= argc) {
            cli_error("%s needs a value", f);
            return -1;
        }
        return parse_value(o, f, argv[i + 1]) == 0 ? 2 : -1;
    }
    return 0;
}

void gen_opts_usage(FILE *out) {
    fputs("  -m FILE|DIR      GGUF file or Hugging Face folder (default: the fetched\n"
          "                   Gemma 3 270M)\n"
          "  -p TEXT | -f FILE  prompt text, or a file holding it\n"
          "  -n N             tokens to generate (-1: until end of turn or context)\n"
          "  -c N             context length (default: min(model's, 4096))\n"
          "  -t N             CPU threads (default: all cores)\n"
          "  -b N             prefill chunk in tokens (default 64)\n"
          "  --temp T         temperature (0: greedy; default 0.8)\n"
          "  --top-k K        keep the K most likely tokens (0: off; default 40)\n"
          "  --top-p P        nucleus sampling (1: off; default 0.95)\n"
          "  --min-p P        drop tokens below P x the best (0: off; default 0.05)\n"
          "  --seed S         random seed (same seed, same output)\n"
          "  --truncate       keep the end of a prompt longer than the context\n"
          "  --no-special     treat <start_of_turn> etc. in the prompt as plain text\n"
          "memory (see spillway plan --help):\n"
          "  --backend B      cpu (default) or sim (a simulated device)\n"
          "  --device-mem S   device budget, e.g. 512M, 8G, 80%%\n"
          "  --host-mem S     host budget (default: available RAM)\n"
          "  --sim-link-bw R  sim: host-to-device bandwidth, e.g. 16GB/s\n"
          "  --place SPEC     pin layers, e.g. 0-5=resident,6-=streamed,lm_head=host\n"
          "  -ngl N           first N layers resident, plan the rest\n"
          "  --kv-type T      KV cache type: f32 (default), f16 or bf16 (half the bytes)\n"
          "  --weights T      convert f32/f16/bf16 matrices at load to bf16, f16 or q8_0\n"
          "                   (quantized ones are kept as stored; the plan shows the saving)\n"
          "  --report         print memory and speed measured vs the plan's prediction\n"
          "  --report-json P  write the same as one JSON object to P\n",
          out);
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
    return CLI_EXIT_OK;
}

/*
 * synth.c — `spillway synth`: write a synthetic model of an official Gemma
 * shape (random weights, synthetic vocabulary) as a GGUF file or a Hugging
 * Face folder (Gemma 4 assistants, the drafters: folders only), to
 * rehearse models that are not on this machine. The work
 * is src/synth/; this file parses flags, draws the progress bar (stderr,
 * when it is a terminal), prints the one-line summary and turns Ctrl-C
 * into a clean stop (the temporary output is removed).
 */
#define _POSIX_C_SOURCE 200809L /* sigaction, clock_gettime */

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/interrupt.h"
#include "synth/synth.h"
#include "util/clock.h"

static void usage(FILE *out) {
    fputs("usage: spillway synth --shape NAME -o PATH [options]\n"
          "  --shape NAME     official Gemma shape: gemma-2b gemma-7b gemma2-2b gemma2-9b\n"
          "                   gemma2-27b gemma3-270m gemma3-1b gemma3-4b gemma3-12b gemma3-27b\n"
          "                   gemma4-e2b gemma4-e4b gemma4-26b-a4b gemma4-31b\n"
          "                   or a Gemma 4 assistant (a speculative-decoding drafter, --format\n"
          "                   hf only, always 4 layers; run it with -md beside its target):\n"
          "                   gemma4-e2b-assistant gemma4-e4b-assistant (width 256, MLP 2048,\n"
          "                   centroid head) gemma4-26b-a4b-assistant gemma4-31b-assistant\n"
          "                   (width 1024, MLP 8192, dense head); these widths are estimates\n"
          "                   (only the 31B one's ~470M parameters is published)\n"
          "  -o PATH          output file (gguf) or folder (hf); written as PATH.tmp.<pid>\n"
          "                   and renamed when complete\n"
          "  --type T         bf16 (default), f16, q8_0, q4_k, q4_k_m (llama.cpp's mix:\n"
          "                   Q6_K for the LM head and some V and down projections;\n"
          "                   hf: bf16 or f16)\n"
          "  --format F       gguf (default) or hf (config.json, safetensors, tokenizer.json)\n"
          "  --layers N       keep only the first N layers (widths unchanged; a Gemma 4\n"
          "                   hf folder must end on a full-attention layer)\n"
          "  --vocab N        vocabulary of N tokens instead of the shape's (>= 512; small\n"
          "                   test files; give a target and its assistant the same N; an\n"
          "                   assistant's centroids: the largest power of two dividing N,\n"
          "                   at most 2048 and N/16)\n"
          "  --seed S         weight seed (default 1); same seed, same bytes\n"
          "  --shard-size S   hf: largest safetensors file (default 5GB, as transformers)\n"
          "  --chunk SIZE     f32 generated per step (default 4M; output is the same)\n"
          "  -t N             threads generating weights (default: all cores, at most 16)\n"
          "  --force          replace an existing PATH\n"
          "  -q, --quiet      no progress bar and no summary\n"
          "weights are random (std 1/sqrt(row length); norms near 1) so activations stay\n"
          "finite; the text they generate is noise. Example, a 9B rehearsal:\n"
          "  spillway synth --shape gemma2-9b -o /tmp/g2-9b.gguf\n"
          "  spillway run -m /tmp/g2-9b.gguf --backend sim --device-mem 4G -p Hello -n 3\n"
          "and a drafter beside its target:\n"
          "  spillway synth --shape gemma4-e2b --format hf --layers 5 -o /tmp/e2b\n"
          "  spillway synth --shape gemma4-e2b-assistant --format hf -o /tmp/e2b-asst\n"
          "  spillway run -m /tmp/e2b -md /tmp/e2b-asst -p Hello -n 8 --temp 0\n"
          "exit status: 0 written, 2 bad flags, 3 file system (exists, no space, ...)\n",
          out);
}

/* ---- progress --------------------------------------------------------------- */

typedef struct bar {
    bool tty;
    double t0, last;
    const char *label;
    bool drawn;
} bar;


static void on_progress(void *user, uint64_t done, uint64_t total) {
    bar *b = user;
    double t = sw_clock_s();
    if (!b->tty || total == 0 || (t - b->last < 0.1 && done < total))
        return;
    b->last = t;
    b->drawn = true;
    double frac = done >= total ? 1.0 : (double)done / (double)total;
    double rate = t > b->t0 ? (double)done / (t - b->t0) : 0.0;
    double eta = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : 0.0;
    char cells[25];
    int n = (int)(frac * 24.0);
    for (int i = 0; i < 24; i++)
        cells[i] = i < n ? '#' : '-';
    cells[24] = '\0';
    fprintf(stderr, "\r%s [%s] %3d%%  %.2f/%.2f GB  %.0f MB/s  ETA %d:%02d  ", b->label, cells,
            (int)(frac * 100.0), (double)done / 1e9, (double)total / 1e9, rate / 1e6,
            (int)eta / 60, (int)eta % 60);
    fflush(stderr);
}

/* ---- flags ---------------------------------------------------------------------- */

static int parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi) {
        cli_error("%s expects an integer in %llu..%llu, got '%s'", flag,
                  (unsigned long long)lo, (unsigned long long)hi, s);
        return CLI_EXIT_USAGE;
    }
    *out = v;
    return CLI_EXIT_OK;
}

static int parse_value(synth_options *o, const char *f, const char *v) {
    uint64_t n;
    int rc;
    if (!strcmp(f, "--shape")) o->shape = v;
    else if (!strcmp(f, "--type")) o->type = v;
    else if (!strcmp(f, "--format")) o->format = v;
    else if (!strcmp(f, "-o") || !strcmp(f, "--output")) o->path = v;
    else if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
        if ((rc = parse_u64(f, v, 1, 16, &n)) != CLI_EXIT_OK)
            return rc;
        o->n_threads = (int)n;
    } else if (!strcmp(f, "--seed"))
        return parse_u64(f, v, 0, UINT64_MAX, &o->seed);
    else if (!strcmp(f, "--layers") || !strcmp(f, "--vocab")) {
        if ((rc = parse_u64(f, v, 1, UINT32_MAX, &n)) != CLI_EXIT_OK)
            return rc;
        *(f[2] == 'l' ? &o->n_layers : &o->n_vocab) = (uint32_t)n;
    } else if (!strcmp(f, "--shard-size")) {
        if (sw_parse_size(v, 0, &n) != SW_OK || n == 0) {
            cli_error("--shard-size expects a size (e.g. 5GB, 2G), got '%s'", v);
            return CLI_EXIT_USAGE;
        }
        o->shard_bytes = n;
    } else if (!strcmp(f, "--chunk")) {
        if (sw_parse_size(v, 0, &n) != SW_OK || n < 4 || n > ((uint64_t)1 << 30)) {
            cli_error("--chunk expects a size from 4 bytes to 1G (e.g. 64K, 4M), got '%s'", v);
            return CLI_EXIT_USAGE;
        }
        o->chunk_bytes = (size_t)n;
    } else {
        cli_error("unknown option '%s'; run 'spillway synth --help'", f);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Returns an exit status, or -1 after --help. */
static int parse_args(synth_options *o, bool *quiet, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(f, "--force")) {
            o->force = true;
            continue;
        }
        if (!strcmp(f, "-q") || !strcmp(f, "--quiet")) {
            *quiet = true;
            continue;
        }
        if (f[0] != '-') {
            cli_error("unexpected argument '%s'; run 'spillway synth --help'", f);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            cli_error("%s needs a value (or is unknown); run 'spillway synth --help'", f);
            return CLI_EXIT_USAGE;
        }
        int rc = parse_value(o, f, argv[++i]);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    if (o->shape == NULL || o->path == NULL) {
        cli_error("synth needs --shape NAME and -o PATH; run 'spillway synth --help'");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static void print_summary(const synth_options *o, const synth_result *r) {
    double mbps = r->seconds > 0 ? (double)r->bytes_written / r->seconds / 1e6 : 0.0;
    printf("synth: wrote %s: %s %s %s, %u/%u layers, %u tokens, %.3f B params, %u file%s, "
           "%.2f GB in %.1f s (%.0f MB/s), seed %llu\n",
           o->path, r->shape, synth_type_name(o->type), o->format ? o->format : "gguf",
           r->n_layer, r->n_layer_full, r->n_vocab, (double)r->n_params / 1e9, r->n_files,
           r->n_files == 1 ? "" : "s", (double)r->bytes_written / 1e9, r->seconds, mbps,
           (unsigned long long)o->seed);
}

int cmd_synth(int argc, char **argv) {
    synth_options o = synth_options_default();
    synth_result r;
    bool quiet = false;
    o.type = "bf16";
    int rc = parse_args(&o, &quiet, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    char label[96];
    snprintf(label, sizeof label, "synth %s %s", o.shape, o.type);
    bar b = {.tty = !quiet && isatty(STDERR_FILENO), .t0 = sw_clock_s(), .label = label};
    o.progress = on_progress;
    o.progress_user = &b;
    o.cancel = &cli_interrupt_signal;
    cli_interrupt_catch();
    sw_status st = synth_write(&o, &r);
    cli_interrupt_restore();
    if (b.drawn)
        fputc('\n', stderr);
    if (st != SW_OK)
        return cli_fail(st);
    if (r.n_fallback > 0)
        fprintf(stderr, "spillway: note: %u tensor%s in a fallback type: %s\n", r.n_fallback,
                r.n_fallback == 1 ? "" : "s", r.fallback_note);
    if (!quiet)
        print_summary(&o, &r);
    return CLI_EXIT_OK;
}

/*
 * plan_cmd.c — `spillway plan`: where every byte of a model and workload
 * would live and how fast it would run, without loading weights. -m takes
 * a model file or a catalog name (gemma3-27b, gemma-2-9b, ...). When
 * nothing fits, the exit status says which memory ran out (7 device, 8
 * host) and the message lists changes that would fit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct plan_args {
    const char *model;
    const char *rates;       /* "cache" (default) or "defaults" */
    const char *device_mem;
    const char *host_mem;
    bool json;
    sw_plan_options opt;
} plan_args;

static void usage(FILE *out) {
    fputs("usage: spillway plan [-m FILE|NAME] [options]\n"
          "  -m FILE|NAME      model file, or a catalog model planned without a file:\n"
          "                    gemma-2b gemma-7b gemma2-2b gemma2-9b gemma2-27b gemma3-270m\n"
          "                    gemma3-1b gemma3-4b gemma3-12b gemma3-27b (default: the\n"
          "                    fetched Gemma 3 270M file)\n"
          "  --weights TYPE    catalog models: bf16, q8_0, q4_k_m (default), f16, f32;\n"
          "                    model files: bf16, f16 or q8_0, converted at load as run\n"
          "                    does (the plan shows the bytes saved); --type is the same\n"
          "  --backend B       cpu, sim or cuda (default: cuda if a device is visible)\n"
          "  --device-mem S    device budget: 512M, 8G, 8GiB (binary), 8GB (decimal),\n"
          "                    80% (of the device); required for sim\n"
          "  --host-mem S      host budget (default MemAvailable; sim takes it as given)\n"
          "  -c N              context length (default min(trained, 4096))\n"
          "  --batch N         sequences decoded together (default 1)\n"
          "  -b N              prefill chunk, tokens per pass (default 64)\n"
          "  -t N              host threads (sizes the scratch; default all cores)\n"
          "  --kv-type T       f32 (default), f16, bf16\n"
          "  --place SPEC      pin placements, e.g. 0-11=resident,12-=host,lm_head=host\n"
          "  -ngl N            first N layers resident, the planner places the rest\n"
          "  --sim-link-bw R   sim: link rate, e.g. 16GB/s\n"
          "  --rates R         cache (doctor's measurements if any) or defaults\n"
          "  --json            machine-readable plan\n"
          "exit status: 0 fits, 7 device memory short, 8 host memory short, 2 bad flags\n",
          out);
}

static int parse_u32(const char *flag, const char *s, long lo, long hi, uint32_t *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) {
        cli_error("%s expects an integer in %ld..%ld, got '%s'", flag, lo, hi, s);
        return CLI_EXIT_USAGE;
    }
    *out = (uint32_t)v;
    return CLI_EXIT_OK;
}

/* Flags with a value; returns an exit status. */
static int parse_value(plan_args *a, const char *f, const char *v) {
    uint32_t n;
    int rc;
    if (!strcmp(f, "-m") || !strcmp(f, "--model")) a->model = v;
    else if (!strcmp(f, "--weights") || !strcmp(f, "--type")) a->opt.weights = v;
    else if (!strcmp(f, "--backend")) a->opt.backend = v;
    else if (!strcmp(f, "--device-mem")) a->device_mem = v;
    else if (!strcmp(f, "--host-mem")) a->host_mem = v;
    else if (!strcmp(f, "--kv-type")) a->opt.kv_type = v;
    else if (!strcmp(f, "--place")) a->opt.place = v;
    else if (!strcmp(f, "--rates")) a->rates = v;
    else if (!strcmp(f, "--sim-link-bw")) {
        uint64_t bps;
        if (sw_parse_rate(v, &bps) != SW_OK) {
            cli_error("%s: %s", f, sw_last_error());
            return CLI_EXIT_USAGE;
        }
        a->opt.sim_link_Bps = (double)bps;
    } else if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size"))
        return parse_u32(f, v, 1, 1L << 24, &a->opt.n_ctx);
    else if (!strcmp(f, "--batch"))
        return parse_u32(f, v, 1, 4096, &a->opt.n_seq);
    else if (!strcmp(f, "-b") || !strcmp(f, "--batch-size"))
        return parse_u32(f, v, 1, 4096, &a->opt.n_batch);
    else if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
        if ((rc = parse_u32(f, v, 1, 256, &n)) != CLI_EXIT_OK)
            return rc;
        a->opt.n_threads = (int)n;
    } else if (!strcmp(f, "-ngl") || !strcmp(f, "--n-gpu-layers")) {
        if ((rc = parse_u32(f, v, 0, 100000, &n)) != CLI_EXIT_OK)
            return rc;
        a->opt.n_gpu_layers = (int)n;
    } else {
        cli_error("unknown option '%s'; run 'spillway plan --help'", f);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int parse_args(plan_args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(f, "--json")) {
            a->json = true;
            continue;
        }
        if (f[0] != '-') {
            cli_error("unexpected argument '%s'; run 'spillway plan --help'", f);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            cli_error("%s needs a value (or is unknown); run 'spillway plan --help'", f);
            return CLI_EXIT_USAGE;
        }
        int rc = parse_value(a, f, argv[++i]);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    return CLI_EXIT_OK;
}

/* Turns the size flags into bytes; percentages are of the first device's
 * total and of physical RAM. */
static int resolve_sizes(plan_args *a) {
    if (a->rates && strcmp(a->rates, "cache") != 0 && strcmp(a->rates, "defaults") != 0) {
        cli_error("--rates expects 'cache' or 'defaults', got '%s'", a->rates);
        return CLI_EXIT_USAGE;
    }
    a->opt.default_rates = a->rates && !strcmp(a->rates, "defaults");
    if (a->device_mem) {
        uint64_t whole = 0;
        sw_device_report rep;
        if (strchr(a->device_mem, '%') && sw_devices_query(&rep) == SW_OK)
            whole = rep.devices[0].total_bytes;
        if (sw_parse_size(a->device_mem, whole, &a->opt.device_mem_bytes) != SW_OK) {
            cli_error("--device-mem: %s", sw_last_error());
            return CLI_EXIT_USAGE;
        }
    }
    if (a->host_mem) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        uint64_t whole = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
        if (sw_parse_size(a->host_mem, whole, &a->opt.host_mem_bytes) != SW_OK) {
            cli_error("--host-mem: %s", sw_last_error());
            return CLI_EXIT_USAGE;
        }
    }
    return CLI_EXIT_OK;
}

/* -m: an existing file or Hugging Face folder is opened; anything else is
 * a catalog name. No -m: the fetched default model. */
static int open_source(const char *arg, sw_model **model, const char **name) {
    char path[4096];
    struct stat sb;
    *model = NULL;
    *name = NULL;
    if (arg == NULL) {
        sw_status st = sw_default_model_path(path, sizeof path);
        if (st != SW_OK)
            return cli_fail(st);
        if (stat(path, &sb) != 0) {
            cli_error("the default model is not at %s; run 'spillway fetch', or plan a "
                      "catalog model with -m gemma3-27b (see --help)", path);
            return CLI_EXIT_IO;
        }
        arg = path;
    } else if (stat(arg, &sb) != 0) {
        *name = arg;
        return CLI_EXIT_OK;
    }
    sw_status st = sw_model_open(arg, model);
    return st == SW_OK ? CLI_EXIT_OK : cli_fail(st);
}

int cmd_plan(int argc, char **argv) {
    plan_args a;
    sw_model *model = NULL;
    sw_plan *p = NULL;
    const char *name = NULL;
    memset(&a, 0, sizeof a);
    a.opt = sw_plan_options_default();
    int rc = parse_args(&a, argc, argv);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if ((rc = resolve_sizes(&a)) != CLI_EXIT_OK ||
        (rc = open_source(a.model, &model, &name)) != CLI_EXIT_OK)
        return rc;
    sw_status st = sw_plan_create(model, name, &a.opt, &p);
    if (st == SW_OK) {
        sw_plan_print(p, stdout, a.json);
        rc = CLI_EXIT_OK;
    } else {
        rc = cli_fail(st);
    }
    sw_plan_destroy(p);
    sw_model_close(model);
    return rc;
}

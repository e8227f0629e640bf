/*
 * plan_opts.c — parsing of the planning flags (plan_opts.h). Numbers are
 * parsed strictly: trailing junk, overflow and out-of-range values are
 * errors that name the flag, never silently clamped. Percentages: of the
 * device's total memory for --device-mem (resolved by the planner, which
 * knows the device), of physical RAM for --host-mem.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES), setenv */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/plan_opts.h"
#include "plan/split.h"

static const char *const planning_flags[] = {
    "-c", "--ctx-size", "-t", "--threads", "-b", "--batch-size", "-np", "--parallel",
    "--backend", "--device-mem", "--host-mem", "--sim-link-bw", "--place", "-ngl",
    "--n-gpu-layers", "--kv-type", "--weights", "--type", "--pjrt-plugin", "--cpu-dots",
    "-ncmoe", "--n-cpu-moe", "--expert-cache", "--expert-policy", "--expert-copy",
    "--expert-prefetch", "--expert-hit-rate", "--devices"};

bool plan_opts_has(const char *flag) {
    for (size_t i = 0; i < sizeof planning_flags / sizeof planning_flags[0]; i++)
        if (!strcmp(flag, planning_flags[i]))
            return true;
    return false;
}

static uint64_t physical_ram(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

static int parse_memory(sw_plan_options *o, const char *f, const char *v) {
    bool device = !strcmp(f, "--device-mem");
    sw_status st;
    if (device && strchr(v, ',') != NULL) { /* plan, run, chat, verify, batch take them */
        cli_error("--device-mem %s: several budgets (a split over devices) are for plan, run, "
                  "chat, verify, batch and serve; give one budget here", v);
        return -1;
    }
    if (device && strchr(v, '%') != NULL) {
        st = sw_parse_fraction(v, &o->device_mem_fraction);
        o->device_mem_bytes = 0;
    } else if (device) {
        st = sw_parse_size(v, 0, &o->device_mem_bytes);
        o->device_mem_fraction = 0;
    } else {
        st = sw_parse_size(v, physical_ram(), &o->host_mem_bytes);
    }
    if (st != SW_OK) {
        cli_error("%s: %s", f, sw_last_error());
        return -1;
    }
    return 0;
}

static int parse_counts(sw_plan_options *o, const char *f, const char *v) {
    long n;
    if (!strcmp(f, "-c") || !strcmp(f, "--ctx-size")) {
        if (cli_parse_long(f, v, 1, 1L << 24, &n)) return -1;
        o->n_ctx = (uint32_t)n;
    } else if (!strcmp(f, "-t") || !strcmp(f, "--threads")) {
        if (cli_parse_long(f, v, 1, 256, &n)) return -1;
        o->n_threads = (int)n;
    } else if (!strcmp(f, "-b") || !strcmp(f, "--batch-size")) {
        if (cli_parse_long(f, v, 1, 4096, &n)) return -1;
        o->n_batch = (uint32_t)n;
    } else if (!strcmp(f, "-np") || !strcmp(f, "--parallel")) {
        if (cli_parse_long(f, v, 1, 256, &n)) return -1;
        o->n_seq = (uint32_t)n;
    } else if (!strcmp(f, "-ncmoe") || !strcmp(f, "--n-cpu-moe")) {
        if (cli_parse_long(f, v, 0, 100000, &n)) return -1;
        o->n_cpu_moe = (int)n;
    } else {
        if (cli_parse_long(f, v, 0, 100000, &n)) return -1;
        o->n_gpu_layers = (int)n;
    }
    return 0;
}

int plan_opts_parse(sw_plan_options *o, const char *f, const char *v) {
    if (!strcmp(f, "--backend")) {
        o->backend = v;
    } else if (!strcmp(f, "--place")) {
        o->place = v;
    } else if (!strcmp(f, "--kv-type")) {
        o->kv_type = v;
    } else if (!strcmp(f, "--cpu-dots")) {
        o->cpu_dots = v;
    } else if (!strcmp(f, "--weights") || !strcmp(f, "--type")) {
        o->weights = v;
    } else if (!strcmp(f, "--pjrt-plugin")) {
        /* The planner, the engine and doctor all find the plugin here. */
        if (setenv("SPILLWAY_PJRT_PLUGIN", v, 1) != 0) {
            cli_error("--pjrt-plugin: cannot set SPILLWAY_PJRT_PLUGIN");
            return -1;
        }
    } else if (!strcmp(f, "--expert-policy")) {
        o->experts.policy = v;
    } else if (!strcmp(f, "--expert-copy")) {
        o->experts.copy = v;
    } else if (!strcmp(f, "--expert-prefetch")) {
        if (strcmp(v, "on") && strcmp(v, "off")) {
            cli_error("%s '%s': on or off", f, v);
            return -1;
        }
        o->experts.prefetch = !strcmp(v, "on");
    } else if (!strcmp(f, "--expert-hit-rate")) {
        char *end = NULL;
        double r = strtod(v, &end);
        if (end != v && end != NULL && *end == '%' && end[1] == '\0') {
            r /= 100;
            end++;
        }
        if (end == v || end == NULL || *end != '\0' || !(r >= 0 && r <= 1)) {
            cli_error("%s '%s': a share like 0.6 or 60%%", f, v);
            return -1;
        }
        o->experts.hit_rate = r;
    } else if (!strcmp(f, "--expert-cache")) {
        long n = -1;
        if (strcmp(v, "auto") && cli_parse_long(f, v, 0, 100000, &n))
            return -1;
        o->experts.slots = (int)n;
    } else if (!strcmp(f, "--devices")) { /* plan, run, ... take it beside a split */
        cli_error("--devices %s: picks the devices of a split over several (--device-mem A,B) "
                  "for plan, run, chat, verify, batch and serve", v);
        return -1;
    } else if (!strcmp(f, "--device-mem") || !strcmp(f, "--host-mem")) {
        return parse_memory(o, f, v);
    } else if (!strcmp(f, "--sim-link-bw")) {
        uint64_t bps;
        if (sw_parse_rate(v, &bps) != SW_OK) {
            cli_error("%s: %s", f, sw_last_error());
            return -1;
        }
        o->sim_link_Bps = (double)bps;
    } else {
        return parse_counts(o, f, v);
    }
    return 0;
}

int plan_opts_parse_split(const char *v, uint64_t *out, uint32_t *n) {
    char item[64];
    *n = 0;
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*n == PLAN_MAX_DEVICES || len == 0 || len >= sizeof item) {
            cli_error("--device-mem %s: give 2 to %d sizes separated by commas (e.g. 16G,16G)",
                      v, PLAN_MAX_DEVICES);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (sw_parse_size(item, 0, &out[(*n)++]) != SW_OK) {
            cli_error("--device-mem: device %u: %s", *n - 1, sw_last_error());
            return -1;
        }
        if (comma == NULL)
            return 0;
        p = comma + 1;
    }
}

int plan_opts_parse_devices(const char *v, uint32_t *out, uint32_t *n) {
    *n = 0;
    for (const char *p = v;;) {
        char *end = NULL;
        errno = 0;
        const unsigned long d = strtoul(p, &end, 10);
        if (end == p || errno || d > 255 || (*end != ',' && *end != '\0') ||
            *n == PLAN_MAX_DEVICES || p[0] == '-' || p[0] == '+' || p[0] == ' ') {
            cli_error("--devices %s: give 2 to %d device numbers separated by commas (e.g. "
                      "0,2)", v, PLAN_MAX_DEVICES);
            return -1;
        }
        out[(*n)++] = (uint32_t)d;
        if (*end == '\0')
            return 0;
        p = end + 1;
    }
}

int plan_opts_check_devices(uint32_t n_devices, uint32_t n_split) {
    if (n_devices == 0 || n_devices == n_split)
        return 0;
    if (n_split == 0) {
        cli_error("--devices picks the devices of a split: give one --device-mem budget per "
                  "device (A,B,...)");
        return -1;
    }
    cli_error("--devices names %u device%s but --device-mem gives %u budget%s: one each",
              n_devices, n_devices == 1 ? "" : "s", n_split, n_split == 1 ? "" : "s");
    return -1;
}

plan_split *plan_opts_split(const sw_model *m, const char *name, const sw_plan_options *o,
                            const uint64_t *budgets, uint32_t n, const uint32_t *devices,
                            uint32_t n_devices, int *rc) {
    plan_split *s = malloc(sizeof *s);
    if (s == NULL) {
        cli_error("out of host memory planning a split");
        *rc = CLI_EXIT_OOM_HOST;
        return NULL;
    }
    const sw_status st = plan_split_create(m, name, o, budgets, n_devices ? devices : NULL, n, s);
    if (st != SW_OK) {
        free(s);
        *rc = cli_fail(st);
        return NULL;
    }
    *rc = CLI_EXIT_OK;
    return s;
}

void plan_opts_usage(FILE *out) {
    fputs("workload:\n"
          "  -c N             context length (default: min(model's, 4096))\n"
          "  -b N             prefill chunk in tokens (default 64)\n"
          "  -np N            sequences served at once; KV is planned for N x -c (default 1)\n"
          "  -t N             CPU threads (default: all cores)\n"
          "memory (see spillway plan --help):\n"
          "  --backend B      cuda (an NVIDIA GPU: the default when one is visible), cpu\n"
          "                   (the default otherwise), sim (a simulated device), pjrt\n"
          "                   (XLA's runtime: a PJRT plugin)\n"
          "  --pjrt-plugin P  the PJRT plugin (.so) for --backend pjrt (default:\n"
          "                   $SPILLWAY_PJRT_PLUGIN, else what 'spillway fetch pjrt-cpu' put\n"
          "                   in the cache)\n"
          "  --device-mem S   device budget: 512M, 8G, 8GiB (binary), 8GB (decimal), or\n"
          "                   80% of the device (a real one; sim needs a size)\n"
          "  --host-mem S     host budget (default: available RAM; sim takes it as given)\n"
          "  --sim-link-bw R  sim: host-to-device bandwidth, e.g. 16GB/s or 2G\n"
          "  --place SPEC     pin layers, e.g. 0-5=resident,6-=streamed,lm_head=host\n"
          "  -ngl N           first N layers resident, plan the rest\n"
          "  -ncmoe N         the experts of the first N layers on the host (Gemma 4's\n"
          "                   26B-A4B; --place experts:0-19=host pins any range)\n"
          "  --expert-cache N keep N of those layers' experts per layer in device slots;\n"
          "                   auto: as many as the placement leaves room for\n"
          "  --expert-policy P  the slots' replacement: lru (default) or lfu-decay\n"
          "  --expert-copy C  a missed expert: auto (default: copied when the cost model\n"
          "                   says the link beats host compute for its tokens), always, never\n"
          "  --expert-prefetch on|off  guess the next layer's experts (its router on this\n"
          "                   layer's output) and copy them ahead (default off)\n"
          "  --expert-hit-rate R  the share of needed experts the predictions take to be\n"
          "                   cached (default slots/experts, as evenly spread routing\n"
          "                   gives; a real trace's: spillway bench --expert-trace)\n"
          "precision:\n"
          "  --kv-type T      KV cache type: f16 (default; f32 with --cpu-dots f32), bf16\n"
          "                   or f32 (twice the bytes)\n"
          "  --weights T      model files: convert f32/f16/bf16 matrices at load to bf16, f16\n"
          "                   or q8_0 (quantized ones are kept); bf16-dequant: every matrix\n"
          "                   to bf16, quantized ones dequantized (pjrt's default); catalog\n"
          "                   models (plan -m NAME): f32, f16, bf16, q8_0, q4_k_m\n"
          "  --cpu-dots D     host matmuls: q8 (default; over quantized weights activations\n"
          "                   rounded to 8 bits per block, integer dots), bf16 (q8, and over\n"
          "                   bf16 weights activations rounded to bf16: vdpbf16ps on AVX-512\n"
          "                   BF16 CPUs, slow elsewhere) or f32 (exact f32 activations, as\n"
          "                   transformers computes; slower)\n",
          out);
}

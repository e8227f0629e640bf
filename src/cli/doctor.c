/*
 * doctor.c — `spillway doctor [--json] [--quick] [-m MODEL] [-t N]`: what
 * this build and machine have (backends, devices, host memory, page-lock
 * limit), what they measure (host memory, compute, link, device, disk), and
 * the rates cached for the planner. Uses the public header, and for
 * `--backend pjrt` registry.h's plain-C plugin report (never PJRT's types).
 *
 * No visible device is a finding, printed first in its section with its
 * cause, not a failure: the exit status is 0 when everything ran. Non-zero:
 * bad flags, a -m file that cannot be read, a device that errs
 * (CLI_EXIT_DEVICE), or a cache that cannot be written (CLI_EXIT_IO, the
 * message names the path).
 *
 * `--backend pjrt` checks the PJRT plugin instead (no measurements, no
 * cache): the report and its one-line diagnosis go to stdout, and the exit
 * status is 0 only when the plugin made a client. As for `info --devices`,
 * no device (or a busy one) is an answer on stdout with CLI_EXIT_NO_DEVICE;
 * other failures also go to stderr, with their own exit status.
 */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/plugin_doctor.h"
#include "backend/registry.h"
#include "cli/cli.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* How saving the cache went, for both output forms. */
typedef struct cache_result {
    sw_status status;
    char path[4200];
    char error[1024];
} cache_result;

static void usage(FILE *out) {
    fputs("usage: spillway doctor [--json] [--quick] [-m FILE] [-t N]\n"
          "       spillway doctor --backend pjrt [--pjrt-plugin PATH] [--json]\n"
          "  Reports the backends, devices, host memory and page-lock limit, measures\n"
          "  host memory bandwidth, compute, device links and disk read speed, and\n"
          "  caches the rates the planner uses (XDG cache folder, doctor.json).\n"
          "  --json      machine-readable output\n"
          "  --quick     small buffers (under ~3 s): rough numbers\n"
          "  -m FILE     model file whose read speed to measure (default: the\n"
          "              fetched model if present, else a temp file)\n"
          "  -t N        host threads for the measurements (default: all cores)\n"
          "  --backend pjrt\n"
          "              check the PJRT plugin instead: its API version, platform,\n"
          "              devices, memory kinds and client options, or why it fails\n"
          "              (missing, not a plugin, wrong version, no device, busy, out of\n"
          "              memory); exit 0 only when it works. cpu, sim and cuda: the\n"
          "              plain report above\n"
          "  --pjrt-plugin PATH\n"
          "              the plugin to check (implies --backend pjrt; default:\n"
          "              $SPILLWAY_PJRT_PLUGIN, else the one 'spillway fetch pjrt-cpu'\n"
          "              installed)\n",
          out);
}

static double gb(double Bps) { return Bps / 1e9; }

/* " BF16 12.3, Q4_K 4.5, ..." (GB/s) and a newline. */
static void print_decode_rates(const double Bps[SW_DOCTOR_DECODE_TYPES]) {
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        printf("%s %s %.1f", i ? "," : "", sw_doctor_decode_type_name(i), gb(Bps[i]));
    putchar('\n');
}

/* {"BF16": 1.2e10, ...} */
static void json_decode_rates(const double Bps[SW_DOCTOR_DECODE_TYPES]) {
    putchar('{');
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        printf("%s\"%s\":%.6g", i ? "," : "", sw_doctor_decode_type_name(i), Bps[i]);
    putchar('}');
}

/* "13.0" for 13000; CUDA encodes versions as 1000*major + 10*minor. */
static void version_text(int v, char *buf, size_t cap) {
    snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

/* ---- text ---------------------------------------------------------------- */

static void text_build(const sw_doctor_report *r) {
    char rt[16], drv[16];
    printf("build\n  version        %s\n", SW_VERSION_STRING);
    if (!r->devices.cuda_compiled) {
        printf("  backends       cpu, sim (cuda not compiled in)\n");
        return;
    }
    version_text(r->devices.runtime_version, rt, sizeof rt);
    version_text(r->devices.driver_version, drv, sizeof drv);
    printf("  backends       cpu, sim, cuda (runtime %s, driver %s)\n", rt,
           r->devices.driver_version > 0 ? drv : "not found");
}

static void text_devices(const sw_doctor_report *r) {
    printf("\ndevices\n");
    if (r->devices_status == SW_ERR_NO_DEVICE)
        printf("  none           %s\n", r->devices.message);
    else if (r->devices_status != SW_OK)
        printf("  error          %s\n", r->devices.message);
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const sw_device_info *d = &r->devices.devices[i];
        printf("  cuda:%-9d  %s  %.1f GiB total, %.1f GiB free  cc %d.%d  %d SMs\n", d->index,
               d->name, (double)d->total_bytes / GIB, (double)d->free_bytes / GIB, d->cc_major,
               d->cc_minor, d->n_multiprocessors);
    }
    printf("  sim            available: CPU kernels behind a memcpy link, capacity set by "
           "--device-mem\n");
}

static void text_host(const sw_doctor_report *r) {
    printf("\nhost\n  name           %s\n  cpus           %d online\n", r->hostname, r->n_cpus);
    if (r->host_total_bytes > 0)
        printf("  memory         %.1f GiB total, %.1f GiB available\n",
               (double)r->host_total_bytes / GIB, (double)r->host_available_bytes / GIB);
    else
        printf("  memory         unknown (/proc/meminfo not readable)\n");
    if (r->memlock_limit_bytes == UINT64_MAX)
        printf("  page-lock      unlimited (RLIMIT_MEMLOCK: limit for pinned host memory)\n");
    else
        printf("  page-lock      %.1f MiB (RLIMIT_MEMLOCK: limit for pinned host memory)\n",
               (double)r->memlock_limit_bytes / MIB);
}

static void text_device_rates(const sw_doctor_report *r) {
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const sw_doctor_device *d = &r->device[i];
        int idx = r->devices.devices[i].index;
        if (d->status != SW_OK) {
            printf("  cuda:%-9d  not measured: %s\n", idx, d->message);
            continue;
        }
        printf("  cuda:%d link    pinned %.1f GB/s, pageable %.1f GB/s (host to device, %.0f "
               "MiB)\n", idx, gb(d->h2d_pinned_Bps), gb(d->h2d_pageable_Bps),
               (double)d->test_bytes / MIB);
        printf("  cuda:%d memory  %.1f GB/s (device-to-device copy, read + write)\n", idx,
               gb(d->device_mem_Bps));
        printf("  cuda:%d compute %.1f TFLOP/s (the prefill matmul: tensor cores, TF32x3, "
               "4096x4096 bf16 x 512 tokens)\n", idx, d->device_flops / 1e12);
        printf("  cuda:%d ops     %.1f us per kernel launched back to back\n", idx,
               d->device_op_s * 1e6);
        printf("  cuda:%d decode  GB/s of weights (matvec, 1 token):", idx);
        print_decode_rates(d->decode_Bps);
    }
}

static void text_disk(const sw_doctor_report *r) {
    if (r->disk_read_Bps <= 0) {
        printf("  disk read      %s\n", r->disk_message);
        return;
    }
    printf("  disk read      %.2f GB/s (%.0f MiB of %s%s, %s)\n", gb(r->disk_read_Bps),
           (double)r->disk_read_bytes / MIB, r->disk_path,
           r->disk_temp_file ? ": a temp file, no model found" : "",
           r->disk_cached_fraction > 0.5 ? "from the page cache" : "not cached");
    if (r->disk_message[0] != '\0')
        printf("                 note: %s\n", r->disk_message);
}

static void text_measurements(const sw_doctor_report *r) {
    printf("\nmeasurements%s\n", r->quick ? " (--quick: small buffers, rough numbers)" : "");
    printf("  host memory    %.1f GB/s read (%.0f MiB buffer, %d threads, best run)\n",
           gb(r->host_mem_Bps), (double)r->host_mem_test_bytes / MIB, r->n_threads);
    printf("  host compute   %.1f GFLOP/s (f32 matmul %u x %u, %u tokens, %d threads)\n",
           r->host_flops / 1e9, r->host_flops_n, r->host_flops_n, r->host_flops_tokens,
           r->n_threads);
    printf("  host decode    GB/s of weights (matmul, 1 token, %.0f MiB each):",
           (double)r->host_decode_test_bytes / MIB);
    print_decode_rates(r->host_decode_Bps);
    printf("  sim link       %.1f GB/s (memcpy, %.0f MiB, 1 thread: the sim device's "
           "host-to-device)\n", gb(r->memcpy_Bps), (double)r->memcpy_test_bytes / MIB);
    text_device_rates(r);
    text_disk(r);
}

static void text_rates(const sw_doctor_report *r) {
    printf("\nplanner rates (device: %s)\n", r->rates_device);
    if (r->rates_from_sim)
        printf("  no CUDA device visible: these are the sim device's rates (h2d = memcpy,\n"
               "  device memory = host memory, device compute = host compute)\n");
    else if (r->device_flops <= 0)
        printf("  the device could not be measured: its rates are 0 (the planner uses "
               "its defaults)\n");
    printf("  h2d pinned     %.1f GB/s\n  h2d pageable   %.1f GB/s\n", gb(r->h2d_pinned_Bps),
           gb(r->h2d_pageable_Bps));
    printf("  device memory  %.1f GB/s\n  device compute %.1f GFLOP/s\n",
           gb(r->device_mem_Bps), r->device_flops / 1e9);
    if (r->device_op_s > 0)
        printf("  device op      %.1f us\n", r->device_op_s * 1e6);
    printf("  device decode  GB/s:");
    print_decode_rates(r->device_decode_Bps);
    printf("  host decode    GB/s:");
    print_decode_rates(r->host_decode_Bps);
    printf("  host memory    %.1f GB/s\n  host compute   %.1f GFLOP/s\n", gb(r->host_mem_Bps),
           r->host_flops / 1e9);
    printf("  disk read      %.2f GB/s%s\n", gb(r->disk_read_Bps),
           r->disk_read_Bps > 0 ? "" : " (not measured)");
}

static void print_text(const sw_doctor_report *r, const cache_result *c) {
    printf("spillway doctor on %s (%.1f s)\n\n", r->hostname, r->elapsed_s);
    text_build(r);
    text_devices(r);
    text_host(r);
    text_measurements(r);
    text_rates(r);
    printf("\ncache\n  folder         %s (%.1f GiB free)\n", r->cache_dir,
           (double)r->cache_free_bytes / GIB);
    if (c->status == SW_OK)
        printf("  written        %s\n", c->path);
    else
        printf("  NOT written    %s\n", c->error);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_key_string(const char *key, const char *s) {
    printf("\"%s\":", key);
    if (s == NULL)
        fputs("null", stdout);
    else
        json_put_string(stdout, s);
}

static void json_version(const char *key, int v) {
    char buf[16];
    version_text(v, buf, sizeof buf);
    json_key_string(key, v > 0 ? buf : NULL);
}

static void json_build_devices(const sw_doctor_report *r) {
    const char *status = r->devices_status == SW_OK ? "ok"
                         : r->devices_status == SW_ERR_NO_DEVICE ? "no_device" : "error";
    printf("\"build\":{\"version\":\"%s\",\"backends\":[\"cpu\",\"sim\"%s],\"cuda_compiled\":%s,",
           SW_VERSION_STRING, r->devices.cuda_compiled ? ",\"cuda\"" : "",
           r->devices.cuda_compiled ? "true" : "false");
    json_version("runtime_version", r->devices.runtime_version);
    fputc(',', stdout);
    json_version("driver_version", r->devices.driver_version);
    printf("},\"devices\":{\"status\":\"%s\",", status);
    json_key_string("message", r->devices_status == SW_OK ? NULL : r->devices.message);
    fputs(",\"list\":[", stdout);
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const sw_device_info *d = &r->devices.devices[i];
        const sw_doctor_device *m = &r->device[i];
        printf("%s{\"index\":%d,", i ? "," : "", d->index);
        json_key_string("name", d->name);
        printf(",\"total_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64 ",\"cc_major\":%d,"
               "\"cc_minor\":%d,\"n_multiprocessors\":%d,\"measured\":%s,",
               d->total_bytes, d->free_bytes, d->cc_major, d->cc_minor, d->n_multiprocessors,
               m->status == SW_OK ? "true" : "false");
        json_key_string("message", m->status == SW_OK ? NULL : m->message);
        printf(",\"test_bytes\":%" PRIu64 ",\"h2d_pinned_Bps\":%.6g,\"h2d_pageable_Bps\":%.6g,"
               "\"device_mem_Bps\":%.6g,\"device_flops\":%.6g,\"device_op_s\":%.6g,"
               "\"decode_Bps\":", m->test_bytes, m->h2d_pinned_Bps, m->h2d_pageable_Bps,
               m->device_mem_Bps, m->device_flops, m->device_op_s);
        json_decode_rates(m->decode_Bps);
        fputc('}', stdout);
    }
    fputs("]},", stdout);
}

static void json_host(const sw_doctor_report *r) {
    fputs("\"host\":{", stdout);
    json_key_string("name", r->hostname);
    printf(",\"n_cpus\":%d,\"mem_total_bytes\":%" PRIu64 ",\"mem_available_bytes\":%" PRIu64
           ",\"memlock_unlimited\":%s,\"memlock_limit_bytes\":", r->n_cpus, r->host_total_bytes,
           r->host_available_bytes, r->memlock_limit_bytes == UINT64_MAX ? "true" : "false");
    if (r->memlock_limit_bytes == UINT64_MAX)
        fputs("null", stdout);
    else
        printf("%" PRIu64, r->memlock_limit_bytes);
    fputs("},", stdout);
}

static void json_measurements(const sw_doctor_report *r) {
    printf("\"measurements\":{\"n_threads\":%d,\"host_mem_Bps\":%.6g,\"host_mem_test_bytes\":%"
           PRIu64 ",\"host_flops\":%.6g,\"host_flops_n\":%u,\"host_flops_tokens\":%u,"
           "\"memcpy_Bps\":%.6g,\"memcpy_test_bytes\":%" PRIu64 ",\"sim_h2d_Bps\":%.6g,"
           "\"host_decode_test_bytes\":%" PRIu64 ",\"host_decode_Bps\":",
           r->n_threads, r->host_mem_Bps, r->host_mem_test_bytes, r->host_flops,
           r->host_flops_n, r->host_flops_tokens, r->memcpy_Bps, r->memcpy_test_bytes,
           r->memcpy_Bps, r->host_decode_test_bytes);
    json_decode_rates(r->host_decode_Bps);
    fputc(',', stdout);
    fputs("\"disk\":{", stdout);
    json_key_string("path", r->disk_path[0] ? r->disk_path : NULL);
    printf(",\"temp_file\":%s,\"read_bytes\":%" PRIu64 ",\"read_Bps\":%.6g,"
           "\"cached_fraction\":%.3f,\"cached\":%s,", r->disk_temp_file ? "true" : "false",
           r->disk_read_bytes, r->disk_read_Bps, r->disk_cached_fraction,
           r->disk_cached_fraction > 0.5 ? "true" : "false");
    json_key_string("message", r->disk_message[0] ? r->disk_message : NULL);
    fputs("}},", stdout);
}

static void json_rates_cache(const sw_doctor_report *r, const cache_result *c) {
    fputs("\"rates\":{", stdout);
    json_key_string("device", r->rates_device);
    printf(",\"from_sim\":%s,\"h2d_pinned_Bps\":%.6g,\"h2d_pageable_Bps\":%.6g,"
           "\"host_mem_Bps\":%.6g,\"device_mem_Bps\":%.6g,\"disk_read_Bps\":%.6g,"
           "\"host_flops\":%.6g,\"device_flops\":%.6g,\"device_op_s\":%.6g,"
           "\"host_decode_Bps\":",
           r->rates_from_sim ? "true" : "false", r->h2d_pinned_Bps, r->h2d_pageable_Bps,
           r->host_mem_Bps, r->device_mem_Bps, r->disk_read_Bps, r->host_flops, r->device_flops,
           r->device_op_s);
    json_decode_rates(r->host_decode_Bps);
    fputs(",\"device_decode_Bps\":", stdout);
    json_decode_rates(r->device_decode_Bps);
    fputs("},\"cache\":{", stdout);
    json_key_string("dir", r->cache_dir);
    printf(",\"free_bytes\":%" PRIu64 ",", r->cache_free_bytes);
    json_key_string("path", c->path);
    printf(",\"written\":%s,", c->status == SW_OK ? "true" : "false");
    json_key_string("error", c->status == SW_OK ? NULL : c->error);
    fputs("},", stdout);
}

static void print_json(const sw_doctor_report *r, const cache_result *c) {
    printf("{\"quick\":%s,\"measured_at\":%lld,\"elapsed_s\":%.3f,", r->quick ? "true" : "false",
           (long long)r->measured_at, r->elapsed_s);
    json_build_devices(r);
    json_host(r);
    json_measurements(r);
    json_rates_cache(r, c);
    printf("\"status\":\"%s\"}\n", c->status == SW_OK ? "ok" : "error");
}

/* ---- --backend pjrt: the plugin check ------------------------------------ */

/* What doctor says about where device memory goes: the "stop the runtime
 * pre-allocating" advice other tools give, done by Spillway itself. */
#define PLUGIN_ALLOCATION_NOTE                                                          \
    "Spillway never lets the runtime grab all device memory: preallocate=false on "     \
    "plugins that take it, memory_fraction only when SPILLWAY_PJRT_MEMORY_FRACTION "    \
    "asks (the 'stop pre-allocation' advice, done natively)"

/* The JSON name of each failure class. */
static const char *problem_key(backend_plugin_problem p) {
    switch (p) {
    case BACKEND_PLUGIN_OK: return "ok";
    case BACKEND_PLUGIN_NOT_BUILT: return "not_built";
    case BACKEND_PLUGIN_MISSING: return "missing";
    case BACKEND_PLUGIN_NOT_LIBRARY: return "not_a_library";
    case BACKEND_PLUGIN_NOT_PLUGIN: return "not_a_plugin";
    case BACKEND_PLUGIN_API_VERSION: return "api_version";
    case BACKEND_PLUGIN_NO_DEVICE: return "no_device";
    case BACKEND_PLUGIN_BUSY: return "busy";
    case BACKEND_PLUGIN_OOM: return "out_of_memory";
    case BACKEND_PLUGIN_FAILED: break;
    }
    return "error";
}

/* One line: what is wrong and what to do; the plugin's own words are the
 * report's message, printed under it. */
static void plugin_diagnosis(const backend_plugin_report *r, char *buf, size_t cap) {
    switch (r->problem) {
    case BACKEND_PLUGIN_OK:
        snprintf(buf, cap, "ok — the plugin works: platform %s, %u device%s", r->platform,
                 r->n_devices, r->n_devices == 1 ? "" : "s");
        break;
    case BACKEND_PLUGIN_NOT_BUILT:
        snprintf(buf, cap, "not built — %s", r->message);
        break;
    case BACKEND_PLUGIN_MISSING:
        snprintf(buf, cap, "plugin missing — no plugin file at %s; get one with 'spillway "
                 "fetch pjrt-cpu' (or pjrt-cuda for an NVIDIA GPU), or pass --pjrt-plugin "
                 "PATH", r->path);
        break;
    case BACKEND_PLUGIN_NOT_LIBRARY:
        snprintf(buf, cap, "not a shared library — %s cannot be loaded, so it is not a PJRT "
                 "plugin; pass the plugin's .so (libpjrt_cpu.so, xla_cuda_plugin.so, "
                 "libtpu.so) with --pjrt-plugin", r->path);
        break;
    case BACKEND_PLUGIN_NOT_PLUGIN:
        snprintf(buf, cap, "not a PJRT plugin — %s is a shared library without GetPjrtApi; "
                 "pass the plugin's .so with --pjrt-plugin", r->path);
        break;
    case BACKEND_PLUGIN_API_VERSION:
        snprintf(buf, cap, "wrong PJRT C API version — the plugin has %d.%d, this build "
                 "speaks %d.x (pjrt_c_api.h %d.%d); use a plugin with C API %d.x, or rebuild "
                 "against the plugin's header (-DSPILLWAY_PJRT_INCLUDE=DIR)", r->api_major,
                 r->api_minor, r->header_major, r->header_major, r->header_minor,
                 r->header_major);
        break;
    case BACKEND_PLUGIN_NO_DEVICE:
        snprintf(buf, cap, "no device — the runtime found no %s; this is not out of memory "
                 "(check that the %s and its driver are visible to this process, or use the "
                 "CPU plugin: 'spillway fetch pjrt-cpu')", r->accelerator, r->accelerator);
        break;
    case BACKEND_PLUGIN_BUSY:
        snprintf(buf, cap, "busy — a %s is present but another process holds it; this is not "
                 "out of memory (stop that process, or remove the lock file if none runs)",
                 r->accelerator);
        break;
    case BACKEND_PLUGIN_OOM:
        snprintf(buf, cap, "out of device memory — free the device (another process may hold "
                 "it) or ask for less (SPILLWAY_PJRT_MEMORY_FRACTION, --device-mem): %s",
                 r->message);
        break;
    case BACKEND_PLUGIN_FAILED:
        snprintf(buf, cap, "%s — %s", r->status == SW_ERR_ARG ? "bad setting"
                                                              : "the plugin failed", r->message);
        break;
    }
}

static void text_plugin_memories(const backend_plugin_report *r) {
    bool any_unsized = false;
    printf("\nmemories of the first device\n");
    if (r->n_memories == 0)
        printf("  (none listed by the plugin)\n");
    for (uint32_t i = 0; i < r->n_memories; i++) {
        const backend_plugin_memory *m = &r->memories[i];
        if (m->has_size)
            printf("  %-14s %.2f GiB limit, %.2f GiB in use\n", m->kind,
                   (double)m->bytes_limit / GIB, (double)m->bytes_in_use / GIB);
        else
            printf("  %-14s not reported\n", m->kind);
        any_unsized |= !m->has_size && !strcmp(m->kind, "device");
    }
    if (any_unsized)
        printf("  note           no device memory size (PJRT_Device_MemoryStats is not\n"
               "                 implemented or sets no limit): plans here need --device-mem\n"
               "                 SIZE\n");
}

static void print_plugin_text(const char *name, const backend_plugin_report *r) {
    char diag[1400];
    plugin_diagnosis(r, diag, sizeof diag);
    printf("spillway doctor --backend %s\n\n", name);
    if (r->problem == BACKEND_PLUGIN_NOT_BUILT) {
        printf("diagnosis\n  %s\n", diag);
        return;
    }
    printf("plugin\n");
    printf("  path           %s\n", r->path[0] ? r->path : "(none)");
    if (r->loaded)
        printf("  C API          %d.%d (plugin); %d.%d (pjrt_c_api.h this build uses)\n",
               r->api_major, r->api_minor, r->header_major, r->header_minor);
    if (r->client) {
        printf("  platform       %s%s%s\n", r->platform, r->platform_version[0] ? ", version " : "",
               r->platform_version);
        printf("  devices        %u x %s\n", r->n_devices,
               r->device_kind[0] ? r->device_kind : "(kind not reported)");
        text_plugin_memories(r);
        printf("\nclient\n  options        %s\n", r->options_used);
    } else {
        printf("\nclient\n");
    }
    printf("  allocation     Spillway never lets the runtime grab all device memory:\n"
           "                 preallocate=false on plugins that take it, memory_fraction only\n"
           "                 when SPILLWAY_PJRT_MEMORY_FRACTION asks (%s%s): the\n"
           "                 'stop pre-allocation' advice, done natively\n",
           r->memory_fraction[0] ? "set to " : "unset", r->memory_fraction);
    printf("\ndiagnosis\n  %s\n", diag);
    /* OOM and other failures carry the message in the diagnosis itself. */
    if (r->status != SW_OK && r->problem != BACKEND_PLUGIN_OOM &&
        r->problem != BACKEND_PLUGIN_FAILED)
        printf("  detail         %s\n", r->message);
}

static void json_key_u64_or_null(const char *key, bool have, uint64_t v) {
    if (have)
        printf("\"%s\":%" PRIu64, key, v);
    else
        printf("\"%s\":null", key);
}

static void json_plugin_memories(const backend_plugin_report *r) {
    fputs("\"memories\":[", stdout);
    for (uint32_t i = 0; i < r->n_memories; i++) {
        const backend_plugin_memory *m = &r->memories[i];
        printf("%s{", i ? "," : "");
        json_key_string("kind", m->kind);
        fputc(',', stdout);
        json_key_u64_or_null("bytes_limit", m->has_size, m->bytes_limit);
        fputc(',', stdout);
        json_key_u64_or_null("bytes_in_use", m->has_size, m->bytes_in_use);
        fputc('}', stdout);
    }
    fputs("],", stdout);
}

static void print_plugin_json(const char *name, const backend_plugin_report *r) {
    char diag[1400], version[32];
    plugin_diagnosis(r, diag, sizeof diag);
    printf("{\"backend\":");
    json_put_string(stdout, name);
    printf(",\"status\":\"%s\",", problem_key(r->problem));
    json_key_string("diagnosis", diag);
    fputc(',', stdout);
    json_key_string("message", r->status == SW_OK ? NULL : r->message);
    fputs(",\"plugin\":{", stdout);
    json_key_string("path", r->path[0] ? r->path : NULL);
    snprintf(version, sizeof version, "%d.%d", r->api_major, r->api_minor);
    printf(",\"loaded\":%s,", r->loaded ? "true" : "false");
    json_key_string("api_version", r->loaded ? version : NULL);
    snprintf(version, sizeof version, "%d.%d", r->header_major, r->header_minor);
    fputc(',', stdout);
    json_key_string("header_api_version", version);
    printf("},\"client\":%s,", r->client ? "true" : "false");
    json_key_string("platform", r->client ? r->platform : NULL);
    fputc(',', stdout);
    json_key_string("platform_version", r->client ? r->platform_version : NULL);
    printf(",\"n_devices\":%u,", r->n_devices);
    json_key_string("device_kind", r->client && r->device_kind[0] ? r->device_kind : NULL);
    fputc(',', stdout);
    json_plugin_memories(r);
    json_key_string("client_options", r->client ? r->options_used : NULL);
    fputc(',', stdout);
    json_key_string("memory_fraction", r->memory_fraction[0] ? r->memory_fraction : NULL);
    fputc(',', stdout);
    json_key_string("allocation", PLUGIN_ALLOCATION_NOTE);
    printf(",\"exit_status\":%d}\n", cli_exit_code(r->status));
}

/* `doctor --backend NAME` for a plugin backend. Returns the exit status:
 * 0 when the plugin works, else the failure's (see the file comment). */
static int plugin_doctor(const char *name, bool json) {
    backend_plugin_report *r = malloc(sizeof *r);
    if (r == NULL) {
        cli_error("out of host memory for the doctor report");
        return CLI_EXIT_OOM_HOST;
    }
    sw_status st = backend_plugin_doctor(name, r);
    if (json)
        print_plugin_json(name, r);
    else
        print_plugin_text(name, r);
    if (st != SW_OK && r->problem != BACKEND_PLUGIN_NO_DEVICE &&
        r->problem != BACKEND_PLUGIN_BUSY)
        cli_error("%s", r->message);
    free(r);
    return cli_exit_code(st);
}

/* ---- the command --------------------------------------------------------- */

/* Flags of doctor itself, besides the library's sw_doctor_options. */
typedef struct doctor_flags {
    bool json;
    const char *backend;   /* --backend NAME, NULL when not given */
    bool plugin_given;     /* --pjrt-plugin (then SPILLWAY_PJRT_PLUGIN holds it) */
} doctor_flags;

/* --backend and --pjrt-plugin; *i moves past the value. Returns -1 to go
 * on, else an exit status. */
static int parse_backend_flag(int argc, char **argv, int *i, doctor_flags *f) {
    const char *a = argv[*i];
    if (++*i >= argc) {
        cli_error("doctor: %s needs a %s", a, !strcmp(a, "--backend") ? "backend name"
                                                                        : "plugin file");
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(a, "--backend")) {
        f->backend = argv[*i];
        return -1;
    }
    /* As plan_opts.c does: the library finds the plugin through this. */
    if (setenv("SPILLWAY_PJRT_PLUGIN", argv[*i], 1) != 0) {
        cli_error("doctor: --pjrt-plugin: cannot set SPILLWAY_PJRT_PLUGIN");
        return CLI_EXIT_FAILURE;
    }
    f->plugin_given = true;
    return -1;
}

/* Parses flags into *opt and *f; returns -1 to go on, else an exit
 * status (help or a usage error). */
static int parse_args(int argc, char **argv, sw_doctor_options *opt, doctor_flags *f) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--backend") || !strcmp(a, "--pjrt-plugin")) {
            int rc = parse_backend_flag(argc, argv, &i, f);
            if (rc >= 0)
                return rc;
        } else if (!strcmp(a, "--json")) {
            f->json = true;
        } else if (!strcmp(a, "--quick")) {
            opt->quick = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return CLI_EXIT_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (++i >= argc) {
                cli_error("doctor: %s needs a file name", a);
                return CLI_EXIT_USAGE;
            }
            opt->model_path = argv[i];
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (++i >= argc) {
                cli_error("doctor: %s needs a thread count", a);
                return CLI_EXIT_USAGE;
            }
            char *end = NULL;
            long n = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end != '\0' || n < 1 || n > 1024) {
                cli_error("doctor: %s wants a thread count from 1 to 1024, not '%s'", a,
                          argv[i]);
                return CLI_EXIT_USAGE;
            }
            opt->n_threads = (int)n;
        } else {
            cli_error("doctor: unknown option '%s' (see spillway doctor --help)", a);
            return CLI_EXIT_USAGE;
        }
    }
    return -1;
}

/* The exit status once the report is out: device errors and an unwritten
 * cache are failures; a missing device is not. */
static int final_status(const sw_doctor_report *r, const cache_result *c) {
    if (c->status != SW_OK) {
        cli_error("%s", c->error);
        return cli_exit_code(c->status);
    }
    if (r->devices_status == SW_ERR_DEVICE)
        return CLI_EXIT_DEVICE;
    for (size_t i = 0; i < r->devices.n_devices; i++)
        if (r->device[i].status == SW_ERR_DEVICE)
            return CLI_EXIT_DEVICE;
    return CLI_EXIT_OK;
}

int cmd_doctor(int argc, char **argv) {
    sw_doctor_options opt = sw_doctor_options_default();
    doctor_flags f = {false, NULL, false};
    backend_info info;
    int rc = parse_args(argc, argv, &opt, &f);
    if (rc >= 0)
        return rc;
    if (f.backend != NULL && backend_lookup(f.backend, &info) != SW_OK) {
        cli_error("doctor: --backend: %s", sw_last_error());
        return CLI_EXIT_USAGE;
    }
    /* Plugin backends (pjrt) get the plugin check; the others are what the
     * plain report covers. --pjrt-plugin alone means pjrt. */
    if (f.backend == NULL ? f.plugin_given : info.budget_from_plugin)
        return plugin_doctor(f.backend ? f.backend : "pjrt", f.json);
    bool json = f.json;
    if (opt.model_path != NULL && access(opt.model_path, R_OK) != 0) {
        cli_error("doctor: cannot read the model file %s", opt.model_path);
        return CLI_EXIT_IO;
    }
    sw_doctor_report *r = malloc(sizeof *r);
    cache_result *c = calloc(1, sizeof *c);
    if (r == NULL || c == NULL) {
        free(r);
        free(c);
        cli_error("out of host memory for the doctor report");
        return CLI_EXIT_OOM_HOST;
    }
    if (!json && isatty(fileno(stderr)))
        fprintf(stderr, "spillway doctor: measuring (%s)...\n",
                opt.quick ? "a few seconds" : "about 10 seconds");
    sw_status st = sw_doctor_run(&opt, r);
    if (st != SW_OK) {
        rc = cli_fail(st);
        goto done;
    }
    c->status = sw_doctor_save(r, c->path, sizeof c->path);
    if (c->status != SW_OK)
        snprintf(c->error, sizeof c->error, "%s", sw_last_error());
    if (json)
        print_json(r, c);
    else
        print_text(r, c);
    rc = final_status(r, c);
done:
    free(r);
    free(c);
    return rc;
}

/*
 * doctor.c — `spillway doctor [--json] [--quick] [-m MODEL] [-t N]`: what
 * this build and machine have (backends, devices, host memory, page-lock
 * limit), what they measure (host memory, compute, link, device, disk), and
 * the rates cached for the planner: the whole report as doctor/doctor.h
 * defines it (the library's users see only its rates), and for `--backend
 * pjrt` registry.h's plain-C plugin report (never PJRT's types). Each
 * report prints as text or, through format/json_write.h, as JSON.
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

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/plugin_doctor.h"
#include "backend/registry.h"
#include "cli/cli.h"
#include "doctor/doctor.h"
#include "format/json_write.h"

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

/* "cuda:0": device i as its backend names it. */
static void device_label(const sw_doctor_report *r, size_t i, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%d", r->devices.backend, r->devices.devices[i].index);
}

/* " BF16 12.3, Q4_K 4.5, ..." (GB/s) and a newline. */
static void print_decode_rates(const double Bps[SW_DOCTOR_DECODE_TYPES]) {
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        printf("%s %s %.1f", i ? "," : "", sw_doctor_decode_type_name(i), gb(Bps[i]));
    putchar('\n');
}

/* ---- text ---------------------------------------------------------------- */

static void text_build(const sw_doctor_report *r) {
    const sw_device_report *d = &r->devices;
    printf("build\n  version        %s\n", SW_VERSION_STRING);
    if (d->backend[0] == '\0') {
        printf("  backends       cpu, sim (cuda not compiled in)\n");
        return;
    }
    printf("  backends       cpu, sim, %s (runtime %s, driver %s)\n", d->backend,
           d->runtime_version, d->driver_version[0] ? d->driver_version : "not found");
}

static void text_devices(const sw_doctor_report *r) {
    char label[32];
    printf("\ndevices\n");
    if (r->devices_status == SW_ERR_NO_DEVICE)
        printf("  none           %s\n", r->devices.message);
    else if (r->devices_status != SW_OK)
        printf("  error          %s\n", r->devices.message);
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const sw_device_info *d = &r->devices.devices[i];
        device_label(r, i, label, sizeof label);
        printf("  %-14s  %s  %.1f GiB total, %.1f GiB free  cc %d.%d  %d SMs\n", label,
               d->name, (double)d->total_bytes / GIB, (double)d->free_bytes / GIB,
               d->arch_major, d->arch_minor, d->n_compute_units);
    }
    printf("  sim            available: CPU kernels behind a memcpy link, capacity set by "
           "--device-mem\n");
}

static void text_host(const sw_doctor_report *r) {
    printf("\nhost\n  name           %s\n  cpus           %d online\n", r->rates.host, r->n_cpus);
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
    char label[32];
    for (size_t i = 0; i < r->devices.n_devices; i++) {
        const doctor_device *m = &r->device[i];
        const backend_device_rates *d = &m->rates;
        device_label(r, i, label, sizeof label);
        if (m->status != SW_OK) {
            printf("  %-14s  not measured: %s\n", label, m->message);
            continue;
        }
        printf("  %s link    pinned %.1f GB/s, pageable %.1f GB/s (host to device, %.0f "
               "MiB)\n", label, gb(d->h2d_pinned_Bps), gb(d->h2d_pageable_Bps),
               (double)m->test_bytes / MIB);
        printf("  %s memory  %.1f GB/s (device-to-device copy, read + write)\n", label,
               gb(d->device_mem_Bps));
        printf("  %s compute %.1f TFLOP/s (the prefill matmul: tensor cores, TF32x3, "
               "4096x4096 bf16 x 512 tokens)\n", label, d->device_flops / 1e12);
        printf("  %s ops     %.1f us per kernel launched back to back\n", label,
               d->device_op_s * 1e6);
        printf("  %s decode  GB/s of weights (matvec, 1 token):", label);
        print_decode_rates(d->decode_Bps);
    }
}

static void text_disk(const sw_doctor_report *r) {
    if (r->rates.disk_read_Bps <= 0) {
        printf("  disk read      %s\n", r->disk_message);
        return;
    }
    printf("  disk read      %.2f GB/s (%.0f MiB of %s%s, %s)\n", gb(r->rates.disk_read_Bps),
           (double)r->disk_read_bytes / MIB, r->disk_path,
           r->disk_temp_file ? ": a temp file, no model found" : "",
           r->disk_cached_fraction > 0.5 ? "from the page cache" : "not cached");
    if (r->disk_message[0] != '\0')
        printf("                 note: %s\n", r->disk_message);
}

static void text_measurements(const sw_doctor_report *r) {
    const sw_doctor_rates *m = &r->rates;
    printf("\nmeasurements%s\n", m->quick ? " (--quick: small buffers, rough numbers)" : "");
    printf("  host memory    %.1f GB/s read (%.0f MiB buffer, %d threads, best run)\n",
           gb(m->host_mem_Bps), (double)r->host_mem_test_bytes / MIB, r->n_threads);
    printf("  host compute   %.1f GFLOP/s (f32 matmul %u x %u, %u tokens, %d threads)\n",
           m->host_flops / 1e9, r->host_flops_n, r->host_flops_n, r->host_flops_tokens,
           r->n_threads);
    printf("  host decode    GB/s of weights (matmul, 1 token, %.0f MiB each):",
           (double)r->host_decode_test_bytes / MIB);
    print_decode_rates(m->host_decode_Bps);
    printf("  sim link       %.1f GB/s (memcpy, %.0f MiB, 1 thread: the sim device's "
           "host-to-device)\n", gb(m->memcpy_Bps), (double)r->memcpy_test_bytes / MIB);
    text_device_rates(r);
    text_disk(r);
}

static void text_rates(const sw_doctor_report *r) {
    const sw_doctor_rates *m = &r->rates;
    printf("\nplanner rates (device: %s)\n", m->device);
    if (r->rates_from_sim)
        printf("  no CUDA device visible: these are the sim device's rates (h2d = memcpy,\n"
               "  device memory = host memory, device compute = host compute)\n");
    else if (m->device_flops <= 0)
        printf("  the device could not be measured: its rates are 0 (the planner uses "
               "its defaults)\n");
    printf("  h2d pinned     %.1f GB/s\n  h2d pageable   %.1f GB/s\n", gb(m->h2d_pinned_Bps),
           gb(m->h2d_pageable_Bps));
    printf("  device memory  %.1f GB/s\n  device compute %.1f GFLOP/s\n",
           gb(m->device_mem_Bps), m->device_flops / 1e9);
    if (m->device_op_s > 0)
        printf("  device op      %.1f us\n", m->device_op_s * 1e6);
    printf("  device decode  GB/s:");
    print_decode_rates(m->device_decode_Bps);
    printf("  host decode    GB/s:");
    print_decode_rates(m->host_decode_Bps);
    printf("  host memory    %.1f GB/s\n  host compute   %.1f GFLOP/s\n", gb(m->host_mem_Bps),
           m->host_flops / 1e9);
    printf("  disk read      %.2f GB/s%s\n", gb(m->disk_read_Bps),
           m->disk_read_Bps > 0 ? "" : " (not measured)");
}

static void print_text(const sw_doctor_report *r, const cache_result *c) {
    printf("spillway doctor on %s (%.1f s)\n\n", r->rates.host, r->elapsed_s);
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

/* ---- JSON (the same sections, through format/json_write.h) --------------- */

/* "key": {"F16": 1.2e+10, ...} */
static void json_decode_rates(jsonw *j, const char *key,
                              const double Bps[SW_DOCTOR_DECODE_TYPES]) {
    jw_key(j, key);
    jw_obj(j);
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++)
        jw_key_num(j, sw_doctor_decode_type_name(i), Bps[i]);
    jw_obj_end(j);
}

/* "key": "s", or null when s is "" */
static void json_key_text(jsonw *j, const char *key, const char *s) {
    jw_key_str(j, key, s[0] ? s : NULL);
}

static void json_build(jsonw *j, const sw_doctor_report *r) {
    const sw_device_report *d = &r->devices;
    jw_key(j, "build");
    jw_obj(j);
    jw_key_str(j, "version", SW_VERSION_STRING);
    jw_key(j, "backends");
    jw_arr(j);
    jw_str(j, "cpu");
    jw_str(j, "sim");
    if (d->backend[0])
        jw_str(j, d->backend);
    jw_arr_end(j);
    jw_key_bool(j, "cuda_compiled", !strcmp(d->backend, "cuda"));
    json_key_text(j, "runtime_version", d->runtime_version);
    json_key_text(j, "driver_version", d->driver_version);
    jw_obj_end(j);
}

/* One entry of devices.list: what the backend says (under the CUDA names
 * scripts read: cc_major, n_multiprocessors), then what doctor measured. */
static void json_device(jsonw *j, const sw_device_info *d, const doctor_device *m) {
    jw_obj(j);
    cli_json_device_fields(j, d);
    jw_key_bool(j, "measured", m->status == SW_OK);
    jw_key_str(j, "message", m->status == SW_OK ? NULL : m->message);
    jw_key_uint(j, "test_bytes", m->test_bytes);
    jw_key_num(j, "h2d_pinned_Bps", m->rates.h2d_pinned_Bps);
    jw_key_num(j, "h2d_pageable_Bps", m->rates.h2d_pageable_Bps);
    jw_key_num(j, "device_mem_Bps", m->rates.device_mem_Bps);
    jw_key_num(j, "device_flops", m->rates.device_flops);
    jw_key_num(j, "device_op_s", m->rates.device_op_s);
    json_decode_rates(j, "decode_Bps", m->rates.decode_Bps);
    jw_obj_end(j);
}

static void json_devices(jsonw *j, const sw_doctor_report *r) {
    jw_key(j, "devices");
    jw_obj(j);
    jw_key_str(j, "status", r->devices_status == SW_OK ? "ok"
                            : r->devices_status == SW_ERR_NO_DEVICE ? "no_device" : "error");
    jw_key_str(j, "message", r->devices_status == SW_OK ? NULL : r->devices.message);
    jw_key(j, "list");
    jw_arr(j);
    for (size_t i = 0; i < r->devices.n_devices; i++)
        json_device(j, &r->devices.devices[i], &r->device[i]);
    jw_arr_end(j);
    jw_obj_end(j);
}

static void json_host(jsonw *j, const sw_doctor_report *r) {
    bool unlimited = r->memlock_limit_bytes == UINT64_MAX;
    jw_key(j, "host");
    jw_obj(j);
    jw_key_str(j, "name", r->rates.host);
    jw_key_int(j, "n_cpus", r->n_cpus);
    jw_key_uint(j, "mem_total_bytes", r->host_total_bytes);
    jw_key_uint(j, "mem_available_bytes", r->host_available_bytes);
    jw_key_bool(j, "memlock_unlimited", unlimited);
    jw_key(j, "memlock_limit_bytes");
    if (unlimited)
        jw_null(j);
    else
        jw_uint(j, r->memlock_limit_bytes);
    jw_obj_end(j);
}

static void json_disk(jsonw *j, const sw_doctor_report *r) {
    jw_key(j, "disk");
    jw_obj(j);
    json_key_text(j, "path", r->disk_path);
    jw_key_bool(j, "temp_file", r->disk_temp_file);
    jw_key_uint(j, "read_bytes", r->disk_read_bytes);
    jw_key_num(j, "read_Bps", r->rates.disk_read_Bps);
    jw_key(j, "cached_fraction");
    jw_fixed(j, r->disk_cached_fraction, 3);
    jw_key_bool(j, "cached", r->disk_cached_fraction > 0.5);
    json_key_text(j, "message", r->disk_message);
    jw_obj_end(j);
}

static void json_measurements(jsonw *j, const sw_doctor_report *r) {
    const sw_doctor_rates *m = &r->rates;
    jw_key(j, "measurements");
    jw_obj(j);
    jw_key_int(j, "n_threads", r->n_threads);
    jw_key_num(j, "host_mem_Bps", m->host_mem_Bps);
    jw_key_uint(j, "host_mem_test_bytes", r->host_mem_test_bytes);
    jw_key_num(j, "host_flops", m->host_flops);
    jw_key_uint(j, "host_flops_n", r->host_flops_n);
    jw_key_uint(j, "host_flops_tokens", r->host_flops_tokens);
    jw_key_num(j, "memcpy_Bps", m->memcpy_Bps);
    jw_key_uint(j, "memcpy_test_bytes", r->memcpy_test_bytes);
    jw_key_num(j, "sim_h2d_Bps", m->memcpy_Bps);
    jw_key_uint(j, "host_decode_test_bytes", r->host_decode_test_bytes);
    json_decode_rates(j, "host_decode_Bps", m->host_decode_Bps);
    json_disk(j, r);
    jw_obj_end(j);
}

static void json_rates(jsonw *j, const sw_doctor_report *r) {
    const sw_doctor_rates *m = &r->rates;
    jw_key(j, "rates");
    jw_obj(j);
    jw_key_str(j, "device", m->device);
    jw_key_bool(j, "from_sim", r->rates_from_sim);
    jw_key_num(j, "h2d_pinned_Bps", m->h2d_pinned_Bps);
    jw_key_num(j, "h2d_pageable_Bps", m->h2d_pageable_Bps);
    jw_key_num(j, "host_mem_Bps", m->host_mem_Bps);
    jw_key_num(j, "device_mem_Bps", m->device_mem_Bps);
    jw_key_num(j, "disk_read_Bps", m->disk_read_Bps);
    jw_key_num(j, "host_flops", m->host_flops);
    jw_key_num(j, "device_flops", m->device_flops);
    jw_key_num(j, "device_op_s", m->device_op_s);
    json_decode_rates(j, "host_decode_Bps", m->host_decode_Bps);
    json_decode_rates(j, "device_decode_Bps", m->device_decode_Bps);
    jw_obj_end(j);
}

static void json_cache(jsonw *j, const sw_doctor_report *r, const cache_result *c) {
    jw_key(j, "cache");
    jw_obj(j);
    jw_key_str(j, "dir", r->cache_dir);
    jw_key_uint(j, "free_bytes", r->cache_free_bytes);
    jw_key_str(j, "path", c->path);
    jw_key_bool(j, "written", c->status == SW_OK);
    jw_key_str(j, "error", c->status == SW_OK ? NULL : c->error);
    jw_obj_end(j);
}

static void print_json(const sw_doctor_report *r, const cache_result *c) {
    jsonw j;
    jw_init_file(&j, stdout, JW_COMPACT);
    jw_obj(&j);
    jw_key_bool(&j, "quick", r->rates.quick);
    jw_key_int(&j, "measured_at", r->rates.measured_at);
    jw_key(&j, "elapsed_s");
    jw_fixed(&j, r->elapsed_s, 3);
    json_build(&j, r);
    json_devices(&j, r);
    json_host(&j, r);
    json_measurements(&j, r);
    json_rates(&j, r);
    json_cache(&j, r, c);
    jw_key_str(&j, "status", c->status == SW_OK ? "ok" : "error");
    jw_obj_end(&j);
    jw_finish(&j);
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

/* "key": n, or null when the plugin does not report it */
static void json_key_u64_or_null(jsonw *j, const char *key, bool have, uint64_t v) {
    jw_key(j, key);
    if (have)
        jw_uint(j, v);
    else
        jw_null(j);
}

static void json_plugin_memories(jsonw *j, const backend_plugin_report *r) {
    jw_key(j, "memories");
    jw_arr(j);
    for (uint32_t i = 0; i < r->n_memories; i++) {
        const backend_plugin_memory *m = &r->memories[i];
        jw_obj(j);
        jw_key_str(j, "kind", m->kind);
        json_key_u64_or_null(j, "bytes_limit", m->has_size, m->bytes_limit);
        json_key_u64_or_null(j, "bytes_in_use", m->has_size, m->bytes_in_use);
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

static void json_plugin_file(jsonw *j, const backend_plugin_report *r) {
    char version[32];
    jw_key(j, "plugin");
    jw_obj(j);
    json_key_text(j, "path", r->path);
    jw_key_bool(j, "loaded", r->loaded);
    snprintf(version, sizeof version, "%d.%d", r->api_major, r->api_minor);
    jw_key_str(j, "api_version", r->loaded ? version : NULL);
    snprintf(version, sizeof version, "%d.%d", r->header_major, r->header_minor);
    jw_key_str(j, "header_api_version", version);
    jw_obj_end(j);
}

static void print_plugin_json(const char *name, const backend_plugin_report *r) {
    char diag[1400];
    jsonw j;
    plugin_diagnosis(r, diag, sizeof diag);
    jw_init_file(&j, stdout, JW_COMPACT);
    jw_obj(&j);
    jw_key_str(&j, "backend", name);
    jw_key_str(&j, "status", problem_key(r->problem));
    jw_key_str(&j, "diagnosis", diag);
    jw_key_str(&j, "message", r->status == SW_OK ? NULL : r->message);
    json_plugin_file(&j, r);
    jw_key_bool(&j, "client", r->client);
    jw_key_str(&j, "platform", r->client ? r->platform : NULL);
    jw_key_str(&j, "platform_version", r->client ? r->platform_version : NULL);
    jw_key_uint(&j, "n_devices", r->n_devices);
    jw_key_str(&j, "device_kind", r->client && r->device_kind[0] ? r->device_kind : NULL);
    json_plugin_memories(&j, r);
    jw_key_str(&j, "client_options", r->client ? r->options_used : NULL);
    json_key_text(&j, "memory_fraction", r->memory_fraction);
    jw_key_str(&j, "allocation", PLUGIN_ALLOCATION_NOTE);
    jw_key_int(&j, "exit_status", cli_exit_code(r->status));
    jw_obj_end(&j);
    jw_finish(&j);
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
    if (f.backend == NULL ? f.plugin_given : info.budget == BACKEND_BUDGET_PLUGIN)
        return plugin_doctor(f.backend ? f.backend : "pjrt", f.json);
    bool json = f.json;
    if (opt.model_path != NULL && access(opt.model_path, R_OK) != 0) {
        cli_error("doctor: cannot read the model file %s", opt.model_path);
        return CLI_EXIT_IO;
    }
    sw_doctor_report *r = NULL;
    cache_result *c = calloc(1, sizeof *c);
    if (c == NULL) {
        cli_error("out of host memory for the doctor report");
        return CLI_EXIT_OOM_HOST;
    }
    if (!json && isatty(fileno(stderr)))
        fprintf(stderr, "spillway doctor: measuring (%s)...\n",
                opt.quick ? "a few seconds" : "about 10 seconds");
    sw_status st = sw_doctor_run(&opt, &r);
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
    sw_doctor_report_destroy(r);
    free(c);
    return rc;
}

/*
 * devices.c — `spillway info --devices`: the backends this build has and
 * the accelerators it can see, as text or JSON on stdout.
 *
 *   backends: cpu, cuda (runtime 13.0, driver 13.0)
 *   cuda:0  NVIDIA H200  139.8 GiB total, 139.2 GiB free  cc 9.0  132 SMs
 *
 * No visible device is an answer, not a failure of the command: its reason
 * goes to stdout too, and the exit status is CLI_EXIT_NO_DEVICE. Other
 * device errors go to stderr (exit CLI_EXIT_DEVICE).
 */
#include <string.h>

#include "cli/cli.h"
#include "format/json_write.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void print_backends_text(const sw_device_report *r) {
    if (r->backend[0] == '\0') {
        printf("backends: cpu\n");
        return;
    }
    if (r->driver_version[0] != '\0')
        printf("backends: cpu, %s (runtime %s, driver %s)\n", r->backend, r->runtime_version,
               r->driver_version);
    else
        printf("backends: cpu, %s (runtime %s)\n", r->backend, r->runtime_version);
}

static int print_text(const sw_device_report *r, sw_status st) {
    print_backends_text(r);
    for (size_t i = 0; i < r->n_devices; i++) {
        const sw_device_info *d = &r->devices[i];
        printf("%s:%d  %s  %.1f GiB total, %.1f GiB free  cc %d.%d  %d SMs\n", r->backend,
               d->index, d->name, (double)d->total_bytes / GIB, (double)d->free_bytes / GIB,
               d->arch_major, d->arch_minor, d->n_compute_units);
    }
    if (st == SW_OK)
        return CLI_EXIT_OK;
    if (st == SW_ERR_NO_DEVICE) {
        printf("%s\n", r->message);
        return cli_exit_code(st);
    }
    cli_error("%s", r->message);
    return cli_exit_code(st);
}

/* "key": "s", or null when s is "" (a version not known). */
static void json_key_text(jsonw *j, const char *key, const char *s) {
    jw_key_str(j, key, s[0] ? s : NULL);
}

/* The keys keep their CUDA names (cc_major, n_multiprocessors), which
 * scripts read. */
static void print_device_json(jsonw *j, const sw_device_info *d) {
    jw_obj(j);
    cli_json_device_fields(j, d);
    jw_obj_end(j);
}

static int print_json(const sw_device_report *r, sw_status st) {
    jsonw j;
    jw_init_file(&j, stdout, JW_COMPACT);
    jw_obj(&j);
    jw_key(&j, "backends");
    jw_arr(&j);
    jw_str(&j, "cpu");
    if (r->backend[0])
        jw_str(&j, r->backend);
    jw_arr_end(&j);
    jw_key_bool(&j, "cuda_compiled", !strcmp(r->backend, "cuda"));
    json_key_text(&j, "runtime_version", r->runtime_version);
    json_key_text(&j, "driver_version", r->driver_version);
    jw_key(&j, "devices");
    jw_arr(&j);
    for (size_t i = 0; i < r->n_devices; i++)
        print_device_json(&j, &r->devices[i]);
    jw_arr_end(&j);
    jw_key_str(&j, "status", st == SW_OK ? "ok" : st == SW_ERR_NO_DEVICE ? "no_device" : "error");
    jw_key_str(&j, "message", st == SW_OK ? NULL : r->message);
    jw_obj_end(&j);
    jw_finish(&j);
    return cli_exit_code(st);
}

int cli_print_devices(bool json) {
    sw_device_report report;
    sw_status st = sw_devices_query(&report);
    if (st == SW_ERR_ARG)
        return cli_fail(st);
    return json ? print_json(&report, st) : print_text(&report, st);
}

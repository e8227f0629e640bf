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
#include <inttypes.h>

#include "cli/cli.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* "13.0" for 13000; CUDA encodes versions as 1000*major + 10*minor. */
static void version_text(int v, char *buf, size_t cap) {
    snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
}

static void print_backends_text(const sw_device_report *r) {
    char rt[16], drv[16];
    if (!r->cuda_compiled) {
        printf("backends: cpu\n");
        return;
    }
    version_text(r->runtime_version, rt, sizeof rt);
    version_text(r->driver_version, drv, sizeof drv);
    if (r->driver_version > 0)
        printf("backends: cpu, cuda (runtime %s, driver %s)\n", rt, drv);
    else
        printf("backends: cpu, cuda (runtime %s)\n", rt);
}

static int print_text(const sw_device_report *r, sw_status st) {
    print_backends_text(r);
    for (size_t i = 0; i < r->n_devices; i++) {
        const sw_device_info *d = &r->devices[i];
        printf("cuda:%d  %s  %.1f GiB total, %.1f GiB free  cc %d.%d  %d SMs\n", d->index,
               d->name, (double)d->total_bytes / GIB, (double)d->free_bytes / GIB,
               d->cc_major, d->cc_minor, d->n_multiprocessors);
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

/* Writes a CUDA version as a JSON string, or null when unknown (0). */
static void json_put_version(int v) {
    char buf[16];
    if (v <= 0) {
        fputs("null", stdout);
        return;
    }
    version_text(v, buf, sizeof buf);
    json_put_string(stdout, buf);
}

static void print_device_json(const sw_device_info *d) {
    printf("{\"index\":%d,\"name\":", d->index);
    json_put_string(stdout, d->name);
    printf(",\"total_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64
           ",\"cc_major\":%d,\"cc_minor\":%d,\"n_multiprocessors\":%d}",
           d->total_bytes, d->free_bytes, d->cc_major, d->cc_minor, d->n_multiprocessors);
}

static int print_json(const sw_device_report *r, sw_status st) {
    const char *status = st == SW_OK ? "ok" : st == SW_ERR_NO_DEVICE ? "no_device" : "error";
    printf("{\"backends\":[\"cpu\"%s],\"cuda_compiled\":%s,\"runtime_version\":",
           r->cuda_compiled ? ",\"cuda\"" : "", r->cuda_compiled ? "true" : "false");
    json_put_version(r->runtime_version);
    fputs(",\"driver_version\":", stdout);
    json_put_version(r->driver_version);
    fputs(",\"devices\":[", stdout);
    for (size_t i = 0; i < r->n_devices; i++) {
        if (i > 0)
            fputc(',', stdout);
        print_device_json(&r->devices[i]);
    }
    printf("],\"status\":\"%s\",\"message\":", status);
    if (st == SW_OK)
        fputs("null", stdout);
    else
        json_put_string(stdout, r->message);
    fputs("}\n", stdout);
    return cli_exit_code(st);
}

int cli_print_devices(bool json) {
    sw_device_report report;
    sw_status st = sw_devices_query(&report);
    if (st == SW_ERR_ARG)
        return cli_fail(st);
    return json ? print_json(&report, st) : print_text(&report, st);
}

/*
 * pjrt_doctor.c — `spillway doctor --backend pjrt`'s facts about a PJRT
 * plugin (pjrt_backend.h, registry.h's backend_plugin_report): the same
 * open and client creation the backend does, then a description in plain
 * C types and, on failure, which class of failure it was.
 *
 * pjrt_plugin_open reports all three "not a plugin" cases as SW_ERR_FORMAT
 * and closes the plugin, so a FORMAT failure is looked at once more here
 * (dlopen, dlsym) to tell them apart and to read a wrong version's number.
 * Nothing is unloaded: plugins keep static state (see pjrt_plugin_close).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/pjrt/pjrt_backend.h"
#include "backend/pjrt/pjrt_plugin.h"
#include "util/error.h"

/* The accelerator a plugin drives, guessed from its file name, so "no
 * device" can say "no GPU" for xla_cuda_plugin.so. Only for the advice. */
static const char *accelerator_of(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strstr(base, "cuda") || strstr(base, "rocm") || strstr(base, "gpu"))
        return "GPU";
    if (strstr(base, "tpu"))
        return "TPU";
    return "device";
}

/* Which of the FORMAT cases path is; reads a plugin's version into out. */
static backend_plugin_problem classify_format(const char *path, backend_plugin_report *out) {
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return BACKEND_PLUGIN_NOT_LIBRARY;
    if (access(path, R_OK) != 0)
        return BACKEND_PLUGIN_FAILED;   /* unreadable: the message says so, not "not a library" */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL)
        return BACKEND_PLUGIN_NOT_LIBRARY;
    const PJRT_Api *(*get)(void) = NULL;
    void *sym = dlsym(dl, "GetPjrtApi");
    memcpy(&get, &sym, sizeof get);   /* object to function pointer, as POSIX allows */
    const PJRT_Api *api = get ? get() : NULL;
    if (api == NULL) {
        dlclose(dl);   /* none of its code ran: safe to drop our reference */
        return BACKEND_PLUGIN_NOT_PLUGIN;
    }
    out->loaded = true;
    out->api_major = api->pjrt_api_version.major_version;
    out->api_minor = api->pjrt_api_version.minor_version;
    return out->api_major != PJRT_API_MAJOR ? BACKEND_PLUGIN_API_VERSION
                                            : BACKEND_PLUGIN_FAILED;
}

/* A failure past the file checks (plugin initialization or the client). */
static backend_plugin_problem classify_runtime(sw_status st, const char *message) {
    switch (st) {
    case SW_OK:
        return BACKEND_PLUGIN_OK;
    case SW_ERR_NO_DEVICE:
        /* pjrt_plugin.h's contract: a held device is SW_ERR_NO_DEVICE whose
         * message says "busy" (libtpu's lock file, checked before the
         * client is made); every other NO_DEVICE is a runtime finding none. */
        return strstr(message, "busy") ? BACKEND_PLUGIN_BUSY : BACKEND_PLUGIN_NO_DEVICE;
    case SW_ERR_OOM_DEVICE:
        return BACKEND_PLUGIN_OOM;
    default:
        return BACKEND_PLUGIN_FAILED;
    }
}

/* Copies the client's facts; the device's sizes go to the memory that
 * PJRT_Device_MemoryStats describes (kind "device", else the default). */
static void describe(const pjrt_client *c, backend_plugin_report *out) {
    out->client = true;
    snprintf(out->platform, sizeof out->platform, "%s", c->platform);
    snprintf(out->platform_version, sizeof out->platform_version, "%s", c->platform_version);
    snprintf(out->device_kind, sizeof out->device_kind, "%s", c->device_kind);
    snprintf(out->options_used, sizeof out->options_used, "%s", c->options_used);
    out->n_devices = c->n_devices;
    for (uint32_t i = 0; i < c->n_memories && i < BACKEND_PLUGIN_MAX_MEMORIES; i++) {
        backend_plugin_memory *m = &out->memories[out->n_memories++];
        snprintf(m->kind, sizeof m->kind, "%s", c->memories[i].kind);
        m->has_size = c->has_stats && c->memories[i].memory == c->device_memory;
        m->bytes_limit = m->has_size ? c->bytes_limit : 0;
        m->bytes_in_use = m->has_size ? c->bytes_in_use : 0;
    }
}

/* Stores the outcome; keeps sw_last_error() and out->message the same. */
static sw_status finish(backend_plugin_report *out, sw_status st,
                        backend_plugin_problem problem) {
    out->status = st;
    out->problem = st == SW_OK ? BACKEND_PLUGIN_OK : problem;
    if (st == SW_OK)
        return SW_OK;
    snprintf(out->message, sizeof out->message, "%s", sw_last_error());
    return sw_errorf(st, "%s", out->message);
}

sw_status backend_pjrt_doctor(backend_plugin_report *out) {
    pjrt_plugin pl;
    pjrt_client c;
    memset(out, 0, sizeof *out);
    out->accelerator = "device";
    out->header_major = PJRT_API_MAJOR;
    out->header_minor = PJRT_API_MINOR;
    const char *frac = getenv("SPILLWAY_PJRT_MEMORY_FRACTION");
    snprintf(out->memory_fraction, sizeof out->memory_fraction, "%s", frac ? frac : "");
    sw_status st = pjrt_plugin_find(out->path, sizeof out->path);
    if (st != SW_OK)
        return finish(out, st, st == SW_ERR_IO ? BACKEND_PLUGIN_MISSING : BACKEND_PLUGIN_FAILED);
    out->accelerator = accelerator_of(out->path);
    st = pjrt_plugin_open(out->path, &pl);
    if (st == SW_ERR_IO)
        return finish(out, st, BACKEND_PLUGIN_MISSING);
    if (st == SW_ERR_FORMAT) {
        char msg[512];   /* classify_format must not lose open's message */
        snprintf(msg, sizeof msg, "%s", sw_last_error());
        backend_plugin_problem problem = classify_format(out->path, out);
        (void)sw_errorf(st, "%s", msg);
        return finish(out, st, problem);
    }
    if (st != SW_OK)
        return finish(out, st, classify_runtime(st, sw_last_error()));
    out->loaded = true;
    out->api_major = pl.api_major;
    out->api_minor = pl.api_minor;
    st = pjrt_client_open(&pl, &c);
    if (st == SW_OK) {
        describe(&c, out);
        pjrt_client_close(&c);
    }
    pjrt_plugin_close(&pl);
    return finish(out, st, classify_runtime(st, st == SW_OK ? "" : sw_last_error()));
}

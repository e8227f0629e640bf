/*
 * plugin_doctor.h — what `spillway doctor --backend pjrt` shows about a
 * plugin backend (registry.c fills it): plain C, no PJRT types, so the
 * doctor and the CLI can print it without the plugin's headers.
 */
#ifndef SW_BACKEND_PLUGIN_DOCTOR_H
#define SW_BACKEND_PLUGIN_DOCTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

/* What `spillway doctor --backend pjrt` shows about a plugin backend: plain
 * C (no PJRT types), so the CLI can print it. `problem` classifies a
 * failure; `status` and `message` are the failure itself. Fields past the
 * failing step stay zero: `loaded` says the API version fields are valid
 * (also for a plugin of the wrong version), `client` says the platform,
 * device and memory fields are. */
typedef enum backend_plugin_problem {
    BACKEND_PLUGIN_OK,          /* the plugin loaded and made a client */
    BACKEND_PLUGIN_NOT_BUILT,   /* this build has no such backend */
    BACKEND_PLUGIN_MISSING,     /* no file at the path (SW_ERR_IO) */
    BACKEND_PLUGIN_NOT_LIBRARY, /* the file is not a loadable shared library */
    BACKEND_PLUGIN_NOT_PLUGIN,  /* a shared library without GetPjrtApi */
    BACKEND_PLUGIN_API_VERSION, /* a plugin whose C API major version differs */
    BACKEND_PLUGIN_NO_DEVICE,   /* loaded, but the runtime found no device */
    BACKEND_PLUGIN_BUSY,        /* a device is there, another process holds it */
    BACKEND_PLUGIN_OOM,         /* the device is out of memory */
    BACKEND_PLUGIN_FAILED       /* any other error: see message */
} backend_plugin_problem;

#define BACKEND_PLUGIN_MAX_MEMORIES 8

typedef struct backend_plugin_memory {
    char kind[32];              /* "device", "pinned_host", "unpinned_host" */
    bool has_size;              /* the plugin reports the sizes below */
    uint64_t bytes_limit;       /* what allocations may use in all */
    uint64_t bytes_in_use;
} backend_plugin_memory;

typedef struct backend_plugin_report {
    sw_status status;                 /* SW_OK: the plugin works */
    backend_plugin_problem problem;
    char message[512];                /* the failure's message, "" when it works */
    char path[1024];                  /* the plugin file tried */
    const char *accelerator;          /* static: "GPU", "TPU" or "device", from the
                                         file name, for the no-device advice */
    bool loaded;
    int api_major, api_minor;         /* the plugin's C API version */
    int header_major, header_minor;   /* pjrt_c_api.h's, this build's */
    bool client;
    char platform[64], platform_version[128], device_kind[64];
    uint32_t n_devices;
    backend_plugin_memory memories[BACKEND_PLUGIN_MAX_MEMORIES]; /* the first device's */
    uint32_t n_memories;
    char options_used[96];            /* client options passed, e.g. "preallocate=false" */
    char memory_fraction[32];         /* SPILLWAY_PJRT_MEMORY_FRACTION, "" when unset */
} backend_plugin_report;

/* Opens backend `backend_name`'s plugin (pjrt: the file pjrt_plugin_find
 * names) and its client once, and describes them into *out, which is
 * filled on failure too. Returns out->status; sw_last_error() then equals
 * out->message. Errors: SW_ERR_ARG (unknown name or a backend without a
 * plugin), SW_ERR_UNSUPPORTED (not in this build), or the plugin's: IO,
 * FORMAT, NO_DEVICE, OOM_DEVICE, DEVICE (see problem). */
sw_status backend_plugin_doctor(const char *backend_name, backend_plugin_report *out);

#endif

/*
 * pjrt_plugin.h — a PJRT plugin (XLA's C interface to one platform: a
 * shared library exporting GetPjrtApi) opened, version-checked and turned
 * into a client on one of its devices (one client per plugin in the
 * process, shared), with every PJRT error mapped to a
 * Spillway status that carries the plugin's own message.
 *
 * Which file: --pjrt-plugin PATH (the CLI puts it in SPILLWAY_PJRT_PLUGIN),
 * else the CPU plugin `spillway fetch pjrt-cpu` installed in the cache.
 *
 * Error classes (what doctor diagnoses):
 *   the file is missing            SW_ERR_IO
 *   not a shared library / no GetPjrtApi / API major differs   SW_ERR_FORMAT
 *   NOT_FOUND or FAILED_PRECONDITION creating the client       SW_ERR_NO_DEVICE
 *   another process holds the device (libtpu's lock file)      SW_ERR_NO_DEVICE, "busy"
 *   RESOURCE_EXHAUSTED             SW_ERR_OOM_DEVICE (with the request's bytes)
 *   anything else                  SW_ERR_DEVICE
 * The client never pre-allocates device memory: on a plugin that takes
 * the option, `preallocate=false` is passed (and `memory_fraction` only
 * when SPILLWAY_PJRT_MEMORY_FRACTION asks for it).
 */
#ifndef SW_BACKEND_PJRT_PLUGIN_H
#define SW_BACKEND_PJRT_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pjrt_c_api.h> /* third-party: from the installed xla-cpu-pjrt package */
#include "spillway.h"

#define PJRT_PATH_CAP 1024
#define PJRT_MAX_MEMORIES 8

typedef struct pjrt_plugin {
    void *dl;                     /* dlopen handle */
    const PJRT_Api *api;
    char path[PJRT_PATH_CAP];
    int api_major, api_minor;     /* the plugin's */
} pjrt_plugin;

typedef struct pjrt_memory_info {
    PJRT_Memory *memory;
    char kind[32];                /* "device", "pinned_host", "unpinned_host" */
} pjrt_memory_info;

/* A client on one addressable device (the first, or device_index of a
 * split over several), with what doctor shows. */
typedef struct pjrt_client {
    pjrt_plugin *plugin;          /* borrowed */
    PJRT_Client *client;
    PJRT_Device *device;
    uint32_t device_index;        /* of the addressable devices; > 0: programs are
                                   * compiled portable and run on `device` */
    char platform[64], platform_version[128], device_kind[64];
    uint32_t n_devices;
    pjrt_memory_info memories[PJRT_MAX_MEMORIES];
    uint32_t n_memories;
    PJRT_Memory *device_memory;   /* kind "device" (else the default memory) */
    PJRT_Memory *pinned_memory;   /* kind "pinned_host", NULL when absent */
    bool has_stats;               /* PJRT_Device_MemoryStats works */
    uint64_t bytes_limit, bytes_in_use;
    char options_used[96];        /* "preallocate=false" or "(none)" */
} pjrt_client;

/* The plugin file to use into out: $SPILLWAY_PJRT_PLUGIN, else the cached
 * CPU plugin. Errors: SW_ERR_IO (neither: the message says how to get one). */
sw_status pjrt_plugin_find(char *out, size_t cap);

/* dlopens path and checks it is a PJRT plugin with our API major version.
 * On error *p is left closed. */
sw_status pjrt_plugin_open(const char *path, pjrt_plugin *p);
void pjrt_plugin_close(pjrt_plugin *p);

/* Maps err (consumed: destroyed here) to a status with "what: plugin
 * message"; SW_OK when err is NULL. `bytes` (0: unknown) is named in an
 * out-of-memory message. `at_create` maps NOT_FOUND/FAILED_PRECONDITION to
 * SW_ERR_NO_DEVICE. */
sw_status pjrt_status(const pjrt_plugin *p, PJRT_Error *err, const char *what, uint64_t bytes,
                      bool at_create);

/* The plugin's client (see the header comment for options), made on the
 * first open and shared by every open of the same plugin in the process
 * until the last close, described for its first device. Thread-safe.
 * Errors: as above. */
sw_status pjrt_client_open(pjrt_plugin *p, pjrt_client *c);
/* The same on addressable device `index`. Errors: also SW_ERR_NO_DEVICE
 * when the client has no such device. */
sw_status pjrt_client_open_device(pjrt_plugin *p, uint32_t index, pjrt_client *c);
void pjrt_client_close(pjrt_client *c);

/* True when the plugin's function table reaches the named entry. */
#define PJRT_HAS(api, fn) \
    ((api)->struct_size >= offsetof(PJRT_Api, fn) + sizeof((api)->fn) && (api)->fn != NULL)

#endif

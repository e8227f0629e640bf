/*
 * pjrt_plugin.c — opening a PJRT plugin and its client (pjrt_plugin.h).
 *
 * The header we compile against (found in an installed package by CMake)
 * may be older than the plugin: PJRT keeps the ABI within a major version
 * by appending fields, every argument struct says its size, and PJRT_HAS
 * checks that an entry exists before it is called.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/pjrt/pjrt_plugin.h"
#include "util/error.h"

/* Where `spillway fetch pjrt-cpu` puts the plugin, under the cache folder. */
#define CPU_PLUGIN_REL "pjrt-cpu/fastatomstruct_xla_cpu/libpjrt_cpu.so"
#define TPU_LOCKFILE "/tmp/libtpu_lockfile"

sw_status pjrt_plugin_find(char *out, size_t cap) {
    const char *env = getenv("SPILLWAY_PJRT_PLUGIN");
    char dir[PJRT_PATH_CAP];
    if (env != NULL && env[0] != '\0') {
        if ((size_t)snprintf(out, cap, "%s", env) >= cap)
            return sw_errorf(SW_ERR_ARG, "PJRT plugin path is too long");
        return SW_OK;
    }
    if (sw_cache_dir(dir, sizeof dir) != SW_OK ||
        (size_t)snprintf(out, cap, "%s/%s", dir, CPU_PLUGIN_REL) >= cap)
        return sw_errorf(SW_ERR_IO, "no PJRT plugin: pass --pjrt-plugin PATH or run "
                         "'spillway fetch pjrt-cpu'");
    if (access(out, R_OK) != 0)
        return sw_errorf(SW_ERR_IO, "no PJRT plugin: %s is not there; run 'spillway fetch "
                         "pjrt-cpu' (XLA's CPU plugin from PyPI) or pass --pjrt-plugin PATH",
                         out);
    return SW_OK;
}

static bool is_libtpu(const char *path) {
    const char *base = strrchr(path, '/');
    return strstr(base ? base + 1 : path, "libtpu") != NULL;
}

sw_status pjrt_plugin_open(const char *path, pjrt_plugin *p) {
    struct stat sb;
    memset(p, 0, sizeof *p);
    if (path == NULL || stat(path, &sb) != 0)
        return sw_errorf(SW_ERR_IO, "PJRT plugin '%s': %s", path ? path : "(null)",
                         strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return sw_errorf(SW_ERR_FORMAT, "PJRT plugin '%s' is not a regular file", path);
    /* libtpu off Google Cloud waits minutes for a metadata server unless
     * told not to ask; the variable must be set before it loads. */
    if (is_libtpu(path))
        setenv("TPU_SKIP_MDS_QUERY", "1", 0);
    snprintf(p->path, sizeof p->path, "%s", path);
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (p->dl == NULL) {
        const char *why = dlerror();
        return sw_errorf(SW_ERR_FORMAT, "'%s' is not a loadable shared library, so not a "
                         "PJRT plugin (%s)", path, why ? why : "dlopen failed");
    }
    const PJRT_Api *(*get)(void) = NULL;
    void *sym = dlsym(p->dl, "GetPjrtApi");
    memcpy(&get, &sym, sizeof get);   /* object to function pointer, as POSIX allows */
    if (get == NULL || (p->api = get()) == NULL) {
        pjrt_plugin_close(p);
        return sw_errorf(SW_ERR_FORMAT, "'%s' is a shared library but not a PJRT plugin "
                         "(it exports no GetPjrtApi)", path);
    }
    p->api_major = p->api->pjrt_api_version.major_version;
    p->api_minor = p->api->pjrt_api_version.minor_version;
    if (p->api_major != PJRT_API_MAJOR) {
        int major = p->api_major, minor = p->api_minor;
        pjrt_plugin_close(p);
        return sw_errorf(SW_ERR_FORMAT, "PJRT plugin '%s' has C API %d.%d; Spillway speaks "
                         "%d.x", path, major, minor, PJRT_API_MAJOR);
    }
    if (PJRT_HAS(p->api, PJRT_Plugin_Initialize)) {
        PJRT_Plugin_Initialize_Args a = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
        sw_status st = pjrt_status(p, p->api->PJRT_Plugin_Initialize(&a),
                                   "initializing the PJRT plugin", 0, true);
        if (st != SW_OK)
            pjrt_plugin_close(p);   /* touches no error state: the message stays */
        return st;
    }
    return SW_OK;
}

void pjrt_plugin_close(pjrt_plugin *p) {
    /* Plugins keep threads and static state: unloading one is unsafe, so
     * the handle stays open for the life of the process. */
    if (p != NULL)
        memset(p, 0, sizeof *p);
}

sw_status pjrt_status(const pjrt_plugin *p, PJRT_Error *err, const char *what, uint64_t bytes,
                      bool at_create) {
    if (err == NULL)
        return SW_OK;
    const PJRT_Api *api = p->api;
    PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE,
                                 .error = err};
    PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE,
                                 .error = err};
    api->PJRT_Error_Message(&m);
    PJRT_Error_Code code = PJRT_Error_Code_UNKNOWN;
    if (api->PJRT_Error_GetCode(&g) == NULL)
        code = g.code;
    char msg[400];
    snprintf(msg, sizeof msg, "%.*s", (int)(m.message_size < 399 ? m.message_size : 399),
             m.message ? m.message : "");
    PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                 .error = err};
    api->PJRT_Error_Destroy(&d);
    if (code == PJRT_Error_Code_RESOURCE_EXHAUSTED)
        return bytes ? sw_errorf(SW_ERR_OOM_DEVICE, "device out of memory %s (%.1f MiB): "
                                 "plugin says: %s", what, (double)bytes / 1048576.0, msg)
                     : sw_errorf(SW_ERR_OOM_DEVICE, "device out of memory %s: plugin says: %s",
                                 what, msg);
    if (at_create && (code == PJRT_Error_Code_NOT_FOUND ||
                      code == PJRT_Error_Code_FAILED_PRECONDITION))
        return sw_errorf(SW_ERR_NO_DEVICE, "no device: %s failed, the plugin found none "
                         "(%s)", what, msg);
    if (code == PJRT_Error_Code_UNIMPLEMENTED)
        return sw_errorf(SW_ERR_UNSUPPORTED, "%s: the plugin does not implement it (%s)", what,
                         msg);
    return sw_errorf(SW_ERR_DEVICE, "%s: PJRT error %d: %s", what, (int)code, msg);
}

/* libtpu lets one process at a time hold the chips, through a lock file.
 * SPILLWAY_TPU_LOCKFILE names another file to check: tests hold one with
 * flock(1) to see the busy diagnosis without a TPU. */
static sw_status tpu_lock_free(const char *path) {
    if (!is_libtpu(path))
        return SW_OK;
    const char *lock = getenv("SPILLWAY_TPU_LOCKFILE");
    if (lock == NULL || lock[0] == '\0')
        lock = TPU_LOCKFILE;
    int fd = open(lock, O_RDONLY);
    if (fd < 0)
        return SW_OK;
    int locked = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!locked)
        flock(fd, LOCK_UN);
    close(fd);
    if (locked)
        return sw_errorf(SW_ERR_NO_DEVICE, "the TPU is busy: another process holds %s (a "
                         "device is present but taken; stop that process, or remove the "
                         "file if none runs)", lock);
    return SW_OK;
}

/* *invalid_arg tells INVALID_ARGUMENT (an option the plugin does not take). */
static sw_status create_with(pjrt_plugin *p, const PJRT_NamedValue *opts, size_t n,
                             PJRT_Client **out, bool *invalid_arg) {
    PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                 .create_options = opts, .num_options = n};
    PJRT_Error *err = p->api->PJRT_Client_Create(&a);
    *out = a.client;
    if (err != NULL && invalid_arg != NULL) {
        PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE,
                                     .error = err};
        *invalid_arg = p->api->PJRT_Error_GetCode(&g) == NULL &&
                       g.code == PJRT_Error_Code_INVALID_ARGUMENT;
    }
    return pjrt_status(p, err, "creating the PJRT client", 0, true);
}

static PJRT_NamedValue named_bool(const char *name, bool v) {
    PJRT_NamedValue nv = {.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name,
                          .name_size = strlen(name), .type = PJRT_NamedValue_kBool,
                          .value_size = 1};
    nv.bool_value = v;
    return nv;
}

/* GPU plugins take preallocate/memory_fraction and refuse options they do
 * not know; the CPU plugin takes none. So: ours first, and plain when the
 * plugin calls them invalid. */
static sw_status create_client(pjrt_plugin *p, pjrt_client *c) {
    PJRT_NamedValue opts[2] = {named_bool("preallocate", false)};
    size_t n = 1;
    const char *frac = getenv("SPILLWAY_PJRT_MEMORY_FRACTION");
    if (frac != NULL && frac[0] != '\0') {
        char *end = NULL;
        float f = strtof(frac, &end);
        if (end == frac || *end != '\0' || !(f > 0.0f && f <= 1.0f))
            return sw_errorf(SW_ERR_ARG, "SPILLWAY_PJRT_MEMORY_FRACTION '%s' is not a "
                             "fraction in (0, 1]", frac);
        opts[n] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                    .name = "memory_fraction", .name_size = 15,
                                    .type = PJRT_NamedValue_kFloat, .value_size = 1};
        opts[n++].float_value = f;
    }
    bool invalid_arg = false;
    sw_status st = create_with(p, opts, n, &c->client, &invalid_arg);
    if (st == SW_OK) {
        snprintf(c->options_used, sizeof c->options_used, "preallocate=false%s",
                 n > 1 ? ", memory_fraction" : "");
        return SW_OK;
    }
    if (!invalid_arg)
        return st;
    snprintf(c->options_used, sizeof c->options_used, "(none: the plugin takes no "
             "allocator options)");
    return create_with(p, NULL, 0, &c->client, NULL);
}

static void copy_str(char *dst, size_t cap, const char *s, size_t n) {
    snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), s ? s : "");
}

static sw_status describe_memories(pjrt_client *c) {
    const PJRT_Api *api = c->plugin->api;
    PJRT_Device_AddressableMemories_Args m = {
        .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = c->device};
    SW_TRY(pjrt_status(c->plugin, api->PJRT_Device_AddressableMemories(&m),
                       "listing device memories", 0, false));
    for (size_t i = 0; i < m.num_memories && c->n_memories < PJRT_MAX_MEMORIES; i++) {
        PJRT_Memory_Kind_Args k = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE,
                                   .memory = m.memories[i]};
        pjrt_memory_info *mi = &c->memories[c->n_memories++];
        mi->memory = m.memories[i];
        if (api->PJRT_Memory_Kind(&k) == NULL)
            copy_str(mi->kind, sizeof mi->kind, k.kind, k.kind_size);
        if (!strcmp(mi->kind, "device"))
            c->device_memory = mi->memory;
        if (!strcmp(mi->kind, "pinned_host"))
            c->pinned_memory = mi->memory;
    }
    if (c->device_memory == NULL && PJRT_HAS(api, PJRT_Device_DefaultMemory)) {
        PJRT_Device_DefaultMemory_Args d = {
            .struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE, .device = c->device};
        if (api->PJRT_Device_DefaultMemory(&d) == NULL)
            c->device_memory = d.memory;
    }
    return SW_OK;
}

static void describe_stats(pjrt_client *c) {
    const PJRT_Api *api = c->plugin->api;
    if (!PJRT_HAS(api, PJRT_Device_MemoryStats))
        return;
    PJRT_Device_MemoryStats_Args s = {.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE,
                                      .device = c->device};
    PJRT_Error *err = api->PJRT_Device_MemoryStats(&s);
    if (err != NULL) {
        (void)pjrt_status(c->plugin, err, "memory stats", 0, false);  /* UNIMPLEMENTED: fine */
        return;
    }
    c->has_stats = s.bytes_limit_is_set && s.bytes_limit > 0;
    c->bytes_limit = c->has_stats ? (uint64_t)s.bytes_limit : 0;
    c->bytes_in_use = s.bytes_in_use > 0 ? (uint64_t)s.bytes_in_use : 0;
}

static sw_status describe(pjrt_client *c) {
    const PJRT_Api *api = c->plugin->api;
    PJRT_Client_PlatformName_Args pn = {
        .struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE, .client = c->client};
    PJRT_Client_PlatformVersion_Args pv = {
        .struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE, .client = c->client};
    PJRT_Client_AddressableDevices_Args ad = {
        .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c->client};
    SW_TRY(pjrt_status(c->plugin, api->PJRT_Client_PlatformName(&pn), "platform name", 0, false));
    copy_str(c->platform, sizeof c->platform, pn.platform_name, pn.platform_name_size);
    if (api->PJRT_Client_PlatformVersion(&pv) == NULL)
        copy_str(c->platform_version, sizeof c->platform_version, pv.platform_version,
                 pv.platform_version_size);
    SW_TRY(pjrt_status(c->plugin, api->PJRT_Client_AddressableDevices(&ad), "listing devices", 0,
                       true));
    if (ad.num_addressable_devices == 0)
        return sw_errorf(SW_ERR_NO_DEVICE, "no device: the %s PJRT client sees no addressable "
                         "device", c->platform);
    c->n_devices = (uint32_t)ad.num_addressable_devices;
    if (c->device_index >= c->n_devices)
        return sw_errorf(SW_ERR_NO_DEVICE, "no device %u: the %s PJRT client sees %u",
                         c->device_index, c->platform, c->n_devices);
    c->device = ad.addressable_devices[c->device_index];
    PJRT_Device_GetDescription_Args gd = {
        .struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE, .device = c->device};
    if (api->PJRT_Device_GetDescription(&gd) == NULL) {
        PJRT_DeviceDescription_Kind_Args k = {
            .struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE,
            .device_description = gd.device_description};
        if (api->PJRT_DeviceDescription_Kind(&k) == NULL)
            copy_str(c->device_kind, sizeof c->device_kind, k.device_kind, k.device_kind_size);
    }
    SW_TRY(describe_memories(c));
    describe_stats(c);
    return SW_OK;
}

sw_status pjrt_client_open(pjrt_plugin *p, pjrt_client *c) {
    return pjrt_client_open_device(p, 0, c);
}

/* One PJRT client per plugin in the process, shared by every backend on
 * it: the stages of a split then hold their devices' arrays in one client,
 * and a stream goes device to device through PJRT's own copy (arrays of
 * two clients cannot meet). Keyed by the plugin's API table, which is the
 * same for every dlopen of one library. */
#define SHARED_MAX 4
typedef struct shared_client {
    const PJRT_Api *api;
    PJRT_Client *client;
    uint32_t refs;
    char options_used[96];
} shared_client;

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static shared_client shared[SHARED_MAX];

/* The plugin's client, made on first use; holds shared_mu. */
static sw_status acquire_client(pjrt_plugin *p, pjrt_client *c) {
    for (int i = 0; i < SHARED_MAX; i++)
        if (shared[i].refs > 0 && shared[i].api == p->api) {
            shared[i].refs++;
            c->client = shared[i].client;
            memcpy(c->options_used, shared[i].options_used, sizeof c->options_used);
            return SW_OK;
        }
    int slot = -1;
    for (int i = 0; i < SHARED_MAX && slot < 0; i++)
        if (shared[i].refs == 0)
            slot = i;
    if (slot < 0)
        return sw_errorf(SW_ERR_UNSUPPORTED, "more than %d PJRT plugins open in one process",
                         SHARED_MAX);
    SW_TRY(tpu_lock_free(p->path));
    SW_TRY(create_client(p, c));
    shared[slot] = (shared_client){.api = p->api, .client = c->client, .refs = 1};
    memcpy(shared[slot].options_used, c->options_used, sizeof c->options_used);
    return SW_OK;
}

sw_status pjrt_client_open_device(pjrt_plugin *p, uint32_t index, pjrt_client *c) {
    memset(c, 0, sizeof *c);
    c->plugin = p;
    c->device_index = index;
    pthread_mutex_lock(&shared_mu);
    sw_status st = acquire_client(p, c);
    pthread_mutex_unlock(&shared_mu);
    if (st == SW_OK)
        st = describe(c);
    if (st != SW_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sw_last_error());
        pjrt_client_close(c);
        return sw_errorf(st, "%s", msg);
    }
    return SW_OK;
}

void pjrt_client_close(pjrt_client *c) {
    if (c == NULL || c->client == NULL)
        return;
    bool last = true;   /* a client made outside the table (never): destroy it */
    pthread_mutex_lock(&shared_mu);
    for (int i = 0; i < SHARED_MAX; i++)
        if (shared[i].refs > 0 && shared[i].client == c->client) {
            last = --shared[i].refs == 0;
            break;
        }
    pthread_mutex_unlock(&shared_mu);
    if (last) {
        PJRT_Client_Destroy_Args d = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                      .client = c->client};
        (void)pjrt_status(c->plugin, c->plugin->api->PJRT_Client_Destroy(&d), "client destroy",
                          0, false);
    }
    c->client = NULL;
}

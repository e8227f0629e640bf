/*
 * pjrt_exec.c — compile cache, executions, host copies and events over the
 * PJRT C API (pjrt_exec.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "backend/pjrt/pjrt_exec.h"
#include "util/error.h"

/* xla.CompileOptionsProto { executable_build_options { num_replicas: 1
 * num_partitions: 1 } }: field 3 (length 4) holding fields 4 and 5. On a
 * device other than the first (a split over several), also
 * compile_portable_executable: true (field 4), so that the program runs on
 * the device the execution names. */
static const char COMPILE_OPTIONS[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01};
static const char COMPILE_OPTIONS_PORTABLE[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

static uint64_t text_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static sw_status compile(pjrt_cache *c, const char *text, PJRT_LoadedExecutable **exe,
                         uint32_t *n_outputs) {
    const pjrt_plugin *p = c->client->plugin;
    const PJRT_Api *api = p->api;
    PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)text,
                         .code_size = strlen(text), .format = "mlir", .format_size = 4};
    const bool portable = c->client->device_index > 0;
    PJRT_Client_Compile_Args a = {
        .struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c->client->client,
        .program = &prog,
        .compile_options = portable ? COMPILE_OPTIONS_PORTABLE : COMPILE_OPTIONS,
        .compile_options_size = portable ? sizeof COMPILE_OPTIONS_PORTABLE
                                         : sizeof COMPILE_OPTIONS};
    SW_TRY(pjrt_status(p, api->PJRT_Client_Compile(&a), "compiling a StableHLO program", 0,
                       false));
    *exe = a.executable;
    PJRT_LoadedExecutable_GetExecutable_Args g = {
        .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
        .loaded_executable = *exe};
    SW_TRY(pjrt_status(p, api->PJRT_LoadedExecutable_GetExecutable(&g), "executable", 0, false));
    PJRT_Executable_NumOutputs_Args no = {
        .struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE,
        .executable = g.executable};
    sw_status st = pjrt_status(p, api->PJRT_Executable_NumOutputs(&no), "output count", 0, false);
    *n_outputs = (uint32_t)no.num_outputs;
    PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                      .executable = g.executable};
    (void)pjrt_status(p, api->PJRT_Executable_Destroy(&d), "executable destroy", 0, false);
    return st;
}

sw_status pjrt_program_get(pjrt_cache *c, const char *text, pjrt_program **out) {
    uint64_t h = text_hash(text);
    pjrt_program **slot = &c->bucket[h & 255];
    for (pjrt_program *p = *slot; p != NULL; p = p->next)
        if (p->hash == h && !strcmp(p->text, text)) {
            *out = p;
            return SW_OK;
        }
    pjrt_program *p = calloc(1, sizeof *p);
    if (p == NULL || (p->text = strdup(text)) == NULL) {
        free(p);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory caching a program");
    }
    p->hash = h;
    sw_status st = compile(c, text, &p->exe, &p->n_outputs);
    if (st != SW_OK) {
        free(p->text);
        free(p);
        return st;
    }
    p->next = *slot;
    *slot = p;
    *out = p;
    return SW_OK;
}

void pjrt_cache_free(pjrt_cache *c) {
    for (int i = 0; i < 256; i++)
        for (pjrt_program *p = c->bucket[i], *next; p != NULL; p = next) {
            next = p->next;
            PJRT_LoadedExecutable_Destroy_Args d = {
                .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
                .executable = p->exe};
            if (p->exe)
                (void)pjrt_status(c->client->plugin,
                                  c->client->plugin->api->PJRT_LoadedExecutable_Destroy(&d),
                                  "executable destroy", 0, false);
            free(p->text);
            free(p);
        }
    memset(c->bucket, 0, sizeof c->bucket);
}

sw_status pjrt_execute(pjrt_cache *c, pjrt_program *prog, PJRT_Buffer *const *args,
                       size_t n_args, PJRT_Buffer **outs, PJRT_Event **done) {
    const pjrt_plugin *p = c->client->plugin;
    PJRT_ExecuteOptions opt = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
    PJRT_Buffer *const *arg_lists[1] = {args};
    PJRT_Buffer **out_lists[1] = {outs};
    PJRT_Event *events[1] = {NULL};
    PJRT_LoadedExecutable_Execute_Args a = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
        .executable = prog->exe, .options = &opt, .argument_lists = arg_lists,
        .num_devices = 1, .num_args = n_args, .output_lists = out_lists,
        .device_complete_events = done ? events : NULL,
        .execute_device = c->client->device_index > 0 ? c->client->device : NULL};
    SW_TRY(pjrt_status(p, p->api->PJRT_LoadedExecutable_Execute(&a), "running a program", 0,
                       false));
    if (done)
        *done = events[0];
    return SW_OK;
}

sw_status pjrt_buffer_from_host(pjrt_client *c, PJRT_Memory *memory, const void *src,
                                uint64_t bytes, PJRT_Buffer **out, PJRT_Event **done) {
    return pjrt_buffer_over_host(c, memory, src, bytes, false, out, done);
}

sw_status pjrt_buffer_over_host(pjrt_client *c, PJRT_Memory *memory, const void *src,
                                uint64_t bytes, bool zero_copy, PJRT_Buffer **out,
                                PJRT_Event **done) {
    const pjrt_plugin *p = c->plugin;
    int64_t dims[1] = {(int64_t)bytes};
    PJRT_Client_BufferFromHostBuffer_Args a = {
        .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
        .client = c->client, .data = src, .type = PJRT_Buffer_Type_U8, .dims = dims,
        .num_dims = 1,
        .host_buffer_semantics = zero_copy
                                     ? PJRT_HostBufferSemantics_kImmutableZeroCopy
                                     : PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
        .device = memory ? NULL : c->device, .memory = memory};
    SW_TRY(pjrt_status(p, p->api->PJRT_Client_BufferFromHostBuffer(&a),
                       "copying to the device", bytes, false));
    *out = a.buffer;
    *done = a.done_with_host_buffer;
    return SW_OK;
}

sw_status pjrt_buffer_to_host(pjrt_client *c, PJRT_Buffer *src, void *dst, uint64_t bytes,
                              PJRT_Event **done) {
    const pjrt_plugin *p = c->plugin;
    PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                       .src = src, .dst = dst, .dst_size = bytes};
    SW_TRY(pjrt_status(p, p->api->PJRT_Buffer_ToHostBuffer(&a), "copying from the device", 0,
                       false));
    *done = a.event;
    return SW_OK;
}

sw_status pjrt_buffer_to_device(pjrt_client *c, PJRT_Buffer *src, const pjrt_client *to,
                                PJRT_Buffer **out) {
    const pjrt_plugin *p = c->plugin;
    *out = NULL;
    if (to->client != c->client)
        return sw_errorf(SW_ERR_UNSUPPORTED, "PJRT: a copy between two clients' devices");
    if (to->device_memory != NULL && PJRT_HAS(p->api, PJRT_Buffer_CopyToMemory)) {
        PJRT_Buffer_CopyToMemory_Args a = {
            .struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE, .buffer = src,
            .dst_memory = to->device_memory};
        SW_TRY(pjrt_status(p, p->api->PJRT_Buffer_CopyToMemory(&a), "copying to another device",
                           0, false));
        *out = a.dst_buffer;
        return SW_OK;
    }
    PJRT_Buffer_CopyToDevice_Args a = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                       .buffer = src, .dst_device = to->device};
    SW_TRY(pjrt_status(p, p->api->PJRT_Buffer_CopyToDevice(&a), "copying to another device", 0,
                       false));
    *out = a.dst_buffer;
    return SW_OK;
}

void pjrt_buffer_destroy(pjrt_client *c, PJRT_Buffer *b) {
    if (b == NULL)
        return;
    /* Memory is released once the work already queued on b has run. */
    PJRT_Buffer_Destroy_Args d = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                  .buffer = b};
    (void)pjrt_status(c->plugin, c->plugin->api->PJRT_Buffer_Destroy(&d), "buffer destroy", 0,
                      false);
}

sw_status pjrt_event_finish(pjrt_client *c, PJRT_Event *ev, const char *what) {
    if (ev == NULL)
        return SW_OK;
    const PJRT_Api *api = c->plugin->api;
    PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
    sw_status st = pjrt_status(c->plugin, api->PJRT_Event_Await(&w), what, 0, false);
    PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
    (void)pjrt_status(c->plugin, api->PJRT_Event_Destroy(&d), "event destroy", 0, false);
    return st;
}

sw_status pjrt_buffer_ready(pjrt_client *c, PJRT_Buffer *b, PJRT_Event **out) {
    PJRT_Buffer_ReadyEvent_Args a = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                     .buffer = b};
    SW_TRY(pjrt_status(c->plugin, c->plugin->api->PJRT_Buffer_ReadyEvent(&a), "ready event", 0,
                       false));
    *out = a.event;
    return SW_OK;
}

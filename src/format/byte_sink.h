/*
 * byte_sink.h — where a writer's bytes go: one write callback and its
 * context (a buffered file in src/synth/, a memory buffer in tests, a
 * stdio FILE for the JSON writer). The GGUF, safetensors and JSON writers
 * all write through it, so none of them knows files.
 */
#ifndef SW_FORMAT_BYTE_SINK_H
#define SW_FORMAT_BYTE_SINK_H

#include <stddef.h>

#include "spillway.h"

/* write() appends n bytes or returns an error status with a message
 * recorded (sw_errorf); the writers pass it on. */
typedef struct byte_sink {
    sw_status (*write)(void *ctx, const void *data, size_t n);
    void *ctx;
} byte_sink;

#endif

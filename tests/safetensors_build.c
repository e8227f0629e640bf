/*
 * safetensors_build.c — the in-memory safetensors writer (safetensors_build.h).
 * The header text is built in a growable buffer of its own, then framed by
 * sb_file(); nothing here validates, so tests can write anything.
 */
#include "safetensors_build.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(sb *b) { memset(b, 0, sizeof *b); }

void sb_free(sb *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

static bool sb_reserve(sb *b, size_t n) {
    if (b->failed)
        return false;
    if (b->cap - b->len >= n)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (d == NULL) {
        b->failed = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void sb_raw(sb *b, const void *bytes, size_t n) {
    if (n == 0 || !sb_reserve(b, n))
        return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

void sb_u64(sb *b, uint64_t v) {
    uint8_t x[8];
    for (int k = 0; k < 8; k++)
        x[k] = (uint8_t)(v >> (8 * k));
    sb_raw(b, x, 8);
}

uint8_t sb_pattern(uint64_t i) { return (uint8_t)(i * 131 + 7 + (i >> 8)); }

void sb_fill(sb *b, size_t n) {
    if (!sb_reserve(b, n))
        return;
    for (size_t i = 0; i < n; i++)
        b->data[b->len + i] = sb_pattern(i);
    b->len += n;
}

void sb_file(sb *b, const char *json, uint64_t n_data) {
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    sb_u64(b, padded);
    sb_raw(b, json, len);
    for (size_t i = len; i < padded; i++)
        sb_raw(b, " ", 1);
    sb_fill(b, (size_t)n_data);
}

/* Appends formatted text to t (sticky failure in t->failed). */
static void text_add(sb *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(sb *t, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        sb_raw(t, small, (size_t)n);
        return;
    }
    if (!sb_reserve(t, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf((char *)t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void sb_tensors(sb *b, const sb_tensor *t, size_t n, const char *meta_json) {
    sb text;
    uint64_t offset = 0;
    sb_init(&text);
    text_add(&text, "{");
    if (meta_json != NULL)
        text_add(&text, "\"__metadata__\":%s%s", meta_json, n ? "," : "");
    for (size_t i = 0; i < n; i++) {
        uint64_t count = 1;
        text_add(&text, "%s\"", i ? "," : "");
        sb_raw(&text, t[i].name, strlen(t[i].name)); /* may be longer than 256 */
        text_add(&text, "\":{\"dtype\":\"%s\",\"shape\":[", t[i].dtype);
        for (uint32_t d = 0; d < t[i].n_dims; d++) {
            text_add(&text, "%s%" PRIu64, d ? "," : "", t[i].shape[d]);
            count *= t[i].shape[d];
        }
        uint64_t end = offset + count * t[i].elem_bytes;
        text_add(&text, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset, end);
        offset = end;
    }
    text_add(&text, "}");
    sb_raw(&text, "", 1); /* NUL */
    if (text.failed)
        b->failed = true;
    else
        sb_file(b, (const char *)text.data, offset);
    sb_free(&text);
}

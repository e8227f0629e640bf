/*
 * meta.c — read-only access to a model's metadata for `spillway info`:
 * entry descriptions and values rendered as JSON text. Rendering is bounded
 * by the caller's buffer and an item limit, so a 262144-entry vocabulary
 * costs nothing to describe.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/error.h"

/* A bounded text sink: appends until full, then drops the rest while
 * keeping a valid UTF-8, NUL-terminated prefix. */
typedef struct sink {
    char *buf;
    size_t cap;
    size_t len;
    int full;
} sink;

static void sink_put(sink *s, const char *p, size_t n) {
    if (s->full)
        return;
    const size_t room = s->cap - 1 - s->len;
    if (n > room) { /* (n shrinks only: p[n] stays inside what the caller gave) */
        n = room;
        /* Back off to a UTF-8 character boundary. */
        while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
            n--;
        s->full = 1;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
}

static void sink_printf(sink *s, const char *fmt, ...) SW_PRINTF(2, 3);
static void sink_printf(sink *s, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sink_put(s, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void sink_json_string(sink *s, const char *p, uint64_t len) {
    sink_put(s, "\"", 1);
    for (uint64_t i = 0; i < len && !s->full; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            sink_put(s, esc, 2);
        } else if (c < 0x20) {
            sink_printf(s, "\\u%04x", c);
        } else {
            sink_put(s, (const char *)&c, 1);
        }
    }
    sink_put(s, "\"", 1);
}

static void sink_float(sink *s, double v) {
    if (isnan(v) || isinf(v))
        sink_put(s, "null", 4); /* JSON has no NaN/Inf */
    else
        sink_printf(s, "%.9g", v);
}

static void render_value(sink *s, const gguf_value *v, size_t max_items);

static void render_array(sink *s, const gguf_value *v, size_t max_items) {
    uint64_t n = v->arr.n;
    uint64_t shown = n < max_items ? n : max_items;
    sink_put(s, "[", 1);
    for (uint64_t i = 0; i < shown && !s->full; i++) {
        if (i)
            sink_put(s, ",", 1);
        uint32_t t = v->arr.elem_type;
        if (t == GGUF_VT_STRING || t == GGUF_VT_ARRAY)
            render_value(s, &v->arr.items[i], max_items);
        else if (t == GGUF_VT_F32 || t == GGUF_VT_F64)
            sink_float(s, gguf_array_float(v, i));
        else if (t == GGUF_VT_BOOL)
            sink_put(s, gguf_array_uint(v, i) ? "true" : "false",
                     gguf_array_uint(v, i) ? 4 : 5);
        else if (t == GGUF_VT_I8 || t == GGUF_VT_I16 || t == GGUF_VT_I32 || t == GGUF_VT_I64)
            sink_printf(s, "%lld", (long long)gguf_array_int(v, i));
        else
            sink_printf(s, "%llu", (unsigned long long)gguf_array_uint(v, i));
    }
    if (shown < n)
        sink_put(s, shown ? ",\"...\"" : "\"...\"", shown ? 6 : 5);
    sink_put(s, "]", 1);
}

static void render_value(sink *s, const gguf_value *v, size_t max_items) {
    switch (v->type) {
    case GGUF_VT_STRING: sink_json_string(s, v->s.ptr, v->s.len); break;
    case GGUF_VT_ARRAY: render_array(s, v, max_items); break;
    case GGUF_VT_F32:
    case GGUF_VT_F64: sink_float(s, v->f); break;
    case GGUF_VT_BOOL: sink_put(s, v->u ? "true" : "false", v->u ? 4 : 5); break;
    case GGUF_VT_I8:
    case GGUF_VT_I16:
    case GGUF_VT_I32:
    case GGUF_VT_I64: sink_printf(s, "%lld", (long long)v->i); break;
    default: sink_printf(s, "%llu", (unsigned long long)v->u); break;
    }
}

size_t sw_model_meta_count(const sw_model *m) {
    return m ? (size_t)m->gguf->n_kv : 0;
}

sw_status sw_model_meta_at(const sw_model *m, size_t index, sw_meta_info *out) {
    if (m == NULL || out == NULL || index >= m->gguf->n_kv)
        return sw_errorf(SW_ERR_ARG, "metadata index %zu out of range", index);
    const gguf_kv *kv = &m->gguf->kv[index];
    /* Keys are not NUL-terminated in the mapping; the reader validated them
     * and sw_model keeps NUL-terminated copies in the key table. */
    out->key = m->keys[index];
    out->type_name = gguf_vtype_name(kv->value.type);
    if (kv->value.type == GGUF_VT_ARRAY) {
        out->elem_type_name = gguf_vtype_name(kv->value.arr.elem_type);
        out->n_items = kv->value.arr.n;
    } else {
        out->elem_type_name = "";
        out->n_items = 1;
    }
    return SW_OK;
}

sw_status sw_model_meta_json(const sw_model *m, size_t index, size_t max_items,
                             char *buf, size_t cap) {
    if (m == NULL || buf == NULL || cap == 0 || index >= m->gguf->n_kv)
        return sw_errorf(SW_ERR_ARG, "metadata index %zu out of range", index);
    sink s = {buf, cap, 0, 0};
    buf[0] = '\0';
    render_value(&s, &m->gguf->kv[index].value, max_items);
    return SW_OK;
}

const char *sw_file_type_name(uint32_t ft) {
    switch (ft) {
    case 0: return "F32";     case 1: return "F16";     case 2: return "Q4_0";
    case 3: return "Q4_1";    case 7: return "Q8_0";    case 8: return "Q5_0";
    case 9: return "Q5_1";    case 10: return "Q2_K";   case 11: return "Q3_K_S";
    case 12: return "Q3_K_M"; case 13: return "Q3_K_L"; case 14: return "Q4_K_S";
    case 15: return "Q4_K_M"; case 16: return "Q5_K_S"; case 17: return "Q5_K_M";
    case 18: return "Q6_K";   case 32: return "BF16";   case UINT32_MAX: return "not stated";
    }
    return "other";
}

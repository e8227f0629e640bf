/*
 * gguf_parse.c — the validating GGUF v2/v3 parser behind gguf_open().
 *
 * The file is untrusted: every read goes through a cursor that checks the
 * bytes left first, every count is bounded by (bytes left / smallest
 * encoding of one element) before anything is allocated, and every size is
 * computed with overflow checks. A failure names the byte offset and, once
 * known, the key or tensor it concerns: "at offset 0x1f4: key 'x': ...".
 * On success the tables in gguf_file are complete and can be trusted.
 *
 * Circle with gguf.c, on purpose: gguf_open() calls this parser, which
 * decodes values with gguf.c's helpers (types, scalars, the arena) that
 * the accessors use too: one definition of every value type.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf_internal.h"
#include "quant/types.h"
#include "util/error.h"
#include "util/utf8.h"

/* The spec limits tensor names to 64 bytes (ggml keeps them in char[64]). */
#define GGUF_MAX_NAME 64

/* Smallest encodings of one element, invalid ones included (an empty key
 * is rejected later with its own message): the bound that keeps a hostile
 * count from turning into a huge allocation. */
#define MIN_KV_BYTES (8 + 4 + 1)                  /* empty key, u8 value */
#define MIN_TENSOR_INFO_BYTES (8 + 4 + 4 + 8)     /* empty name, no dims */
#define MIN_STRING_BYTES 8                        /* empty string */
#define MIN_ARRAY_BYTES (4 + 8)                   /* empty array */

typedef struct parser {
    gguf_file *file;
    gguf_priv *priv;
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    char ctx[160]; /* "key 'x': " or "tensor 3 'y': " — prefixes messages */
} parser;

static sw_status parse_fail(const parser *p, uint64_t offset, const char *fmt, ...)
    SW_PRINTF(3, 4);

static sw_status parse_fail(const parser *p, uint64_t offset, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sw_errorf(SW_ERR_FORMAT, "at offset 0x%" PRIx64 ": %s%s", offset, p->ctx, what);
}

static sw_status parse_oom(const parser *p, uint64_t n, size_t elem_bytes) {
    return sw_errorf(SW_ERR_OOM_HOST, "at offset 0x%" PRIx64 ": %sout of host memory "
                     "allocating %" PRIu64 " x %zu bytes for the GGUF tables",
                     p->pos, p->ctx, n, elem_bytes);
}

/* ---- cursor ---------------------------------------------------------------- */

static sw_status need(const parser *p, uint64_t n, const char *what) {
    uint64_t left = p->size - p->pos;
    if (n > left)
        return parse_fail(p, p->pos, "file truncated: %s needs %" PRIu64
                          " bytes but only %" PRIu64 " remain", what, n, left);
    return SW_OK;
}

static uint32_t le32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static uint64_t le64(const uint8_t *b) {
    return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32;
}

static sw_status read_u32(parser *p, const char *what, uint32_t *out) {
    SW_TRY(need(p, 4, what));
    *out = le32(p->base + p->pos);
    p->pos += 4;
    return SW_OK;
}

static sw_status read_u64(parser *p, const char *what, uint64_t *out) {
    SW_TRY(need(p, 8, what));
    *out = le64(p->base + p->pos);
    p->pos += 8;
    return SW_OK;
}

/* A length-prefixed string; the bytes stay in the mapping. */
static sw_status read_str(parser *p, const char *what, gguf_str *out) {
    char len_what[64];
    snprintf(len_what, sizeof len_what, "%s length", what);
    SW_TRY(read_u64(p, len_what, &out->len));
    SW_TRY(need(p, out->len, what));
    out->ptr = (const char *)p->base + p->pos;
    p->pos += out->len;
    return SW_OK;
}

/* ---- strings ----------------------------------------------------------------- */

static sw_status check_utf8(const parser *p, gguf_str s, const char *what) {
    const uint8_t *b = (const uint8_t *)s.ptr;
    uint64_t ok = utf8_valid_prefix(b, s.len);
    if (ok != s.len)
        return parse_fail(p, (uint64_t)(b - p->base) + ok,
                          "%s is not valid UTF-8 (byte 0x%02x)", what, b[ok]);
    return SW_OK;
}

/* Keys and tensor names end up in messages and lookups: besides valid
 * UTF-8 they must be non-empty and free of control characters (a newline
 * would break one-line error messages; a NUL would cut the C string). */
static sw_status check_name(const parser *p, gguf_str s, const char *what) {
    const uint8_t *b = (const uint8_t *)s.ptr;
    if (s.len == 0)
        return parse_fail(p, (uint64_t)(b - p->base) - 8, "%s is empty", what);
    SW_TRY(check_utf8(p, s, what));
    for (uint64_t i = 0; i < s.len; i++)
        if (b[i] < 0x20 || b[i] == 0x7F)
            return parse_fail(p, (uint64_t)(b - p->base) + i,
                              "%s contains control character 0x%02x", what, b[i]);
    return SW_OK;
}

/* ---- metadata values ----------------------------------------------------- */

static sw_status parse_value(parser *p, uint32_t type, gguf_value *v, unsigned level);

static sw_status parse_scalar(parser *p, uint32_t type, gguf_value *v) {
    size_t n = gguf_vtype_size(type);
    SW_TRY(need(p, n, gguf_vtype_name(type)));
    const uint8_t *b = p->base + p->pos;
    if (type == GGUF_VT_BOOL && b[0] > 1)
        return parse_fail(p, p->pos, "bool value %u is neither 0 nor 1", b[0]);
    gguf_decode_scalar(type, b, v);
    p->pos += n;
    return SW_OK;
}

/* Scalar elements stay in the mapping; only bools need a look at each. */
static sw_status parse_scalar_elems(parser *p, gguf_value *v) {
    size_t elem_bytes = gguf_vtype_size(v->arr.elem_type);
    const uint8_t *raw = p->base + p->pos;
    if (v->arr.elem_type == GGUF_VT_BOOL)
        for (uint64_t i = 0; i < v->arr.n; i++)
            if (raw[i] > 1)
                return parse_fail(p, p->pos + i, "bool array element %" PRIu64
                                  " is %u, neither 0 nor 1", i, raw[i]);
    v->arr.raw = raw;
    p->pos += v->arr.n * elem_bytes;
    return SW_OK;
}

static sw_status parse_array(parser *p, gguf_value *v, unsigned level) {
    uint64_t type_at = p->pos;
    uint32_t et;
    SW_TRY(read_u32(p, "array element type", &et));
    if (et >= GGUF_VT_COUNT)
        return parse_fail(p, type_at, "unknown array element type %" PRIu32, et);
    if (et == GGUF_VT_ARRAY && level >= GGUF_MAX_DEPTH)
        return parse_fail(p, type_at, "arrays nested deeper than %d levels", GGUF_MAX_DEPTH);
    uint64_t count_at = p->pos;
    SW_TRY(read_u64(p, "array length", &v->arr.n));
    v->arr.elem_type = et;
    size_t elem_bytes = gguf_vtype_size(et);
    uint64_t min = elem_bytes ? elem_bytes
                              : (et == GGUF_VT_STRING ? MIN_STRING_BYTES : MIN_ARRAY_BYTES);
    uint64_t left = p->size - p->pos;
    if (v->arr.n > left / min)
        return parse_fail(p, count_at, "array length %" PRIu64 " does not fit: the %" PRIu64
                          " bytes left hold at most %" PRIu64 " %s elements (file "
                          "truncated or length corrupt)", v->arr.n, left, left / min,
                          gguf_vtype_name(et));
    if (elem_bytes != 0)
        return parse_scalar_elems(p, v);
    if (v->arr.n == 0)
        return SW_OK;
    v->arr.items = gguf_arena_alloc(p->priv, v->arr.n, sizeof *v->arr.items);
    if (v->arr.items == NULL)
        return parse_oom(p, v->arr.n, sizeof *v->arr.items);
    for (uint64_t i = 0; i < v->arr.n; i++)
        SW_TRY(parse_value(p, et, &v->arr.items[i], level + 1));
    return SW_OK;
}

/* `level` counts array nesting: a key's own array is level 1. */
static sw_status parse_value(parser *p, uint32_t type, gguf_value *v, unsigned level) {
    v->type = type;
    if (type == GGUF_VT_STRING) {
        SW_TRY(read_str(p, "string", &v->s));
        return check_utf8(p, v->s, "string");
    }
    if (type == GGUF_VT_ARRAY)
        return parse_array(p, v, level);
    return parse_scalar(p, type, v);
}

static void set_ctx_str(parser *p, const char *kind, gguf_str name) {
    int len = name.len > 96 ? 96 : (int)name.len;
    snprintf(p->ctx, sizeof p->ctx, "%s '%.*s%s': ", kind, len, name.ptr,
             name.len > 96 ? "..." : "");
}

static sw_status parse_kv(parser *p, uint64_t index, gguf_kv *kv) {
    snprintf(p->ctx, sizeof p->ctx, "metadata entry %" PRIu64 ": ", index);
    kv->file_offset = p->pos;
    SW_TRY(read_str(p, "key", &kv->key));
    SW_TRY(check_name(p, kv->key, "key"));
    set_ctx_str(p, "key", kv->key);
    uint64_t type_at = p->pos;
    uint32_t type;
    SW_TRY(read_u32(p, "value type", &type));
    if (type >= GGUF_VT_COUNT)
        return parse_fail(p, type_at, "unknown value type %" PRIu32, type);
    SW_TRY(parse_value(p, type, &kv->value, 1));
    p->ctx[0] = '\0';
    return SW_OK;
}

/* ---- header ------------------------------------------------------------------ */

static sw_status parse_magic_version(parser *p) {
    if (p->size == 0)
        return parse_fail(p, 0, "file is empty");
    if (p->size < 4 && memcmp(p->base, "GGUF", (size_t)p->size) == 0)
        return parse_fail(p, 0, "file truncated: %" PRIu64 " bytes, too short for a "
                          "GGUF header", p->size);
    if (p->size < 4 || memcmp(p->base, "GGUF", 4) != 0)
        return parse_fail(p, 0, "not a GGUF file (bad magic: expected \"GGUF\")");
    p->pos = 4;
    uint32_t version;
    SW_TRY(read_u32(p, "version", &version));
    /* A big-endian writer stores 3 as 00 00 00 03: the low half reads 0. */
    if (version != 0 && (version & 0xFFFFu) == 0)
        return parse_fail(p, 4, "big-endian GGUF is not supported (version field "
                          "0x%08" PRIx32 "); convert the file to little-endian", version);
    if (version == 1)
        return parse_fail(p, 4, "unsupported GGUF version 1 (only versions 2 and 3 "
                          "are supported); re-convert the model with a current converter");
    if (version != 2 && version != 3)
        return parse_fail(p, 4, "unsupported GGUF version %" PRIu32 " (only versions "
                          "2 and 3 are supported)", version);
    p->file->version = version;
    return SW_OK;
}

static sw_status parse_header(parser *p) {
    SW_TRY(parse_magic_version(p));
    SW_TRY(read_u64(p, "tensor count", &p->file->n_tensors));
    SW_TRY(read_u64(p, "metadata count", &p->file->n_kv));
    uint64_t left = p->size - p->pos;
    uint64_t n_kv = p->file->n_kv, n_tensors = p->file->n_tensors;
    if (n_kv > left / MIN_KV_BYTES)
        return parse_fail(p, 16, "metadata count %" PRIu64 " does not fit: the %" PRIu64
                          " bytes left hold at most %" PRIu64 " entries (file truncated "
                          "or count corrupt)", n_kv, left, left / MIN_KV_BYTES);
    left -= n_kv * MIN_KV_BYTES;
    if (n_tensors > left / MIN_TENSOR_INFO_BYTES)
        return parse_fail(p, 8, "tensor count %" PRIu64 " does not fit: the %" PRIu64
                          " bytes left after the metadata hold at most %" PRIu64
                          " tensor infos (file truncated or count corrupt)", n_tensors,
                          left, left / MIN_TENSOR_INFO_BYTES);
    return SW_OK;
}

/* ---- sorted indexes, duplicates, alignment ----------------------------------- */

int gguf_key_cmp(const char *a, size_t a_len, const char *b, size_t b_len) {
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (c != 0)
        return c;
    return a_len < b_len ? -1 : a_len > b_len;
}

static int cmp_kv_ptr(const void *x, const void *y) {
    const gguf_kv *a = *(const gguf_kv *const *)x, *b = *(const gguf_kv *const *)y;
    return gguf_key_cmp(a->key.ptr, (size_t)a->key.len, b->key.ptr, (size_t)b->key.len);
}

static int cmp_tensor_name(const void *x, const void *y) {
    const gguf_tensor *a = *(const gguf_tensor *const *)x;
    const gguf_tensor *b = *(const gguf_tensor *const *)y;
    return strcmp(a->name, b->name);
}

static int cmp_tensor_offset(const void *x, const void *y) {
    const gguf_tensor *a = *(const gguf_tensor *const *)x;
    const gguf_tensor *b = *(const gguf_tensor *const *)y;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Sorted pointers to n elements of `elem_bytes` each, from the arena. */
static const void **make_index(parser *p, const void *elems, uint64_t n, size_t elem_bytes,
                               int (*cmp)(const void *, const void *)) {
    const void **index = gguf_arena_alloc(p->priv, n, sizeof *index);
    if (index == NULL)
        return NULL;
    for (uint64_t i = 0; i < n; i++)
        index[i] = (const uint8_t *)elems + i * elem_bytes;
    qsort(index, (size_t)n, sizeof *index, cmp);
    return index;
}

static sw_status index_keys(parser *p) {
    gguf_file *f = p->file;
    if (f->n_kv == 0)
        return SW_OK;
    p->priv->kv_by_key = (const gguf_kv **)make_index(p, f->kv, f->n_kv, sizeof *f->kv,
                                                      cmp_kv_ptr);
    if (p->priv->kv_by_key == NULL)
        return parse_oom(p, f->n_kv, sizeof(void *));
    for (uint64_t i = 1; i < f->n_kv; i++) {
        const gguf_kv *a = p->priv->kv_by_key[i - 1], *b = p->priv->kv_by_key[i];
        if (cmp_kv_ptr(&a, &b) != 0)
            continue;
        const gguf_kv *first = a->file_offset < b->file_offset ? a : b;
        const gguf_kv *dup = first == a ? b : a;
        set_ctx_str(p, "key", dup->key);
        return parse_fail(p, dup->file_offset, "duplicate key (first at offset 0x%" PRIx64
                          ")", first->file_offset);
    }
    return SW_OK;
}

/* general.alignment: u32, a power of two (ggml pads with a bit mask) and,
 * as the spec requires, a multiple of 8. */
static sw_status read_alignment(parser *p) {
    gguf_file *f = p->file;
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (kv == NULL)
        return SW_OK;
    set_ctx_str(p, "key", kv->key);
    if (kv->value.type != GGUF_VT_U32)
        return parse_fail(p, kv->file_offset, "alignment has type %s, expected u32",
                          gguf_vtype_name(kv->value.type));
    uint64_t a = kv->value.u;
    if (a == 0 || (a & (a - 1)) != 0 || a % 8 != 0)
        return parse_fail(p, kv->file_offset, "alignment %" PRIu64 " is not a power of "
                          "two and a multiple of 8", a);
    f->alignment = (uint32_t)a;
    p->ctx[0] = '\0';
    return SW_OK;
}

/* ---- tensor infos ------------------------------------------------------------ */

static sw_status parse_tensor_shape(parser *p, gguf_tensor *t) {
    uint64_t at = p->pos;
    SW_TRY(read_u32(p, "dimension count", &t->n_dims));
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return parse_fail(p, at, "%" PRIu32 " dimensions, expected 1 to %d", t->n_dims,
                          GGUF_MAX_DIMS);
    uint64_t n = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        at = p->pos;
        SW_TRY(read_u64(p, "dimension", &t->ne[d]));
        if (t->ne[d] == 0)
            return parse_fail(p, at, "dimension %" PRIu32 " is zero", d);
        /* ggml keeps shapes in int64_t: the element count must fit one. */
        if (t->ne[d] > (uint64_t)INT64_MAX / n)
            return parse_fail(p, at, "dimension %" PRIu32 " (%" PRIu64 ") makes the "
                              "element count overflow", d, t->ne[d]);
        n *= t->ne[d];
    }
    t->n_elements = n;
    return SW_OK;
}

static sw_status check_tensor_type(parser *p, gguf_tensor *t, uint64_t type_at) {
    const type_traits *tr = type_get_traits(t->type);
    if (tr == NULL)
        return parse_fail(p, type_at, "unknown tensor type %" PRIu32, t->type);
    if (t->ne[0] % tr->block_elems != 0)
        return parse_fail(p, type_at, "type %s packs %" PRIu32 " elements per block but "
                          "the row length ne[0] is %" PRIu64, tr->name, tr->block_elems,
                          t->ne[0]);
    uint64_t row_bytes, n_rows = t->n_elements / t->ne[0];
    if (!type_row_bytes(t->type, t->ne[0], &row_bytes) || n_rows > UINT64_MAX / row_bytes)
        return parse_fail(p, type_at, "data size overflows (type %s, %" PRIu64
                          " elements)", tr->name, t->n_elements);
    t->n_bytes = row_bytes * n_rows;
    return SW_OK;
}

static sw_status parse_tensor_info(parser *p, uint64_t index, gguf_tensor *t) {
    snprintf(p->ctx, sizeof p->ctx, "tensor %" PRIu64 ": ", index);
    t->info_offset = p->pos;
    gguf_str name;
    SW_TRY(read_str(p, "tensor name", &name));
    SW_TRY(check_name(p, name, "tensor name"));
    if (name.len > GGUF_MAX_NAME)
        return parse_fail(p, t->info_offset, "tensor name is %" PRIu64 " bytes long, "
                          "the limit is %d", name.len, GGUF_MAX_NAME);
    char *copy = gguf_arena_alloc(p->priv, name.len + 1, 1);
    if (copy == NULL)
        return parse_oom(p, name.len + 1, 1);
    memcpy(copy, name.ptr, (size_t)name.len);
    t->name = copy;
    snprintf(p->ctx, sizeof p->ctx, "tensor %" PRIu64 " '%s': ", index, copy);
    SW_TRY(parse_tensor_shape(p, t));
    uint64_t at = p->pos;
    SW_TRY(read_u32(p, "tensor type", &t->type));
    SW_TRY(check_tensor_type(p, t, at));
    at = p->pos;
    SW_TRY(read_u64(p, "tensor data offset", &t->offset));
    if (t->offset % p->file->alignment != 0)
        return parse_fail(p, at, "data offset 0x%" PRIx64 " is not a multiple of the "
                          "alignment %" PRIu32, t->offset, p->file->alignment);
    p->ctx[0] = '\0';
    return SW_OK;
}

/* ---- data section ------------------------------------------------------------ */

/* The data section starts at the aligned end of the tensor infos. With no
 * tensors that may lie past the end of the file; nothing reads it then. */
static sw_status place_tensor_data(parser *p) {
    gguf_file *f = p->file;
    uint64_t pad = (f->alignment - p->pos % f->alignment) % f->alignment;
    f->data_offset = p->pos + pad; /* pos <= size and pad < 2^32: no overflow */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t avail = f->data_offset <= f->size ? f->size - f->data_offset : 0;
        if (t->offset > avail || t->n_bytes > avail - t->offset) {
            snprintf(p->ctx, sizeof p->ctx, "tensor %" PRIu64 " '%s': ", i, t->name);
            return parse_fail(p, t->info_offset, "data (offset 0x%" PRIx64 " in the data "
                              "section at 0x%" PRIx64 ", %" PRIu64 " bytes) runs past the "
                              "end of the file (%" PRIu64 " bytes; truncated?)", t->offset,
                              f->data_offset, t->n_bytes, f->size);
        }
        t->data = f->map + f->data_offset + t->offset;
    }
    return SW_OK;
}

static sw_status check_overlaps(parser *p) {
    gguf_file *f = p->file;
    const gguf_tensor **by_offset = (const gguf_tensor **)make_index(
        p, f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_offset);
    if (by_offset == NULL)
        return parse_oom(p, f->n_tensors, sizeof(void *));
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        const gguf_tensor *a = by_offset[i - 1], *b = by_offset[i];
        if (a->offset + a->n_bytes <= b->offset) /* both inside the file: no overflow */
            continue;
        snprintf(p->ctx, sizeof p->ctx, "tensor '%s': ", b->name);
        return parse_fail(p, b->info_offset, "data [0x%" PRIx64 ", 0x%" PRIx64 ") overlaps "
                          "tensor '%s' [0x%" PRIx64 ", 0x%" PRIx64 ")", b->offset,
                          b->offset + b->n_bytes, a->name, a->offset, a->offset + a->n_bytes);
    }
    return SW_OK;
}

static sw_status index_tensors(parser *p) {
    gguf_file *f = p->file;
    p->priv->tensor_by_name = (const gguf_tensor **)make_index(
        p, f->tensors, f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
    if (p->priv->tensor_by_name == NULL)
        return parse_oom(p, f->n_tensors, sizeof(void *));
    for (uint64_t i = 1; i < f->n_tensors; i++) {
        const gguf_tensor *a = p->priv->tensor_by_name[i - 1];
        const gguf_tensor *b = p->priv->tensor_by_name[i];
        if (strcmp(a->name, b->name) != 0)
            continue;
        const gguf_tensor *first = a->info_offset < b->info_offset ? a : b;
        const gguf_tensor *dup = first == a ? b : a;
        snprintf(p->ctx, sizeof p->ctx, "tensor '%s': ", dup->name);
        return parse_fail(p, dup->info_offset, "duplicate tensor name (first at offset "
                          "0x%" PRIx64 ")", first->info_offset);
    }
    return SW_OK;
}

/* ---- entry ---------------------------------------------------------------------- */

static sw_status parse_tables(parser *p) {
    gguf_file *f = p->file;
    SW_TRY(parse_header(p));
    if (f->n_kv > 0) {
        f->kv = gguf_arena_alloc(p->priv, f->n_kv, sizeof *f->kv);
        if (f->kv == NULL)
            return parse_oom(p, f->n_kv, sizeof *f->kv);
    }
    for (uint64_t i = 0; i < f->n_kv; i++)
        SW_TRY(parse_kv(p, i, &f->kv[i]));
    SW_TRY(index_keys(p));
    SW_TRY(read_alignment(p));
    if (f->n_tensors > 0) {
        f->tensors = gguf_arena_alloc(p->priv, f->n_tensors, sizeof *f->tensors);
        if (f->tensors == NULL)
            return parse_oom(p, f->n_tensors, sizeof *f->tensors);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++)
        SW_TRY(parse_tensor_info(p, i, &f->tensors[i]));
    SW_TRY(place_tensor_data(p));
    if (f->n_tensors == 0)
        return SW_OK;
    SW_TRY(check_overlaps(p));
    return index_tensors(p);
}

sw_status gguf_parse(gguf_file *file) {
    parser p = {.file = file, .priv = file->priv, .base = file->map, .size = file->size};
    return parse_tables(&p);
}

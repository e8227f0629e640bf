/*
 * safetensors_parse.c — the validating parser behind st_open().
 *
 * Order: header length → strict UTF-8 of the whole header → strict JSON
 * (jsonu_parse) → a scan of the header text itself → every entry → the
 * layout of the data section → the name and key indexes.
 *
 * The text scan exists because json-c silently keeps only the last of
 * duplicate keys, cuts keys at a \u0000 and turns unpaired UTF-16
 * surrogates into U+FFFD; it also accepts raw control characters inside
 * strings. The scan walks the root object and its member objects in step
 * with json-c's (insertion-ordered) members, so a key json-c dropped is
 * found and named. Messages: "<file>: tensor 'name': problem; what to do".
 *
 * Circle with safetensors.c, on purpose: st_open() calls this parser,
 * which names dtypes with safetensors.c's table, the one the accessors
 * use too.
 * On success every tensor lies inside the data section, the tensors tile
 * it exactly and each one's data is aligned to its element size.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json_util.h"
#include "format/safetensors_internal.h"
#include "util/error.h"
#include "util/utf8.h"

/* Name bytes quoted in a message before "...". */
#define ST_QUOTE_BYTES 96
/* Scan levels: json-c refuses anything nested deeper than JSONU_MAX_DEPTH. */
#define SCAN_MAX_LEVELS (JSONU_MAX_DEPTH + 2)

typedef struct parser {
    st_file *file;
    st_priv *priv;
    const char *text;      /* the JSON header, map[8 .. 8 + text_len) */
    size_t text_len;
    uint64_t data_bytes;   /* size of the data section */
    json_object *root;
    size_t pool_used, pool_cap;
    char ctx[ST_QUOTE_BYTES + 32]; /* "tensor 'x'" — prefixes messages */
} parser;

static sw_status parse_fail(const parser *p, const char *fmt, ...) SW_PRINTF(2, 3);

static sw_status parse_fail(const parser *p, const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sw_errorf(SW_ERR_FORMAT, "%s: %s%s%s", p->file->path, p->ctx,
                     p->ctx[0] ? ": " : "", what);
}

static sw_status parse_oom(const parser *p, uint64_t n, size_t elem_bytes) {
    return sw_errorf(SW_ERR_OOM_HOST, "%s: out of host memory allocating %" PRIu64
                     " x %zu bytes for the safetensors tables", p->file->path, n,
                     elem_bytes);
}

/* How many bytes of name[0..len) to quote in a message: all of it, or at
 * most ST_QUOTE_BYTES cut at a UTF-8 boundary. */
static int quote_len(const char *name, size_t len) {
    size_t cut = len;
    if (cut > ST_QUOTE_BYTES) {
        cut = ST_QUOTE_BYTES;
        while (cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80)
            cut--;
    }
    return (int)cut;
}

/* Sets the message prefix to "KIND 'name'" (a long name is cut, "..."). */
static void set_ctx(parser *p, const char *kind, const char *name) {
    size_t len = strlen(name);
    int cut = quote_len(name, len);
    snprintf(p->ctx, sizeof p->ctx, "%s '%.*s%s'", kind, cut, name,
             (size_t)cut < len ? "..." : "");
}

/* Copies up to 64 bytes of s[0..len) into buf for a message, with '?' for
 * control characters, so a hostile string cannot break the message line. */
static const char *printable(const char *s, size_t len, char buf[72]) {
    size_t n = len > 64 ? 64 : len, k;
    for (k = 0; k < n; k++)
        buf[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7F ? '?' : s[k];
    memcpy(buf + k, len > n ? "...\0" : "\0", len > n ? 4 : 1);
    return buf;
}

/* ---- header length and UTF-8 ------------------------------------------------ */

static uint64_t le64(const uint8_t *b) {
    uint64_t x = 0;
    for (int k = 0; k < 8; k++)
        x |= (uint64_t)b[k] << (8 * k);
    return x;
}

static sw_status read_header_length(parser *p) {
    st_file *f = p->file;
    if (f->size < 8)
        return parse_fail(p, "file is %" PRIu64 " bytes, too short for the 8-byte header "
                          "length (truncated, or not a safetensors file)", f->size);
    uint64_t n = le64(f->map);
    if (n > ST_MAX_HEADER_BYTES)
        return parse_fail(p, "header length %" PRIu64 " (the first 8 bytes) is more than "
                          "the %" PRIu64 " MiB limit: corrupt, or not a safetensors file",
                          n, ST_MAX_HEADER_BYTES >> 20);
    if (n > f->size - 8)
        return parse_fail(p, "header length %" PRIu64 " runs past the end of the file "
                          "(%" PRIu64 " bytes follow the length field; truncated?)", n,
                          f->size - 8);
    if (n < 2)
        return parse_fail(p, "header length %" PRIu64 " is too small for a JSON object; "
                          "not a safetensors file", n);
    p->text = (const char *)f->map + 8;
    p->text_len = (size_t)n;
    f->data_offset = 8 + n;
    p->data_bytes = f->size - f->data_offset;
    return SW_OK;
}

static sw_status parse_json(parser *p) {
    const uint8_t *b = (const uint8_t *)p->text;
    size_t ok = utf8_valid_prefix(b, p->text_len);
    if (ok != p->text_len)
        return parse_fail(p, "header byte at file offset %zu (0x%02x) is not valid UTF-8; "
                          "the header must be UTF-8 JSON", 8 + ok, b[ok]);
    char what[1200];
    snprintf(what, sizeof what, "%s: JSON header (starting at file offset 8)",
             p->file->path);
    SW_TRY(jsonu_parse(p->text, p->text_len, what, &p->root));
    if (!json_object_is_type(p->root, json_type_object))
        return parse_fail(p, "the JSON header is a JSON %s, expected an object mapping tensor "
                          "names to entries", json_type_to_name(json_object_get_type(p->root)));
    return SW_OK;
}

/* ---- the header text scan ---------------------------------------------------- */

enum { CH_CONTROL = -1, CH_NUL = -2, CH_SURROGATE = -3, CH_ESCAPE = -4 };

static bool hex4(const char *s, size_t n, size_t i, uint32_t *out) {
    uint32_t v = 0;
    if (i > n || n - i < 4)
        return false;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return true;
}

static int utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6), out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12), out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18), out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F)), out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes one character of a JSON string body s[*i..n) into out (UTF-8)
 * and advances *i. Returns the byte count, or a CH_* code for what the
 * format cannot hold: a raw control character, \u0000, an unpaired
 * surrogate or a malformed escape. */
static int next_char(const char *s, size_t n, size_t *i, uint8_t out[4]) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    uint8_t c = (uint8_t)s[*i];
    uint32_t cp, lo;
    if (c != '\\') {
        out[0] = c;
        *i += 1;
        return c < 0x20 ? CH_CONTROL : 1;
    }
    if (n - *i < 2)
        return CH_ESCAPE;
    const char *k = s[*i + 1] != '\0' ? strchr(from, s[*i + 1]) : NULL;
    if (k != NULL) {
        out[0] = (uint8_t)to[k - from];
        *i += 2;
        return 1;
    }
    if (s[*i + 1] != 'u' || !hex4(s, n, *i + 2, &cp))
        return CH_ESCAPE;
    *i += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return CH_SURROGATE;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (n - *i < 2 || s[*i] != '\\' || s[*i + 1] != 'u' || !hex4(s, n, *i + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return CH_SURROGATE;
        *i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return cp == 0 ? CH_NUL : utf8_encode(cp, out);
}

/* Checks the string literal starting at the quote text[*i]; on return *i
 * is past the closing quote and the body is text[*body .. *i - 1). */
static sw_status scan_string(parser *p, size_t *i, size_t *body) {
    const char *s = p->text;
    size_t n = p->text_len, at = *i + 1;
    uint8_t out[4];
    *body = at;
    while (at < n && s[at] != '"') {
        size_t start = at;
        int r = next_char(s, n, &at, out);
        if (r > 0)
            continue;
        return parse_fail(p, "the string at file offset %zu %s", 8 + start,
                          r == CH_CONTROL ? "holds a raw control character (JSON needs "
                                            "it escaped)"
                          : r == CH_NUL ? "holds \\u0000 (a NUL), which names and "
                                          "metadata cannot hold"
                          : r == CH_SURROGATE ? "holds an unpaired UTF-16 surrogate escape"
                                              : "holds a malformed escape");
    }
    if (at >= n)
        return parse_fail(p, "the string at file offset %zu is not terminated", 8 + *i);
    *i = at + 1;
    return SW_OK;
}

/* Whether the string body raw[0..n) (already checked) decodes to key. */
static bool raw_equals(const char *raw, size_t n, const char *key) {
    size_t i = 0, k = 0;
    uint8_t out[4];
    while (i < n) {
        int r = next_char(raw, n, &i, out);
        if (r <= 0)
            return false;
        for (int j = 0; j < r; j++) /* out[j] != 0: stops at the end of key */
            if ((uint8_t)key[k++] != out[j])
                return false;
    }
    return key[k] == '\0';
}

/* One open container during the scan. An object is mirrored when it is the
 * root or the value of a root member: its keys are matched, in order,
 * against the members json-c kept. */
typedef struct scan_level {
    char kind;                           /* '{' or '[' */
    bool expect_key;
    bool mirrored;
    json_object *obj;                    /* the json-c object when mirrored */
    struct json_object_iterator it, end; /* json-c members not matched yet */
    const char *key;                     /* json-c name of the current member */
    json_object *value;                  /* and its value */
} scan_level;

/* Tensor names end up in messages and lookups: non-empty, bounded, and
 * free of control characters (UTF-8 validity and the absence of NUL were
 * checked on the text). `at` is the key's file offset. */
static sw_status check_name(parser *p, const char *name, size_t at) {
    size_t len = strlen(name);
    if (len == 0)
        return parse_fail(p, "a tensor name is empty (key at file offset %zu); every "
                          "tensor needs a name", at);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7F)
            return parse_fail(p, "the tensor name at file offset %zu contains control "
                              "character 0x%02x", at, (unsigned char)name[i]);
    if (len > ST_MAX_NAME_BYTES) {
        set_ctx(p, "tensor", name);
        return parse_fail(p, "name is %zu bytes long, the limit is %d", len,
                          ST_MAX_NAME_BYTES);
    }
    return SW_OK;
}

/* Whether the (checked) string body raw[0..n) decodes to a key of obj.
 * Decoding never lengthens a string, so n + 1 bytes hold it. */
static bool is_member(json_object *obj, const char *raw, size_t n, bool *oom) {
    char *key = malloc(n + 1);
    size_t i = 0, k = 0;
    uint8_t out[4];
    *oom = key == NULL;
    if (key == NULL)
        return false;
    while (i < n) {
        int r = next_char(raw, n, &i, out);
        for (int j = 0; j < r; j++)
            key[k++] = (char)out[j];
    }
    key[k] = '\0';
    bool found = json_object_object_get_ex(obj, key, NULL);
    free(key);
    return found;
}

/* The key raw[0..n) at file offset `at` is not the next member json-c
 * kept: json-c dropped it as a repeat of an earlier key (it must then be
 * one of the keys kept; anything else would be a bug in the scan). */
static sw_status duplicate_key(parser *p, const scan_level *lv, int depth, const char *raw,
                               size_t n, size_t at) {
    int cut = quote_len(raw, n);
    const char *more = (size_t)cut < n ? "..." : "";
    bool oom;
    if (!is_member(lv[depth - 1].obj, raw, n, &oom))
        return oom ? parse_oom(p, n + 1, 1)
                   : parse_fail(p, "the header text and its JSON parse disagree at file "
                                "offset %zu; the header is corrupt", at);
    if (depth == 1)
        return parse_fail(p, "name \"%.*s%s\" (key at file offset %zu) appears twice in "
                          "the header; tensor names (and __metadata__) must be unique", cut, raw,
                          more, at);
    if (strcmp(lv[0].key, "__metadata__") == 0)
        snprintf(p->ctx, sizeof p->ctx, "__metadata__");
    else
        set_ctx(p, "tensor", lv[0].key);
    return parse_fail(p, "key \"%.*s%s\" (file offset %zu) appears twice; each key may "
                      "appear once", cut, raw, more, at);
}

/* Whether json-c turned an escaped surrogate pair of the key raw[0..n)
 * into U+FFFD: json-c 0.16 does so for some valid pairs (\ud836\ude00,
 * U+1DA00, for one), so its key no longer matches the text. */
static bool pair_mangled(const char *raw, size_t n, const char *key) {
    bool pair = false;
    for (size_t i = 0; i + 2 < n && !pair; i++) {
        if (raw[i] != '\\')
            continue;
        pair = raw[i + 1] == 'u' && (raw[i + 2] == 'd' || raw[i + 2] == 'D');
        i++; /* past the escaped character */
    }
    return pair && strstr(key, "\xEF\xBF\xBD") != NULL;
}

static sw_status match_key(parser *p, scan_level *lv, int depth, const char *raw, size_t n,
                           size_t at) {
    scan_level *l = &lv[depth - 1];
    const bool at_end = json_object_iter_equal(&l->it, &l->end);
    if (at_end || !raw_equals(raw, n, json_object_iter_peek_name(&l->it))) {
        if (!at_end && pair_mangled(raw, n, json_object_iter_peek_name(&l->it)))
            return parse_fail(p, "the key at file offset %zu escapes a character as a "
                              "UTF-16 surrogate pair that the JSON library (json-c) decodes "
                              "as U+FFFD; write the character as UTF-8 instead", at);
        return duplicate_key(p, lv, depth, raw, n, at);
    }
    l->key = json_object_iter_peek_name(&l->it);
    l->value = json_object_iter_peek_value(&l->it);
    json_object_iter_next(&l->it);
    if (depth == 1 && strcmp(l->key, "__metadata__") != 0)
        return check_name(p, l->key, at);
    return SW_OK;
}

static sw_status scan_open(parser *p, scan_level *lv, int *depth, char kind, size_t at,
                           bool members) {
    if (*depth == SCAN_MAX_LEVELS)
        return parse_fail(p, "the header nests deeper than %d levels (file offset %zu)",
                          SCAN_MAX_LEVELS, 8 + at);
    json_object *mirror = *depth == 0 ? p->root
                        : *depth == 1 && members && lv[0].mirrored ? lv[0].value : NULL;
    scan_level *l = &lv[(*depth)++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->expect_key = kind == '{';
    if (kind == '{' && mirror != NULL && json_object_is_type(mirror, json_type_object)) {
        l->mirrored = true;
        l->obj = mirror;
        l->it = json_object_iter_begin(mirror);
        l->end = json_object_iter_end(mirror);
    }
    return SW_OK;
}

static sw_status scan_close(parser *p, scan_level *lv, int *depth, size_t at) {
    if (*depth == 0)
        return parse_fail(p, "unbalanced bracket at file offset %zu", 8 + at);
    const scan_level *l = &lv[--(*depth)];
    if (l->mirrored && !json_object_iter_equal(&l->it, &l->end))
        return parse_fail(p, "the header text and its JSON parse disagree at file offset "
                          "%zu; the header is corrupt", 8 + at);
    return SW_OK;
}

/* Walks the header text (valid JSON by now): every string is checked, and
 * the keys of the root (and, when `members`, of its member objects) are
 * matched against what json-c kept, which finds duplicates and checks
 * tensor names. */
static sw_status scan_text(parser *p, bool members) {
    scan_level lv[SCAN_MAX_LEVELS];
    int depth = 0;
    size_t i = 0;
    while (i < p->text_len) {
        char c = p->text[i];
        if (c == '"') {
            size_t at = i, body;
            SW_TRY(scan_string(p, &i, &body));
            scan_level *l = depth > 0 ? &lv[depth - 1] : NULL;
            if (l != NULL && l->kind == '{' && l->expect_key) {
                l->expect_key = false;
                if (l->mirrored)
                    SW_TRY(match_key(p, lv, depth, p->text + body, i - 1 - body, 8 + at));
            }
            continue;
        }
        if (c == '{' || c == '[')
            SW_TRY(scan_open(p, lv, &depth, c, i, members));
        else if (c == '}' || c == ']')
            SW_TRY(scan_close(p, lv, &depth, i));
        else if (c == ',' && depth > 0 && lv[depth - 1].kind == '{')
            lv[depth - 1].expect_key = true;
        i++;
    }
    return SW_OK;
}

/* Root keys first: a repeated tensor name makes json-c pair the first
 * occurrence's position with the last one's value, so member objects can
 * only be compared once the root is known to be free of repeats. */
static sw_status scan_header(parser *p) {
    SW_TRY(scan_text(p, false));
    return scan_text(p, true);
}

/* ---- entries ------------------------------------------------------------------ */

static const char *json_kind(const json_object *v) {
    return json_type_to_name(json_object_get_type(v));
}

/* Element k of arr, which must be an integer in [0, 2^63). */
static sw_status get_u63(parser *p, json_object *arr, size_t k, const char *what,
                         uint64_t *out) {
    json_object *v = json_object_array_get_idx(arr, k);
    if (json_object_is_type(v, json_type_double))
        return parse_fail(p, "%s[%zu] is the floating-point number %g, expected a "
                          "non-negative integer", what, k, json_object_get_double(v));
    if (!json_object_is_type(v, json_type_int))
        return parse_fail(p, "%s[%zu] is a JSON %s, expected a non-negative integer",
                          what, k, json_kind(v));
    int64_t x = json_object_get_int64(v); /* saturates at INT64_MAX */
    if (x < 0)
        return parse_fail(p, "%s[%zu] is negative (%" PRId64 ")", what, k, x);
    if (x == INT64_MAX)
        return parse_fail(p, "%s[%zu] is 2^63 or more, larger than any file", what, k);
    *out = (uint64_t)x;
    return SW_OK;
}

/* Fetches member `key` of an entry with a jsonu getter; absent is an error. */
static sw_status need_member(parser *p, sw_status st, const char *key) {
    if (st == SW_ERR_ARG)
        return parse_fail(p, "'%s' is missing or null", key);
    return st;
}

static sw_status parse_dtype(parser *p, json_object *entry, const char *what, st_tensor *t) {
    const char *s;
    size_t len;
    char buf[72];
    SW_TRY(need_member(p, jsonu_get_str(entry, "dtype", what, &s, &len), "dtype"));
    for (int k = 0; k < ST_DTYPE_COUNT; k++) {
        const char *name = st_dtype_name((st_dtype)k);
        if (strlen(name) == len && memcmp(name, s, len) == 0) {
            t->dtype = (st_dtype)k;
            return SW_OK;
        }
    }
    return parse_fail(p, "dtype \"%s\" is not one this reader knows (F64, F32, F16, BF16, "
                      "I64, I32, I16, I8, U8, U16, U32, U64, BOOL, F8_E4M3, F8_E5M2)",
                      printable(s, len, buf));
}

/* Elements are the product of the dimensions; a 0 makes it 0, but the
 * product of the others must still fit in int64 (code computing strides
 * multiplies them). Bytes must fit in uint64. */
static sw_status parse_shape(parser *p, json_object *entry, const char *what, st_tensor *t) {
    json_object *arr;
    SW_TRY(need_member(p, jsonu_get_arr(entry, "shape", what, &arr), "shape"));
    size_t n = json_object_array_length(arr);
    if (n > ST_MAX_DIMS)
        return parse_fail(p, "shape has %zu dimensions, at most %d are supported", n,
                          ST_MAX_DIMS);
    t->n_dims = (uint32_t)n;
    uint64_t count = 1;
    bool empty = false;
    for (size_t d = 0; d < n; d++) {
        SW_TRY(get_u63(p, arr, d, "shape", &t->shape[d]));
        if (t->shape[d] == 0) {
            empty = true;
            continue;
        }
        if (t->shape[d] > (uint64_t)INT64_MAX / count)
            return parse_fail(p, "shape[%zu] = %" PRIu64 " makes the element count "
                              "overflow (2^63 or more)", d, t->shape[d]);
        count *= t->shape[d];
    }
    size_t elem_bytes = st_dtype_size(t->dtype);
    if (count > UINT64_MAX / elem_bytes)
        return parse_fail(p, "%" PRIu64 " %s elements overflow a 64-bit byte count",
                          count, st_dtype_name(t->dtype));
    t->n_elements = empty ? 0 : count;
    t->n_bytes = t->n_elements * elem_bytes;
    return SW_OK;
}

static void format_shape(const st_tensor *t, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t d = 0; d < t->n_dims && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64, d ? ", " : "",
                                 t->shape[d]);
}

static sw_status parse_offsets(parser *p, json_object *entry, const char *what,
                               st_tensor *t) {
    json_object *arr;
    uint64_t begin, end;
    char shape[200];
    SW_TRY(need_member(p, jsonu_get_arr(entry, "data_offsets", what, &arr), "data_offsets"));
    size_t n = json_object_array_length(arr);
    if (n != 2)
        return parse_fail(p, "data_offsets has %zu entries, expected [begin, end]", n);
    SW_TRY(get_u63(p, arr, 0, "data_offsets", &begin));
    SW_TRY(get_u63(p, arr, 1, "data_offsets", &end));
    if (begin > end)
        return parse_fail(p, "data_offsets [%" PRIu64 ", %" PRIu64 "] are reversed "
                          "(begin > end)", begin, end);
    if (end > p->data_bytes)
        return parse_fail(p, "data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of "
                          "the data section (%" PRIu64 " bytes from file offset %" PRIu64
                          "; file truncated?)", begin, end, p->data_bytes,
                          p->file->data_offset);
    if (end - begin != t->n_bytes) {
        format_shape(t, shape, sizeof shape);
        return parse_fail(p, "data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64
                          " bytes but %s shape [%s] needs %" PRIu64, begin, end,
                          end - begin, st_dtype_name(t->dtype), shape, t->n_bytes);
    }
    t->offset = begin;
    return SW_OK;
}

static char *pool_copy(parser *p, const char *s, size_t len) {
    char *dst = p->priv->strings + p->pool_used;
    assert(len < p->pool_cap - p->pool_used);
    memcpy(dst, s, len);
    dst[len] = '\0';
    p->pool_used += len + 1;
    return dst;
}

static sw_status parse_entry(parser *p, const char *name, json_object *entry, st_tensor *t) {
    char what[sizeof p->ctx + 1100], buf[72];
    set_ctx(p, "tensor", name);
    snprintf(what, sizeof what, "%s: %s", p->file->path, p->ctx);
    if (!json_object_is_type(entry, json_type_object))
        return parse_fail(p, "entry is a JSON %s, expected an object with dtype, shape and "
                          "data_offsets", json_kind(entry));
    struct json_object_iterator it = json_object_iter_begin(entry);
    struct json_object_iterator end = json_object_iter_end(entry);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0)
            return parse_fail(p, "unexpected key \"%s\" (an entry holds exactly dtype, "
                              "shape and data_offsets)", printable(key, strlen(key), buf));
    }
    SW_TRY(parse_dtype(p, entry, what, t));
    SW_TRY(parse_shape(p, entry, what, t));
    SW_TRY(parse_offsets(p, entry, what, t));
    t->name = pool_copy(p, name, strlen(name));
    p->ctx[0] = '\0';
    return SW_OK;
}

static sw_status parse_meta(parser *p, json_object *meta) {
    st_file *f = p->file;
    char buf[72];
    snprintf(p->ctx, sizeof p->ctx, "__metadata__");
    if (!json_object_is_type(meta, json_type_object))
        return parse_fail(p, "is a JSON %s, expected an object of string values",
                          json_kind(meta));
    size_t n = (size_t)json_object_object_length(meta);
    f->meta_keys = calloc(n ? n : 1, sizeof *f->meta_keys);
    f->meta_values = calloc(n ? n : 1, sizeof *f->meta_values);
    if (f->meta_keys == NULL || f->meta_values == NULL)
        return parse_oom(p, n, 2 * sizeof(char *));
    struct json_object_iterator it = json_object_iter_begin(meta);
    struct json_object_iterator end = json_object_iter_end(meta);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        json_object *v = json_object_iter_peek_value(&it);
        if (!json_object_is_type(v, json_type_string))
            return parse_fail(p, "the value of \"%s\" is a JSON %s; safetensors metadata "
                              "maps strings to strings", printable(key, strlen(key), buf),
                              json_kind(v));
        f->meta_keys[f->n_meta] = pool_copy(p, key, strlen(key));
        f->meta_values[f->n_meta++] =
            pool_copy(p, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    }
    p->ctx[0] = '\0';
    return SW_OK;
}

/* Sizes the tensor array and the string pool from the parsed header. */
static sw_status alloc_tables(parser *p) {
    st_file *f = p->file;
    size_t bytes = 1;
    json_object_object_foreach(p->root, key, val) {
        bytes += strlen(key) + 1;
        if (strcmp(key, "__metadata__") != 0) {
            f->n_tensors++;
            continue;
        }
        if (!json_object_is_type(val, json_type_object))
            continue;
        json_object_object_foreach(val, mkey, mval) {
            bytes += strlen(mkey) + 1;
            if (json_object_is_type(mval, json_type_string))
                bytes += (size_t)json_object_get_string_len(mval) + 1;
        }
    }
    p->priv->strings = malloc(bytes);
    if (p->priv->strings == NULL)
        return parse_oom(p, bytes, 1);
    p->pool_cap = bytes;
    if (f->n_tensors == 0)
        return SW_OK;
    f->tensors = calloc((size_t)f->n_tensors, sizeof *f->tensors);
    if (f->tensors == NULL)
        return parse_oom(p, f->n_tensors, sizeof *f->tensors);
    return SW_OK;
}

static sw_status parse_members(parser *p) {
    uint64_t k = 0;
    SW_TRY(alloc_tables(p));
    json_object_object_foreach(p->root, key, val) {
        if (strcmp(key, "__metadata__") == 0)
            SW_TRY(parse_meta(p, val));
        else
            SW_TRY(parse_entry(p, key, val, &p->file->tensors[k++]));
    }
    return SW_OK;
}

/* ---- layout ------------------------------------------------------------------- */

static int cmp_offset(const void *x, const void *y) {
    const st_tensor *a = *(const st_tensor *const *)x, *b = *(const st_tensor *const *)y;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->n_bytes < b->n_bytes ? -1 : a->n_bytes > b->n_bytes;
}

/* Sorted by offset, the tensors must follow one another without a gap or
 * an overlap from 0 to the end of the data section (a zero-size tensor
 * sits between two others or at either end), each aligned in the file. */
static sw_status check_tiling(parser *p, const st_tensor **by_offset) {
    const st_file *f = p->file;
    uint64_t pos = 0;
    const st_tensor *prev = NULL;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = by_offset[i];
        set_ctx(p, "tensor", t->name);
        if (t->offset < pos) {
            int cut = quote_len(prev->name, strlen(prev->name));
            return parse_fail(p, "data [%" PRIu64 ", %" PRIu64 ") overlaps tensor '%.*s' "
                              "[%" PRIu64 ", %" PRIu64 "); tensors must not share bytes",
                              t->offset, t->offset + t->n_bytes, cut, prev->name,
                              prev->offset, pos);
        }
        if (t->offset > pos)
            return parse_fail(p, "bytes [%" PRIu64 ", %" PRIu64 ") of the data section, "
                              "just before it, belong to no tensor; the format allows no "
                              "holes (corrupt file or non-conforming writer)", pos,
                              t->offset);
        uint64_t at = f->data_offset + t->offset;
        size_t elem_bytes = st_dtype_size(t->dtype);
        if (at % elem_bytes != 0)
            return parse_fail(p, "data at file offset %" PRIu64 " is not aligned to its "
                              "%zu-byte %s elements (header length %" PRIu64 "); re-save "
                              "the file with the safetensors library, which pads the "
                              "header to a multiple of 8", at, elem_bytes,
                              st_dtype_name(t->dtype), f->data_offset - 8);
        pos = t->offset + t->n_bytes;
        prev = t;
    }
    p->ctx[0] = '\0';
    if (pos != p->data_bytes)
        return parse_fail(p, "the last %" PRIu64 " bytes of the data section (from file "
                          "offset %" PRIu64 ") belong to no tensor; trailing data is not "
                          "allowed (corrupt or truncated header?)", p->data_bytes - pos,
                          f->data_offset + pos);
    return SW_OK;
}

static sw_status check_layout(parser *p) {
    st_file *f = p->file;
    sw_status status = SW_OK;
    const st_tensor **by_offset = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *by_offset);
    if (by_offset == NULL)
        return parse_oom(p, f->n_tensors, sizeof *by_offset);
    for (uint64_t i = 0; i < f->n_tensors; i++)
        by_offset[i] = &f->tensors[i];
    qsort(by_offset, (size_t)f->n_tensors, sizeof *by_offset, cmp_offset);
    status = check_tiling(p, by_offset);
    if (status != SW_OK)
        goto fail;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        f->tensors[i].data = f->map + f->data_offset + f->tensors[i].offset;
fail:
    free(by_offset);
    return status;
}

/* ---- indexes ------------------------------------------------------------------ */

static int cmp_tensor_name(const void *x, const void *y) {
    return strcmp(((const st_tensor *)x)->name, ((const st_tensor *)y)->name);
}

typedef struct meta_pair {
    const char *key, *value;
} meta_pair;

static int cmp_meta(const void *x, const void *y) {
    return strcmp(((const meta_pair *)x)->key, ((const meta_pair *)y)->key);
}

static sw_status build_indexes(parser *p) {
    st_file *f = p->file;
    if (f->n_tensors > 1)
        qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_tensor_name);
    if (f->n_meta < 2)
        return SW_OK;
    meta_pair *pairs = malloc((size_t)f->n_meta * sizeof *pairs);
    if (pairs == NULL)
        return parse_oom(p, f->n_meta, sizeof *pairs);
    for (uint64_t i = 0; i < f->n_meta; i++)
        pairs[i] = (meta_pair){f->meta_keys[i], f->meta_values[i]};
    qsort(pairs, (size_t)f->n_meta, sizeof *pairs, cmp_meta);
    for (uint64_t i = 0; i < f->n_meta; i++)
        f->meta_keys[i] = pairs[i].key, f->meta_values[i] = pairs[i].value;
    free(pairs);
    return SW_OK;
}

/* ---- entry ---------------------------------------------------------------------- */

sw_status st_parse(st_file *file) {
    parser p = {.file = file, .priv = file->priv};
    sw_status status = read_header_length(&p);
    if (status == SW_OK)
        status = parse_json(&p);
    if (status == SW_OK)
        status = scan_header(&p);
    if (status == SW_OK)
        status = parse_members(&p);
    if (status == SW_OK)
        status = check_layout(&p);
    if (status == SW_OK)
        status = build_indexes(&p);
    json_object_put(p.root);
    return status;
}

/*
 * json_write.c — the streaming JSON writer (json_write.h): separators and
 * indentation by layout, Python-compatible string escapes, and the number
 * forms (exact integers, Python's float repr, "%.6g", fixed decimals).
 *
 * Invariant: has_items[depth] says whether the innermost open container
 * already holds a value, so the next one is preceded by ","; after_key
 * says the next value directly follows "key": (no separator).
 */
#include "format/json_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static sw_status file_write(void *ctx, const void *data, size_t n) {
    if (fwrite(data, 1, n, ctx) == n)
        return SW_OK;
    return sw_errorf(SW_ERR_IO, "JSON writer: cannot write %zu bytes", n);
}

void jw_init(jsonw *j, const byte_sink *sink, jw_style style) {
    memset(j, 0, sizeof *j);
    j->sink = *sink;
    j->style = style;
}

void jw_init_file(jsonw *j, FILE *f, jw_style style) {
    const byte_sink sink = {file_write, f};
    jw_init(j, &sink, style);
}

static void put(jsonw *j, const char *s, size_t n) {
    if (j->st == SW_OK && n > 0)
        j->st = j->sink.write(j->sink.ctx, s, n);
}

static void puts_(jsonw *j, const char *s) { put(j, s, strlen(s)); }

static void newline_indent(jsonw *j) {
    static const char spaces[] = "  ";
    if (j->style != JW_PRETTY)
        return;
    put(j, "\n", 1);
    for (int d = 0; d < j->depth; d++)
        put(j, spaces, 2);
}

/* Separator and indentation before a value or key. */
static void before_value(jsonw *j) {
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth == 0)
        return;
    if (j->has_items[j->depth])
        put(j, ",", 1);
    j->has_items[j->depth] = true;
    newline_indent(j);
}

static void open_container(jsonw *j, const char *c) {
    before_value(j);
    puts_(j, c);
    if (j->depth + 1 >= JW_MAX_DEPTH) {
        if (j->st == SW_OK)
            j->st = sw_errorf(SW_ERR_ARG, "JSON writer: nested deeper than %d", JW_MAX_DEPTH - 1);
        return;
    }
    j->depth++;
    j->has_items[j->depth] = false;
}

static void close_container(jsonw *j, const char *c) {
    bool items = j->has_items[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (items)
        newline_indent(j);
    puts_(j, c);
}

void jw_obj(jsonw *j) { open_container(j, "{"); }
void jw_obj_end(jsonw *j) { close_container(j, "}"); }
void jw_arr(jsonw *j) { open_container(j, "["); }
void jw_arr_end(jsonw *j) { close_container(j, "]"); }

/* s[0..len) quoted, runs of plain bytes written in one piece. */
static void put_string(jsonw *j, const char *s, size_t len) {
    char esc[8];
    size_t run = 0; /* bytes of s[i - run, i) not yet written */
    put(j, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = NULL;
        if (c == '"') e = "\\\"";
        else if (c == '\\') e = "\\\\";
        else if (c == '\n') e = "\\n";
        else if (c == '\r') e = "\\r";
        else if (c == '\t') e = "\\t";
        else if (c == '\b') e = "\\b";
        else if (c == '\f') e = "\\f";
        else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            e = esc;
        }
        if (e == NULL) {
            run++;
            continue;
        }
        put(j, s + i - run, run);
        run = 0;
        puts_(j, e);
    }
    put(j, s + len - run, run);
    put(j, "\"", 1);
}

void jw_keyn(jsonw *j, const char *key, size_t len) {
    before_value(j);
    put_string(j, key, len);
    if (j->style == JW_PRETTY)
        put(j, ": ", 2);
    else
        put(j, ":", 1);
    j->after_key = true;
}

void jw_key(jsonw *j, const char *key) { jw_keyn(j, key, strlen(key)); }

void jw_strn(jsonw *j, const char *s, size_t len) {
    before_value(j);
    put_string(j, s, len);
}

void jw_str(jsonw *j, const char *s) {
    if (s == NULL)
        jw_null(j);
    else
        jw_strn(j, s, strlen(s));
}

/* A value already formatted into text. */
static void put_value(jsonw *j, const char *text) {
    before_value(j);
    puts_(j, text);
}

void jw_int(jsonw *j, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    put_value(j, buf);
}

void jw_uint(jsonw *j, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    put_value(j, buf);
}

void jw_float(jsonw *j, double v) {
    char buf[40];
    if (!isfinite(v)) {
        jw_null(j);
        return;
    }
    jw_py_float(v, buf, sizeof buf);
    put_value(j, buf);
}

void jw_num(jsonw *j, double v) {
    char buf[40];
    if (!isfinite(v)) {
        jw_null(j);
        return;
    }
    snprintf(buf, sizeof buf, "%.6g", v);
    put_value(j, buf);
}

void jw_fixed(jsonw *j, double v, int decimals) {
    char buf[64];
    /* Beyond 1e30 "%f" stops being short; such a value is a bug upstream. */
    if (!isfinite(v) || fabs(v) > 1e30) {
        jw_null(j);
        return;
    }
    snprintf(buf, sizeof buf, "%.*f", decimals < 0 ? 0 : decimals > 17 ? 17 : decimals, v);
    put_value(j, buf);
}

void jw_bool(jsonw *j, bool v) { put_value(j, v ? "true" : "false"); }
void jw_null(jsonw *j) { put_value(j, "null"); }
void jw_raw(jsonw *j, const char *json) { put_value(j, json); }

void jw_key_str(jsonw *j, const char *key, const char *s) {
    jw_key(j, key);
    jw_str(j, s);
}

void jw_key_int(jsonw *j, const char *key, int64_t v) {
    jw_key(j, key);
    jw_int(j, v);
}

void jw_key_uint(jsonw *j, const char *key, uint64_t v) {
    jw_key(j, key);
    jw_uint(j, v);
}

void jw_key_num(jsonw *j, const char *key, double v) {
    jw_key(j, key);
    jw_num(j, v);
}

void jw_key_bool(jsonw *j, const char *key, bool v) {
    jw_key(j, key);
    jw_bool(j, v);
}

sw_status jw_finish(jsonw *j) {
    put(j, "\n", 1);
    return j->st;
}

/* Python's float repr: the shortest digits that round-trip; positional
 * notation for decimal exponents -4..15 (always with a ".0" or fraction),
 * else d.ddde+XX with at least two exponent digits. */
void jw_py_float(double v, char *buf, size_t cap) {
    char e[40], digits[24];
    int p = 1;
    for (; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    const char *s = e;
    bool neg = *s == '-';
    s += neg;
    size_t nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0') /* "%.0e" can leave none, but be safe */
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(s + 1);
    char out[64];
    size_t n = 0;
    if (neg)
        out[n++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int k = 0; k < -exp10 - 1; k++)
                out[n++] = '0';
            for (size_t k = 0; k < nd; k++)
                out[n++] = digits[k];
        } else {
            for (int k = 0; k <= exp10; k++)
                out[n++] = (size_t)k < nd ? digits[k] : '0';
            out[n++] = '.';
            if ((size_t)exp10 + 1 < nd)
                for (size_t k = (size_t)exp10 + 1; k < nd; k++)
                    out[n++] = digits[k];
            else
                out[n++] = '0';
        }
        out[n] = '\0';
    } else {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            for (size_t k = 1; k < nd; k++)
                out[n++] = digits[k];
        }
        snprintf(out + n, sizeof out - n, "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
    snprintf(buf, cap, "%s", out);
}

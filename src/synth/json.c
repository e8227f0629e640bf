/*
 * json.c — a streaming pretty-printing JSON emitter for the Hugging Face
 * files synth writes (config.json, tokenizer.json with 262k entries, the
 * shard index), byte-compatible with Python's json.dumps(indent=2) (what
 * transformers writes) and serde_json's pretty printer (what tokenizers
 * writes). Streaming keeps memory flat where a json-c tree of a 262k-token
 * vocabulary and merge list would take ~100 MB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"
#include "util/error.h"

void jw_init(jsonw *j, const byte_sink *sink) {
    memset(j, 0, sizeof *j);
    j->sink = sink;
}

static void put(jsonw *j, const char *s, size_t n) {
    if (j->st == SW_OK && n > 0)
        j->st = j->sink->write(j->sink->ctx, s, n);
}

static void puts_(jsonw *j, const char *s) { put(j, s, strlen(s)); }

static void newline_indent(jsonw *j) {
    static const char spaces[] = "                                ";
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
            j->st = sw_errorf(SW_ERR_ARG, "synth: JSON nested too deep");
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
    put(j, ": ", 2);
    j->after_key = true;
}

void jw_key(jsonw *j, const char *key) { jw_keyn(j, key, strlen(key)); }

void jw_strn(jsonw *j, const char *s, size_t len) {
    before_value(j);
    put_string(j, s, len);
}

void jw_str(jsonw *j, const char *s) { jw_strn(j, s, strlen(s)); }

void jw_int(jsonw *j, int64_t v) {
    char buf[32];
    before_value(j);
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    puts_(j, buf);
}

void jw_float(jsonw *j, double v) {
    char buf[40];
    before_value(j);
    synth_py_float(v, buf, sizeof buf);
    puts_(j, buf);
}

void jw_bool(jsonw *j, bool v) {
    before_value(j);
    puts_(j, v ? "true" : "false");
}

void jw_key_int(jsonw *j, const char *key, int64_t v) {
    jw_key(j, key);
    jw_int(j, v);
}

void jw_key_bool(jsonw *j, const char *key, bool v) {
    jw_key(j, key);
    jw_bool(j, v);
}

void jw_null(jsonw *j) {
    before_value(j);
    puts_(j, "null");
}

sw_status jw_finish(jsonw *j) {
    put(j, "\n", 1);
    return j->st;
}

/* Python's float repr: the shortest digits that round-trip; positional
 * notation for decimal exponents -4..15 (always with a ".0" or fraction),
 * else d.ddde+XX with at least two exponent digits. */
void synth_py_float(double v, char *buf, size_t cap) {
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

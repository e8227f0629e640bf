/*
 * cache.c — doctor's cache file, SW_DOCTOR_CACHE_FILE in the cache folder:
 * the one place its keys are named, written (sw_doctor_save) and read
 * (sw_doctor_load, doctor_cache_parse; the planner reads it through them).
 *
 * The file is one flat, compact JSON object: sw_doctor_rates's numbers
 * first (in RATE_KEYS order, then the decode pairs), then measured_at,
 * quick, version and the strings host and device. Writing goes to a temp
 * file in the same folder, synced, then renamed over the old one, so a
 * reader sees the old file or the new one, never half of one.
 *
 * Reading accepts exactly one flat object: numbers are kept for known keys
 * when in (0, 1e18] (0 means unknown), strings, booleans and null are
 * skipped so doctor may add descriptive fields, nesting is refused.
 */
#define _DEFAULT_SOURCE /* mkstemp, fchmod, fsync */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "format/json_write.h"
#include "quant/types.h"
#include "util/error.h"

#define CACHE_MAX_BYTES 65536
#define CACHE_VERSION 1
#define RATE_MAX 1e18              /* larger is no rate, just a broken file */

/* The numeric keys, in the file's order (the decode pairs follow them). */
static const struct {
    const char *key;
    size_t off;
} RATE_KEYS[] = {
    {"h2d_pinned_Bps", offsetof(sw_doctor_rates, h2d_pinned_Bps)},
    {"h2d_pageable_Bps", offsetof(sw_doctor_rates, h2d_pageable_Bps)},
    {"host_mem_Bps", offsetof(sw_doctor_rates, host_mem_Bps)},
    {"device_mem_Bps", offsetof(sw_doctor_rates, device_mem_Bps)},
    {"disk_read_Bps", offsetof(sw_doctor_rates, disk_read_Bps)},
    {"host_flops", offsetof(sw_doctor_rates, host_flops)},
    {"device_flops", offsetof(sw_doctor_rates, device_flops)},
    {"device_op_s", offsetof(sw_doctor_rates, device_op_s)},
};
#define N_RATE_KEYS (sizeof RATE_KEYS / sizeof RATE_KEYS[0])

static double *rate_at(sw_doctor_rates *r, size_t i) {
    return (double *)(void *)((char *)r + RATE_KEYS[i].off);
}

static double rate_of(const sw_doctor_rates *r, size_t i) {
    return *(const double *)(const void *)((const char *)r + RATE_KEYS[i].off);
}

/* "host_decode_q4_k_Bps" (side 0) or "device_decode_q4_k_Bps" (side 1). */
static void decode_key(int side, int i, char *buf, size_t cap) {
    snprintf(buf, cap, "%s_decode_%s_Bps", side ? "device" : "host", type_decode_key(i));
}

sw_status doctor_make_dirs(const char *dir) {
    char path[4096];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof path)
        return sw_errorf(SW_ERR_ARG, "cache folder path is too long");
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return sw_errorf(SW_ERR_IO, "cannot create the cache folder %s: %s", path,
                             strerror(errno));
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return sw_errorf(SW_ERR_IO, "cannot use the cache folder %s: not a folder", dir);
    return SW_OK;
}

/* ---- writing -------------------------------------------------------------- */

/* A rate; non-finite values (never expected) become 0, unknown. */
static void put_rate(jsonw *j, const char *key, double v) {
    jw_key_num(j, key, isfinite(v) ? v : 0.0);
}

static void write_cache_json(jsonw *j, const sw_doctor_rates *r) {
    char key[48];
    jw_obj(j);
    for (size_t i = 0; i < N_RATE_KEYS; i++)
        put_rate(j, RATE_KEYS[i].key, rate_of(r, i));
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        decode_key(0, i, key, sizeof key);
        put_rate(j, key, r->host_decode_Bps[i]);
        decode_key(1, i, key, sizeof key);
        put_rate(j, key, r->device_decode_Bps[i]);
    }
    put_rate(j, "memcpy_Bps", r->memcpy_Bps);
    jw_key_int(j, "measured_at", r->measured_at);
    jw_key_int(j, "quick", r->quick ? 1 : 0);
    jw_key_int(j, "version", CACHE_VERSION);
    jw_key_str(j, "host", r->host);
    jw_key_str(j, "device", r->device);
    jw_obj_end(j);
}

/* Writes the JSON to an open temp file and syncs it; closes f. */
static sw_status finish_temp(FILE *f, const sw_doctor_rates *r, const char *tmp) {
    jsonw j;
    jw_init_file(&j, f, JW_COMPACT);
    write_cache_json(&j, r);
    int bad = jw_finish(&j) != SW_OK || fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return sw_errorf(SW_ERR_IO, "cannot write %s: %s", tmp, strerror(e));
    return SW_OK;
}

sw_status sw_doctor_save(const sw_doctor_report *r, char *path_out, size_t cap) {
    char path[4200], tmp[4200];
    if (r == NULL || r->cache_dir[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "sw_doctor_save: no report");
    snprintf(path, sizeof path, "%s/%s", r->cache_dir, SW_DOCTOR_CACHE_FILE);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", r->cache_dir, SW_DOCTOR_CACHE_FILE);
    if (path_out != NULL && cap > 0)
        snprintf(path_out, cap, "%s", path);
    sw_status st = doctor_make_dirs(r->cache_dir);
    if (st != SW_OK)
        return sw_error_prefix(st, "cannot save the doctor cache %s", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        st = sw_errorf(SW_ERR_IO, "cannot save the doctor cache %s: cannot create a file in "
                       "%s: %s", path, r->cache_dir, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return st;
    }
    (void)fchmod(fd, 0644); /* mkstemp's 0600 would hide it from other tools */
    if ((st = finish_temp(f, &r->rates, tmp)) != SW_OK) {
        unlink(tmp);
        return st;
    }
    if (rename(tmp, path) != 0) {
        st = sw_errorf(SW_ERR_IO, "cannot save the doctor cache %s: rename: %s", path,
                       strerror(errno));
        unlink(tmp);
    }
    return st;
}

/* ---- reading -------------------------------------------------------------- */

typedef struct cursor {
    const char *s;
    size_t pos, len;
} cursor;

static void skip_ws(cursor *c) {
    while (c->pos < c->len && isspace((unsigned char)c->s[c->pos]))
        c->pos++;
}

static sw_status bad(const cursor *c, const char *what) {
    return sw_errorf(SW_ERR_FORMAT, "doctor cache: %s at offset %zu", what, c->pos);
}

/* A string's raw (still escaped) bytes [*start, *start + *n). */
static sw_status read_string(cursor *c, const char **start, size_t *n) {
    if (c->pos >= c->len || c->s[c->pos] != '"')
        return bad(c, "expected a string");
    size_t b = ++c->pos;
    while (c->pos < c->len && c->s[c->pos] != '"')
        c->pos += c->s[c->pos] == '\\' ? 2 : 1;
    if (c->pos >= c->len)
        return bad(c, "unterminated string");
    *start = c->s + b;
    *n = c->pos - b;
    c->pos++;
    return SW_OK;
}

/* Copies raw string bytes s[0..n) into out, undoing the escapes names can
 * hold (a \uXXXX becomes '?': host and device names are ASCII). */
static void unescape(const char *s, size_t n, char *out, size_t cap) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        char ch = s[i];
        if (ch == '\\' && i + 1 < n) {
            const char *e = strchr(from, s[++i]);
            ch = e != NULL ? to[e - from] : '?';
            if (s[i] == 'u')
                i += i + 4 < n ? 4 : n - 1 - i;
        }
        out[k++] = ch;
    }
    out[k] = '\0';
}

/* One value: a number is returned in *v (has_v); strings in *str, *str_n
 * (NULL when not a string); true, false and null are skipped. */
static sw_status read_value(cursor *c, double *v, bool *has_v, const char **str, size_t *str_n) {
    const char *p = c->s + c->pos;
    const char *words[] = {"true", "false", "null"};
    *has_v = false;
    *str = NULL;
    if (c->pos < c->len && *p == '"')
        return read_string(c, str, str_n);
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if (c->len - c->pos >= n && !memcmp(p, words[i], n)) {
            c->pos += n;
            return SW_OK;
        }
    }
    char num[64];
    size_t n = 0;
    while (c->pos + n < c->len && n + 1 < sizeof num && strchr("+-.eE0123456789", p[n]))
        n++;
    memcpy(num, p, n);
    num[n] = '\0';
    char *end = NULL;
    *v = strtod(num, &end);
    if (n == 0 || end != num + n)
        return bad(c, "expected a number (objects and arrays are not allowed)");
    c->pos += n;
    *has_v = true;
    return SW_OK;
}

static bool key_is(const char *key, size_t len, const char *name) {
    return strlen(name) == len && !memcmp(name, key, len);
}

/* Stores number v under `key` if the key is one of ours and v in range. */
static void store_number(sw_doctor_rates *r, const char *key, size_t len, double v) {
    char name[48];
    if (!(v > 0) || v > RATE_MAX)
        return;
    for (size_t i = 0; i < N_RATE_KEYS; i++)
        if (key_is(key, len, RATE_KEYS[i].key))
            *rate_at(r, i) = v;
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        decode_key(0, i, name, sizeof name);
        if (key_is(key, len, name))
            r->host_decode_Bps[i] = v;
        decode_key(1, i, name, sizeof name);
        if (key_is(key, len, name))
            r->device_decode_Bps[i] = v;
    }
    if (key_is(key, len, "memcpy_Bps"))
        r->memcpy_Bps = v;
    else if (key_is(key, len, "measured_at"))
        r->measured_at = (int64_t)v;
    else if (key_is(key, len, "quick"))
        r->quick = 1;
}

/* One "key": value member; the value lands in r if it is one of ours. */
static sw_status read_member(cursor *c, sw_doctor_rates *r) {
    const char *key, *str;
    size_t key_len, str_n = 0;
    double v = 0;
    bool has_v;
    sw_status st = read_string(c, &key, &key_len);
    if (st != SW_OK)
        return st;
    skip_ws(c);
    if (c->pos >= c->len || c->s[c->pos++] != ':')
        return bad(c, "expected ':'");
    skip_ws(c);
    if ((st = read_value(c, &v, &has_v, &str, &str_n)) != SW_OK)
        return st;
    if (has_v)
        store_number(r, key, key_len, v);
    else if (str != NULL && key_is(key, key_len, "host"))
        unescape(str, str_n, r->host, sizeof r->host);
    else if (str != NULL && key_is(key, key_len, "device"))
        unescape(str, str_n, r->device, sizeof r->device);
    return SW_OK;
}

sw_status doctor_cache_parse(const char *text, size_t len, sw_doctor_rates *out) {
    cursor c = {text, 0, len};
    memset(out, 0, sizeof *out);
    skip_ws(&c);
    if (c.pos >= c.len || text[c.pos] != '{')
        return bad(&c, "expected '{'");
    c.pos++;
    for (bool first = true;; first = false) {
        skip_ws(&c);
        if (c.pos < c.len && text[c.pos] == '}' && first)
            break;
        sw_status st = read_member(&c, out);
        if (st != SW_OK)
            return st;
        skip_ws(&c);
        if (c.pos < c.len && text[c.pos] == ',') {
            c.pos++;
            continue;
        }
        if (c.pos < c.len && text[c.pos] == '}')
            break;
        return bad(&c, "expected ',' or '}'");
    }
    return SW_OK;
}

sw_status sw_doctor_load(sw_doctor_rates *out, char *path_out, size_t cap) {
    char path[4096], dir[4000];
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_doctor_load: NULL argument");
    memset(out, 0, sizeof *out);
    if (sw_cache_dir(dir, sizeof dir) != SW_OK)
        return SW_ERR_IO;
    snprintf(path, sizeof path, "%s/%s", dir, SW_DOCTOR_CACHE_FILE);
    if (path_out != NULL && cap > 0)
        snprintf(path_out, cap, "%s", path);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sw_errorf(SW_ERR_IO, "no doctor cache at %s (run spillway doctor)", path);
    char *buf = malloc(CACHE_MAX_BYTES);
    if (buf == NULL) {
        fclose(f);
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory reading %s", path);
    }
    size_t n = fread(buf, 1, CACHE_MAX_BYTES, f);
    fclose(f);
    sw_status st;
    if (n == CACHE_MAX_BYTES)
        st = sw_errorf(SW_ERR_FORMAT, "doctor cache %s is larger than %d bytes", path,
                       CACHE_MAX_BYTES - 1);
    else
        st = doctor_cache_parse(buf, n, out);
    free(buf);
    if (st != SW_OK) {
        memset(out, 0, sizeof *out);
        return sw_error_prefix(st, "%s", path);
    }
    return SW_OK;
}

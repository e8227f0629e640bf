/*
 * rates.c — the speeds the cost model divides by: stated defaults, or what
 * `spillway doctor` measured and cached (a flat JSON object of numbers),
 * and how much host memory a plan may use. The only file in src/plan/ that
 * reads the machine; plan_build never calls it.
 *
 * The doctor cache parser reads exactly one flat object whose values are
 * numbers (strings, booleans and null are skipped so doctor may add
 * descriptive fields); nesting is rejected. Numbers go through strtod.
 */
#define _DEFAULT_SOURCE /* sysconf(_SC_AVPHYS_PAGES) */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/plan_api.h"
#include "quant/types.h"
#include "util/error.h"

#define CACHE_MAX_BYTES 65536

void plan_rates_default(plan_rates *r) {
    memset(r, 0, sizeof *r);
    r->h2d_pinned_Bps = 20e9;
    r->h2d_pageable_Bps = 8e9;
    r->host_mem_Bps = 20e9;
    r->device_mem_Bps = 1e12;
    r->disk_read_Bps = 1e9;
    r->host_flops = 1e11;
    r->device_flops = 2e13;
    r->device_op_s = 5e-6;
    r->measured = false;
}

void plan_rates_for_sim(plan_rates *r, double sim_link_Bps) {
    r->device_mem_Bps = r->host_mem_Bps;
    memcpy(r->device_decode_Bps, r->host_decode_Bps, sizeof r->device_decode_Bps);
    r->device_flops = r->host_flops;
    r->h2d_pinned_Bps = sim_link_Bps > 0 ? sim_link_Bps : r->host_mem_Bps;
    r->h2d_pageable_Bps = r->h2d_pinned_Bps;
    r->device_op_s = 0;
}

/* Stores value under `key` if it is one of ours and positive. */
static void rates_set(plan_rates *r, const char *key, size_t len, double v) {
    static const struct { const char *key; size_t off; } fields[] = {
        {"h2d_pinned_Bps", offsetof(plan_rates, h2d_pinned_Bps)},
        {"h2d_pageable_Bps", offsetof(plan_rates, h2d_pageable_Bps)},
        {"host_mem_Bps", offsetof(plan_rates, host_mem_Bps)},
        {"device_mem_Bps", offsetof(plan_rates, device_mem_Bps)},
        {"disk_read_Bps", offsetof(plan_rates, disk_read_Bps)},
        {"host_flops", offsetof(plan_rates, host_flops)},
        {"device_flops", offsetof(plan_rates, device_flops)},
        {"device_op_s", offsetof(plan_rates, device_op_s)},
    };
    if (!(v > 0) || v > 1e18)
        return;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strlen(fields[i].key) == len && !memcmp(fields[i].key, key, len))
            *(double *)(void *)((char *)r + fields[i].off) = v;
    /* host_decode_<type>_Bps, device_decode_<type>_Bps (doctor.c's keys) */
    for (int i = 0; i < SW_DOCTOR_DECODE_TYPES; i++) {
        char host[48], dev[48];
        snprintf(host, sizeof host, "host_decode_%s_Bps", type_decode_key(i));
        snprintf(dev, sizeof dev, "device_decode_%s_Bps", type_decode_key(i));
        if (strlen(host) == len && !memcmp(host, key, len))
            r->host_decode_Bps[i] = v;
        if (strlen(dev) == len && !memcmp(dev, key, len))
            r->device_decode_Bps[i] = v;
    }
}

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

/* A string without escapes we care about; sets [*start, *n). */
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

/* One value: a number is returned in *v (has_v); strings, true, false and
 * null are skipped. */
static sw_status read_value(cursor *c, double *v, bool *has_v) {
    const char *p = c->s + c->pos;
    const char *words[] = {"true", "false", "null"};
    *has_v = false;
    if (c->pos < c->len && *p == '"') {
        const char *s;
        size_t n;
        return read_string(c, &s, &n);
    }
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

sw_status plan_rates_parse(const char *json, size_t len, plan_rates *out) {
    cursor c = {json, 0, len};
    sw_status st;
    plan_rates_default(out);
    skip_ws(&c);
    if (c.pos >= c.len || json[c.pos] != '{')
        return bad(&c, "expected '{'");
    c.pos++;
    for (bool first = true;; first = false) {
        skip_ws(&c);
        if (c.pos < c.len && json[c.pos] == '}' && first)
            break;
        const char *key;
        size_t key_len;
        double v = 0;
        bool has_v;
        if ((st = read_string(&c, &key, &key_len)) != SW_OK)
            return st;
        skip_ws(&c);
        if (c.pos >= c.len || json[c.pos++] != ':')
            return bad(&c, "expected ':'");
        skip_ws(&c);
        if ((st = read_value(&c, &v, &has_v)) != SW_OK)
            return st;
        if (has_v)
            rates_set(out, key, key_len, v);
        skip_ws(&c);
        if (c.pos < c.len && json[c.pos] == ',') {
            c.pos++;
            continue;
        }
        if (c.pos < c.len && json[c.pos] == '}')
            break;
        return bad(&c, "expected ',' or '}'");
    }
    out->measured = true;
    return SW_OK;
}

sw_status plan_rates_load_cache(plan_rates *out) {
    char path[4096], dir[4000];
    plan_rates_default(out);
    sw_status st = sw_cache_dir(dir, sizeof dir);
    if (st != SW_OK)
        return SW_ERR_IO;
    snprintf(path, sizeof path, "%s/doctor.json", dir);
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
    if (n == CACHE_MAX_BYTES)
        st = sw_errorf(SW_ERR_FORMAT, "doctor cache %s is larger than %d bytes", path,
                       CACHE_MAX_BYTES - 1);
    else
        st = plan_rates_parse(buf, n, out);
    free(buf);
    if (st != SW_OK) {
        plan_rates_default(out);
        return sw_error_prefix(st, "%s", path);
    }
    return SW_OK;
}

/* MemAvailable from /proc/meminfo in bytes, 0 if unreadable. */
static uint64_t meminfo_available(void) {
    char line[256];
    unsigned long long kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return kib > UINT64_MAX / 1024 ? 0 : (uint64_t)kib * 1024;
}

uint64_t plan_host_available(uint64_t host_mem_bytes) {
    uint64_t avail = meminfo_available();
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    if (avail == 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0)
            avail = (uint64_t)pages * (uint64_t)page;
    }
#endif
    if (avail == 0)
        return host_mem_bytes ? host_mem_bytes : 8ull << 30;
    return host_mem_bytes && host_mem_bytes < avail ? host_mem_bytes : avail;
}

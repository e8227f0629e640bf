/*
 * golden.c — validating reader for .swgold golden files (see golden.h).
 *
 * Two passes over the bytes: the first checks every field against the
 * remaining length and sums the storage needed; the second copies names and
 * data into one 8-byte-aligned block (so f32/i32 views are aligned whatever
 * the name lengths). Invariant after golden_parse succeeds: every entry's
 * n_bytes matches its dtype and dims, and names are unique.
 */
#include "golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct golden_file {
    size_t n_entries;
    golden_entry *entries;   /* (n_entries) */
    unsigned char *storage;  /* names and data of all entries */
};

typedef struct cursor {
    const unsigned char *p;
    size_t n;     /* total bytes */
    size_t pos;   /* next byte to read */
} cursor;

static uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

static int cursor_take(cursor *c, size_t n_bytes, const unsigned char **at) {
    if (n_bytes > c->n - c->pos)
        return 0;
    *at = c->p + c->pos;
    c->pos += n_bytes;
    return 1;
}

static int read_u32(cursor *c, uint32_t *v) {
    const unsigned char *b;
    if (!cursor_take(c, 4, &b))
        return 0;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 1;
}

static int read_u64(cursor *c, uint64_t *v) {
    uint32_t lo, hi;
    if (!read_u32(c, &lo) || !read_u32(c, &hi))
        return 0;
    *v = (uint64_t)hi << 32 | lo;
    return 1;
}

/* Parsed header of one entry; name and data point into the input bytes. */
typedef struct raw_entry {
    const unsigned char *name;
    uint32_t name_len;
    golden_entry e;          /* name/data unset */
    const unsigned char *src;
} raw_entry;

/* Reads one entry header and skips its data, checking every length. */
static sw_status read_entry(cursor *c, uint32_t index, raw_entry *r) {
    size_t start = c->pos;
    uint64_t count = 1;
    memset(r, 0, sizeof *r);
    if (!read_u32(c, &r->name_len) || r->name_len == 0 ||
        !cursor_take(c, r->name_len, &r->name))
        return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): bad or truncated name",
                         index, start);
    if (memchr(r->name, 0, r->name_len))
        return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): NUL in name", index, start);
    if (!read_u32(c, &r->e.dtype) || !read_u32(c, &r->e.n_dims))
        return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): truncated header", index, start);
    if (r->e.dtype > GOLDEN_TEXT || r->e.n_dims > GOLDEN_MAX_DIMS ||
        (r->e.dtype == GOLDEN_TEXT && r->e.n_dims != 1))
        return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): dtype %u with %u dims invalid",
                         index, start, r->e.dtype, r->e.n_dims);
    for (uint32_t d = 0; d < GOLDEN_MAX_DIMS; d++)
        r->e.dims[d] = 1;
    for (uint32_t d = 0; d < r->e.n_dims; d++) {
        if (!read_u64(c, &r->e.dims[d]))
            return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): truncated dims", index, start);
        if (r->e.dims[d] != 0 && count > UINT64_MAX / 4 / r->e.dims[d])
            return sw_errorf(SW_ERR_FORMAT, "entry %u (offset %zu): dims overflow", index, start);
        count *= r->e.dims[d];
    }
    r->e.n_bytes = r->e.dtype == GOLDEN_TEXT ? r->e.dims[0] : count * 4;
    if (r->e.n_bytes > c->n - c->pos)
        return sw_errorf(SW_ERR_FORMAT,
                         "entry %u (offset %zu): %llu data bytes but only %zu left in file",
                         index, start, (unsigned long long)r->e.n_bytes, c->n - c->pos);
    cursor_take(c, (size_t)r->e.n_bytes, &r->src);
    return SW_OK;
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Names must be unique: golden_find would otherwise be ambiguous. */
static sw_status check_unique(const raw_entry *raw, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < i; j++)
            if (raw[i].name_len == raw[j].name_len &&
                memcmp(raw[i].name, raw[j].name, raw[i].name_len) == 0)
                return sw_errorf(SW_ERR_FORMAT, "entry %u repeats the name '%.*s'", i,
                                 (int)raw[i].name_len, (const char *)raw[i].name);
    return SW_OK;
}

/* Copies names and data of the validated entries into g's one block. */
static sw_status build(golden_file *g, const raw_entry *raw, uint32_t n) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += align8((uint64_t)raw[i].name_len + 1) + align8(raw[i].e.n_bytes + 1);
    if (total > SIZE_MAX)
        return sw_errorf(SW_ERR_OOM_HOST, "golden: %llu bytes do not fit in memory",
                         (unsigned long long)total);
    g->entries = calloc(n ? n : 1, sizeof *g->entries);
    g->storage = calloc(1, total ? (size_t)total : 1); /* calloc: NUL terminators */
    if (!g->entries || !g->storage)
        return sw_errorf(SW_ERR_OOM_HOST, "golden: cannot allocate %llu bytes for %u entries",
                         (unsigned long long)total, n);
    unsigned char *at = g->storage;
    for (uint32_t i = 0; i < n; i++) {
        golden_entry *e = &g->entries[i];
        *e = raw[i].e;
        memcpy(at, raw[i].name, raw[i].name_len);
        e->name = (const char *)at;
        at += align8((uint64_t)raw[i].name_len + 1);
        if (e->n_bytes)
            memcpy(at, raw[i].src, (size_t)e->n_bytes);
        e->data = at;
        at += align8(e->n_bytes + 1);
    }
    g->n_entries = n;
    return SW_OK;
}

sw_status golden_parse(const void *bytes, size_t n_bytes, golden_file **out) {
    cursor c = {bytes, n_bytes, 0};
    const unsigned char *magic;
    uint32_t n = 0;
    raw_entry *raw = NULL;
    golden_file *g = NULL;
    sw_status st;

    if (!out || (!bytes && n_bytes))
        return sw_errorf(SW_ERR_ARG, "golden_parse: NULL argument");
    *out = NULL;
    if (!host_is_little_endian())
        return sw_errorf(SW_ERR_UNSUPPORTED, "golden files need a little-endian host");
    if (!cursor_take(&c, 8, &magic) || memcmp(magic, GOLDEN_MAGIC, 8) != 0)
        return sw_errorf(SW_ERR_FORMAT, "not a golden file (magic \"SWGOLD\\0\\1\" expected)");
    /* Each entry takes at least 13 bytes (name_len, 1-byte name, dtype, n_dims). */
    if (!read_u32(&c, &n) || n > (n_bytes - c.pos) / 13)
        return sw_errorf(SW_ERR_FORMAT, "golden: entry count %u impossible for %zu bytes",
                         n, n_bytes);
    raw = calloc(n ? n : 1, sizeof *raw);
    g = calloc(1, sizeof *g);
    if (!raw || !g) {
        st = sw_errorf(SW_ERR_OOM_HOST, "golden: cannot allocate the entry table (%u)", n);
        goto fail;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((st = read_entry(&c, i, &raw[i])) != SW_OK)
            goto fail;
    if (c.pos != n_bytes) {
        st = sw_errorf(SW_ERR_FORMAT, "golden: %zu unexpected bytes after the last entry "
                       "(offset %zu)", n_bytes - c.pos, c.pos);
        goto fail;
    }
    if ((st = check_unique(raw, n)) != SW_OK || (st = build(g, raw, n)) != SW_OK)
        goto fail;
    free(raw);
    *out = g;
    return SW_OK;
fail:
    free(raw);
    golden_free(g);
    return st;
}

sw_status golden_load(const char *path, golden_file **out) {
    FILE *f = NULL;
    unsigned char *buf = NULL;
    long size;
    sw_status st;

    if (!path || !out)
        return sw_errorf(SW_ERR_ARG, "golden_load: NULL argument");
    *out = NULL;
    f = fopen(path, "rb");
    if (!f)
        return sw_errorf(SW_ERR_IO, "cannot open golden file '%s'; regenerate with "
                         "tools/golden/make_forward_golden.py", path);
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = sw_errorf(SW_ERR_IO, "cannot size golden file '%s'", path);
        goto fail;
    }
    buf = malloc(size ? (size_t)size : 1);
    if (!buf) {
        st = sw_errorf(SW_ERR_OOM_HOST, "golden file '%s': cannot allocate %ld bytes", path, size);
        goto fail;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        st = sw_errorf(SW_ERR_IO, "short read of golden file '%s'", path);
        goto fail;
    }
    if ((st = golden_parse(buf, (size_t)size, out)) != SW_OK)
        sw_error_prefix(st, "%s", path);
fail:
    free(buf);
    fclose(f);
    return st;
}

void golden_free(golden_file *g) {
    if (!g)
        return;
    free(g->entries);
    free(g->storage);
    free(g);
}

const golden_entry *golden_find(const golden_file *g, const char *name) {
    if (!g || !name)
        return NULL;
    for (size_t i = 0; i < g->n_entries; i++)
        if (strcmp(g->entries[i].name, name) == 0)
            return &g->entries[i];
    return NULL;
}

size_t golden_count(const golden_file *g) { return g ? g->n_entries : 0; }

const golden_entry *golden_at(const golden_file *g, size_t i) {
    return g && i < g->n_entries ? &g->entries[i] : NULL;
}

uint64_t golden_elements(const golden_entry *e) {
    uint64_t count = 1;
    for (uint32_t d = 0; d < e->n_dims; d++)
        count *= e->dims[d];
    return count;
}

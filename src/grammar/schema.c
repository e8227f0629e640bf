/*
 * schema.c — a JSON schema compiled to a grammar (schema.h): every keyword
 * is either understood, an annotation (title, description, ...), or
 * refused with SW_ERR_UNSUPPORTED naming it, so a schema is never half
 * honoured. Objects list their properties in the schema's order, required
 * ones always, optional ones when the model chooses; no others are written
 * (additionalProperties only ever allows more, so leaving them out obeys
 * it). anyOf and oneOf are alternatives (oneOf's "exactly one" is not
 * checked: overlapping branches may match twice). $ref follows JSON
 * pointers inside the document ("#", "#/$defs/X", "#/definitions/X"),
 * recursion included.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/schema.h"
#include "format/json_util.h"
#include "util/error.h"

void sc_fail(sc *c, sw_status st, const char *fmt, ...) {
    if (c->st != SW_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    c->st = st;
}

uint32_t sc_rule(sc *c, gseq *alts, uint32_t n) {
    const uint32_t r = grammar_rule_new(c->g);
    grammar_define(c->g, r, alts, n);
    return r;
}

uint32_t sc_literal(sc *c, const char *p, size_t n) {
    gseq s = {0};
    gseq_lit(&s, p, n);
    return sc_rule(c, &s, 1);
}

static const char *compact(json_object *v) {
    return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
}

uint32_t sc_json_literal(sc *c, json_object *v) {
    const char *t = v == NULL ? "null" : compact(v);
    return sc_literal(c, t, strlen(t));
}

/* Keywords with no effect on the text (annotations), and the ones handled. */
static const char *const IGNORED[] = {"title", "description", "default", "examples", "$schema",
                                      "$id", "$comment", "deprecated", "readOnly", "writeOnly",
                                      "$defs", "definitions", "strict", "discriminator", NULL};
static const char *const KNOWN[] = {"type", "properties", "required", "additionalProperties",
                                    "items", "minItems", "maxItems", "enum", "const", "anyOf",
                                    "oneOf", "allOf", "$ref", "minLength", "maxLength",
                                    "minimum", "maximum", "exclusiveMinimum",
                                    "exclusiveMaximum", "format", "nullable", NULL};

static bool in_list(const char *const *list, const char *k) {
    for (; *list != NULL; list++)
        if (!strcmp(*list, k))
            return true;
    return false;
}

/* Refuses the first keyword of s this compiler does not know. */
static bool check_keywords(sc *c, json_object *s) {
    json_object_object_foreach(s, key, val) {
        (void)val;
        if (in_list(IGNORED, key) || in_list(KNOWN, key))
            continue;
        if (!strcmp(key, "pattern") || !strcmp(key, "patternProperties"))
            sc_fail(c, SW_ERR_UNSUPPORTED, "JSON schema keyword \"%s\" (regular expressions) "
                    "is not supported", key);
        else
            sc_fail(c, SW_ERR_UNSUPPORTED, "JSON schema keyword \"%s\" is not supported", key);
        return false;
    }
    return true;
}

/* A combinator ($ref, anyOf, oneOf, allOf) stands alone: a constraint
 * beside it would have to hold too, which alternatives cannot express. */
static bool alone(sc *c, json_object *s, const char *comb) {
    json_object_object_foreach(s, key, val) {
        (void)val;
        if (strcmp(key, comb) != 0 && !in_list(IGNORED, key)) {
            sc_fail(c, SW_ERR_UNSUPPORTED, "\"%s\" beside \"%s\" in one schema is not "
                    "supported (move it into the branches)", key, comb);
            return false;
        }
    }
    return true;
}

/* Whether JSON value v is of s's "type" (true without one). */
static bool has_type(json_object *v, json_object *s) {
    json_object *t = NULL;
    if (!json_object_object_get_ex(s, "type", &t))
        return true;
    const bool list = json_object_is_type(t, json_type_array);
    const size_t n = list ? json_object_array_length(t) : 1;
    const json_type jt = json_object_get_type(v);
    for (size_t i = 0; i < n; i++) {
        const char *name = json_object_get_string(list ? json_object_array_get_idx(t, i) : t);
        if ((!strcmp(name, "string") && jt == json_type_string) ||
            (!strcmp(name, "integer") && jt == json_type_int) ||
            (!strcmp(name, "number") && (jt == json_type_int || jt == json_type_double)) ||
            (!strcmp(name, "boolean") && jt == json_type_boolean) ||
            (!strcmp(name, "null") && jt == json_type_null) ||
            (!strcmp(name, "object") && jt == json_type_object) ||
            (!strcmp(name, "array") && jt == json_type_array))
            return true;
    }
    return false;
}

/* The schema a local $ref points at, or NULL after a failure. */
static json_object *resolve(sc *c, const char *ref) {
    if (ref[0] != '#') {
        sc_fail(c, SW_ERR_UNSUPPORTED, "$ref \"%s\": only references inside the schema "
                "(\"#/...\") are supported", ref);
        return NULL;
    }
    json_object *at = c->doc;
    for (const char *p = ref + 1; *p == '/' && at != NULL;) {
        char part[256];
        size_t n = 0;
        for (p++; *p && *p != '/' && n + 1 < sizeof part; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1'))
                ch = *++p == '0' ? '~' : '/';
            part[n++] = ch;
        }
        part[n] = '\0';
        json_object *next = NULL;
        if (json_object_is_type(at, json_type_object) && json_object_object_get_ex(at, part, &next))
            at = next;
        else if (json_object_is_type(at, json_type_array) && atoi(part) >= 0 &&
                 (size_t)atoi(part) < json_object_array_length(at))
            at = json_object_array_get_idx(at, (size_t)atoi(part));
        else
            at = NULL;
    }
    if (at == NULL)
        sc_fail(c, SW_ERR_ARG, "$ref \"%s\" points at nothing in the schema", ref);
    return at;
}

static uint32_t ref_rule(sc *c, const char *ref) {
    json_object *target = resolve(c, ref);
    if (target == NULL)
        return SC_NONE;
    for (uint32_t i = 0; i < c->n_refs; i++)
        if (c->refs[i].target == target)
            return c->refs[i].rule;
    if (c->n_refs == SC_MAX_REFS) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "more than %d distinct $ref targets", SC_MAX_REFS);
        return SC_NONE;
    }
    /* reserved before compiling the target, so a recursive $ref finds it */
    const uint32_t r = grammar_rule_new(c->g);
    c->refs[c->n_refs].target = target;
    c->refs[c->n_refs++].rule = r;
    const uint32_t body = sc_schema(c, target);
    gseq s = {0};
    gseq_ref(&s, body);
    grammar_define(c->g, r, &s, 1);
    return r;
}

/* anyOf / oneOf / enum: one alternative per element of array arr (an
 * enum's values of the schema's type only). */
static uint32_t alternatives(sc *c, json_object *s, json_object *arr, const char *key,
                             bool literal) {
    if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0) {
        sc_fail(c, SW_ERR_ARG, "\"%s\" must be a non-empty array", key);
        return SC_NONE;
    }
    const size_t n = json_object_array_length(arr);
    if (n > 100) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "\"%s\" with %zu entries (at most 100)", key, n);
        return SC_NONE;
    }
    gseq alts[100] = {{0}};
    uint32_t k = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (!literal || has_type(e, s))
            gseq_ref(&alts[k++], literal ? sc_json_literal(c, e) : sc_schema(c, e));
    }
    if (k == 0)
        sc_fail(c, SW_ERR_ARG, "no value of \"%s\" has the schema's type", key);
    return sc_rule(c, alts, k);
}

/* The property named key of an object schema: '"key":' value. */
static void member(sc *c, gseq *s, const char *key, json_object *schema) {
    json_object *k = json_object_new_string(key);
    const char *t = compact(k);
    gseq_lit(s, t, strlen(t));
    gseq_byte(s, ':');
    json_object_put(k);
    gseq_ref(s, sc_schema(c, schema));
}

static bool is_required(json_object *req, const char *key) {
    for (size_t i = 0; req != NULL && i < json_object_array_length(req); i++) {
        json_object *e = json_object_array_get_idx(req, i);
        if (json_object_is_type(e, json_type_string) && !strcmp(json_object_get_string(e), key))
            return true;
    }
    return false;
}

/* The object's rest from property k on: first[k] when none has been
 * written yet, after[k] when one has (a comma goes first). Built from the
 * last property back. */
static uint32_t object_props(sc *c, json_object *props, json_object *req) {
    const size_t n = (size_t)json_object_object_length(props);
    uint32_t first = sc_literal(c, "}", 1), after = first;
    const char **keys = malloc((n + 1) * sizeof *keys);
    json_object **vals = malloc((n + 1) * sizeof *vals);
    if (keys == NULL || vals == NULL) {
        sc_fail(c, SW_ERR_OOM_HOST, "out of host memory for a schema");
        free(keys);
        free(vals);
        return SC_NONE;
    }
    size_t i = 0;
    json_object_object_foreach(props, key, val) {
        keys[i] = key;
        vals[i++] = val;
    }
    while (i-- > 0) {
        const bool must = is_required(req, keys[i]);
        gseq f[2] = {0}, a[2] = {0};
        member(c, &f[0], keys[i], vals[i]);
        gseq_ref(&f[0], after);
        gseq_byte(&a[0], ',');
        member(c, &a[0], keys[i], vals[i]);
        gseq_ref(&a[0], after);
        if (!must) {
            gseq_ref(&f[1], first);
            gseq_ref(&a[1], after);
        }
        first = sc_rule(c, f, must ? 1 : 2);
        after = sc_rule(c, a, must ? 1 : 2);
    }
    free(keys);
    free(vals);
    return first;
}

static uint32_t object_schema(sc *c, json_object *s) {
    json_object *props = NULL, *req = NULL, *add = NULL;
    json_object_object_get_ex(s, "properties", &props);
    json_object_object_get_ex(s, "required", &req);
    json_object_object_get_ex(s, "additionalProperties", &add);
    if ((props != NULL && !json_object_is_type(props, json_type_object)) ||
        (req != NULL && !json_object_is_type(req, json_type_array))) {
        sc_fail(c, SW_ERR_ARG, "\"properties\" must be an object and \"required\" an array");
        return SC_NONE;
    }
    for (size_t i = 0; req != NULL && i < json_object_array_length(req); i++) {
        json_object *e = json_object_array_get_idx(req, i), *p = NULL;
        const char *name = json_object_get_string(e);
        if (!json_object_is_type(e, json_type_string) || props == NULL ||
            !json_object_object_get_ex(props, name, &p)) {
            sc_fail(c, SW_ERR_UNSUPPORTED, "required property \"%s\" is not among "
                    "\"properties\"", name ? name : "?");
            return SC_NONE;
        }
    }
    const bool closed = add != NULL && json_object_is_type(add, json_type_boolean) &&
                        !json_object_get_boolean(add);
    if (props == NULL && !closed)
        return sc_any_object(c);
    gseq s1 = {0};
    gseq_byte(&s1, '{');
    if (props == NULL)
        gseq_byte(&s1, '}');
    else
        gseq_ref(&s1, object_props(c, props, req));
    return sc_rule(c, &s1, 1);
}

static uint32_t array_schema(sc *c, json_object *s) {
    json_object *items = NULL, *v = NULL;
    json_object_object_get_ex(s, "items", &items);
    if (items != NULL && json_object_is_type(items, json_type_array)) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "\"items\" as an array (tuples) is not supported");
        return SC_NONE;
    }
    const int64_t lo = json_object_object_get_ex(s, "minItems", &v) ? json_object_get_int64(v) : 0;
    const int64_t hi = json_object_object_get_ex(s, "maxItems", &v) ? json_object_get_int64(v) : -1;
    if (lo < 0 || lo > SC_MAX_COUNT || hi > SC_MAX_COUNT || (hi >= 0 && hi < lo)) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "minItems %lld / maxItems %lld: counts from 0 to %d, "
                "minItems <= maxItems", (long long)lo, (long long)hi, SC_MAX_COUNT);
        return SC_NONE;
    }
    const uint32_t item = items != NULL ? sc_schema(c, items) : sc_any_value(c);
    /* rest[k]: k items written; "]" once k >= lo, "," item rest[k+1] while k < hi */
    const int64_t top = hi >= 0 ? hi : lo > 1 ? lo : 1; /* rest[top] loops without a maximum */
    uint32_t next = SC_NONE;
    for (int64_t k = top; k >= 1; k--) {
        gseq a[2] = {0};
        uint32_t n = 0;
        if (k >= lo)
            gseq_byte(&a[n++], ']');
        const uint32_t self = grammar_rule_new(c->g);
        if (k < hi || hi < 0) {
            gseq_byte(&a[n], ',');
            gseq_ref(&a[n], item);
            gseq_ref(&a[n++], k == top ? self : next);
        }
        grammar_define(c->g, self, a, n);
        next = self;
    }
    gseq a[2] = {0};
    uint32_t n = 0;
    gseq_byte(&a[n], '[');
    gseq_byte(&a[n++], ']');
    if (lo > 0 || hi != 0) {
        gseq_byte(&a[n], '[');
        gseq_ref(&a[n], item);
        gseq_ref(&a[n++], next);
    }
    if (lo > 0) { /* "[]" is not allowed: drop it */
        gseq_free(&a[0]);
        a[0] = a[1];
        a[1] = (gseq){0};
        n = 1;
    }
    return sc_rule(c, a, n);
}

/* One "type" name's rule. */
static uint32_t type_rule(sc *c, json_object *s, const char *t) {
    if (!strcmp(t, "string"))
        return sc_string(c, s);
    if (!strcmp(t, "integer"))
        return sc_integer(c, s);
    if (!strcmp(t, "number"))
        return sc_number(c, s);
    if (!strcmp(t, "boolean")) {
        gseq a[2] = {0};
        gseq_lit(&a[0], "true", 4);
        gseq_lit(&a[1], "false", 5);
        return sc_rule(c, a, 2);
    }
    if (!strcmp(t, "null"))
        return sc_literal(c, "null", 4);
    if (!strcmp(t, "object"))
        return object_schema(c, s);
    if (!strcmp(t, "array"))
        return array_schema(c, s);
    sc_fail(c, SW_ERR_ARG, "unknown type \"%s\"", t);
    return SC_NONE;
}

/* "type" (a name or a list of names; with "nullable": true, null too),
 * or the type its keywords imply. */
static uint32_t typed(sc *c, json_object *s) {
    json_object *t = NULL, *nl = NULL;
    json_object_object_get_ex(s, "type", &t);
    const bool nullable = json_object_object_get_ex(s, "nullable", &nl) &&
                          json_object_get_boolean(nl);
    gseq alts[9] = {0};
    uint32_t n = 0;
    if (t == NULL) {
        const bool obj = json_object_object_get_ex(s, "properties", NULL);
        const bool arr = json_object_object_get_ex(s, "items", NULL);
        gseq_ref(&alts[n++], obj ? object_schema(c, s) : arr ? array_schema(c, s)
                                                              : sc_any_value(c));
    } else if (json_object_is_type(t, json_type_string)) {
        gseq_ref(&alts[n++], type_rule(c, s, json_object_get_string(t)));
    } else if (json_object_is_type(t, json_type_array) && json_object_array_length(t) > 0 &&
               json_object_array_length(t) <= 7) {
        for (size_t i = 0; i < json_object_array_length(t); i++)
            gseq_ref(&alts[n++], type_rule(c, s, json_object_get_string(
                                                     json_object_array_get_idx(t, i))));
    } else {
        sc_fail(c, SW_ERR_ARG, "\"type\" must be a type name or a list of them");
    }
    if (nullable)
        gseq_lit(&alts[n++], "null", 4);
    return sc_rule(c, alts, n);
}

/* allOf of one schema (pydantic wraps a $ref so); more cannot be merged here. */
static uint32_t all_of(sc *c, json_object *v) {
    if (json_object_is_type(v, json_type_array) && json_object_array_length(v) == 1)
        return sc_schema(c, json_object_array_get_idx(v, 0));
    sc_fail(c, SW_ERR_UNSUPPORTED, "\"allOf\" with more than one schema is not supported");
    return SC_NONE;
}

uint32_t sc_schema(sc *c, json_object *s) {
    json_object *v = NULL;
    if (c->st != SW_OK)
        return SC_NONE;
    if (json_object_is_type(s, json_type_boolean)) {
        if (json_object_get_boolean(s))
            return sc_any_value(c);
        sc_fail(c, SW_ERR_ARG, "the schema false allows nothing");
        return SC_NONE;
    }
    if (!json_object_is_type(s, json_type_object)) {
        sc_fail(c, SW_ERR_ARG, "a schema must be an object or a boolean");
        return SC_NONE;
    }
    if (c->depth >= SC_MAX_DEPTH) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "the schema nests deeper than %d", SC_MAX_DEPTH);
        return SC_NONE;
    }
    if (!check_keywords(c, s))
        return SC_NONE;
    c->depth++;
    uint32_t r = SC_NONE;
    if (json_object_object_get_ex(s, "$ref", &v))
        r = json_object_is_type(v, json_type_string) && alone(c, s, "$ref")
                ? ref_rule(c, json_object_get_string(v)) : SC_NONE;
    else if (json_object_object_get_ex(s, "const", &v))
        r = sc_json_literal(c, v);
    else if (json_object_object_get_ex(s, "enum", &v))
        r = alternatives(c, s, v, "enum", true);
    else if (json_object_object_get_ex(s, "anyOf", &v))
        r = alone(c, s, "anyOf") ? alternatives(c, s, v, "anyOf", false) : SC_NONE;
    else if (json_object_object_get_ex(s, "oneOf", &v))
        r = alone(c, s, "oneOf") ? alternatives(c, s, v, "oneOf", false) : SC_NONE;
    else if (json_object_object_get_ex(s, "allOf", &v))
        r = alone(c, s, "allOf") ? all_of(c, v) : SC_NONE;
    else
        r = typed(c, s);
    c->depth--;
    if (r == SC_NONE)
        sc_fail(c, SW_ERR_ARG, "invalid $ref");
    return r;
}

/* ---- the public calls ------------------------------------------------------ */

static sw_status compile(json_object *doc, bool object_only, sw_grammar **out) {
    sc *c = calloc(1, sizeof *c);
    sw_grammar *g = NULL;
    if (c == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a schema");
    sw_status st = grammar_create(&g);
    if (st != SW_OK) {
        free(c);
        return st;
    }
    c->g = g;
    c->doc = doc;
    c->r_chars = c->r_string = c->r_number = c->r_value = c->r_object = c->r_array = SC_NONE;
    for (int i = 0; i < 17; i++)
        c->r_digits[i] = SC_NONE;
    const uint32_t root = object_only ? sc_any_object(c) : sc_schema(c, doc);
    st = c->st != SW_OK ? sw_errorf(c->st, "%s", c->msg) : SW_OK;
    if (st == SW_OK) {
        g->root = root;
        st = grammar_finish(g);
    }
    free(c);
    if (st != SW_OK) {
        grammar_unref(g);
        return st;
    }
    *out = g;
    return SW_OK;
}

sw_status sw_grammar_from_json_schema(const char *schema, size_t len, sw_grammar **out) {
    json_object *doc = NULL;
    if (out == NULL || schema == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_grammar_from_json_schema: NULL argument");
    *out = NULL;
    char *text = malloc(len + 1); /* a space ends a bare literal ("true") for the parser */
    if (text == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a schema");
    memcpy(text, schema, len);
    text[len] = ' ';
    const sw_status pst = jsonu_parse(text, len + 1, "the JSON schema", &doc);
    free(text);
    if (pst != SW_OK)
        return sw_error_prefix(SW_ERR_ARG, "invalid schema");
    const sw_status st = compile(doc, false, out);
    json_object_put(doc);
    return st;
}

sw_status sw_grammar_json_object(sw_grammar **out) {
    if (out == NULL)
        return sw_errorf(SW_ERR_ARG, "sw_grammar_json_object: NULL argument");
    *out = NULL;
    return compile(NULL, true, out);
}

void sw_grammar_destroy(sw_grammar *g) { grammar_unref(g); }

sw_grammar *sw_grammar_ref(sw_grammar *g) {
    if (g != NULL)
        grammar_ref(g);
    return g;
}

sw_status sw_grammar_check(const sw_grammar *g, const char *text, size_t len, int *complete) {
    if (g == NULL || (text == NULL && len > 0))
        return sw_errorf(SW_ERR_ARG, "sw_grammar_check: NULL argument");
    gstate *s = malloc(2 * sizeof *s);
    if (s == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory for a grammar check");
    gstate_start(g, &s[0]);
    int cur = 0;
    size_t i = 0;
    for (; i < len && gstate_advance(g, &s[cur], (uint8_t)text[i], &s[1 - cur]); i++)
        cur = 1 - cur;
    const bool ok = i == len;
    if (complete != NULL)
        *complete = ok && s[cur].accept;
    free(s);
    return ok ? SW_OK
              : sw_errorf(SW_ERR_ARG, "the text leaves the grammar at byte %zu", i);
}

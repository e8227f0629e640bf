/*
 * schema.h — the JSON-schema compiler's shared state (schema.c: keywords,
 * objects, arrays, combinators and references; schema_types.c: strings,
 * numbers, integer ranges, formats and the generic JSON value). Output is
 * compact JSON (no whitespace), properties in the schema's order.
 * A failure sets `st` and `msg` once; later calls see it and do nothing.
 */
#ifndef SW_GRAMMAR_SCHEMA_H
#define SW_GRAMMAR_SCHEMA_H

#include <json-c/json.h>

#include "grammar/grammar.h"

enum { SC_NONE = UINT32_MAX, SC_MAX_REFS = 256, SC_MAX_COUNT = 512, SC_MAX_DEPTH = 64 };

typedef struct sc {
    sw_grammar *g;
    json_object *doc;            /* the whole schema document ($ref "#/..." resolves in it) */
    sw_status st;
    char msg[320];
    int depth;
    struct {
        json_object *target;     /* the schema a $ref names */
        uint32_t rule;
    } refs[SC_MAX_REFS];
    uint32_t n_refs;
    /* shared rules, made on first use */
    uint32_t r_chars, r_string, r_number, r_value, r_object, r_array, r_digits[17];
} sc;

/* Records the first failure: SW_ERR_UNSUPPORTED (a feature this compiler
 * lacks; the server's 400 names it) or SW_ERR_ARG (an invalid schema). */
void sc_fail(sc *c, sw_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The rule of schema s (any schema value), or SC_NONE after a failure. */
uint32_t sc_schema(sc *c, json_object *s);

/* A rule of the given alternatives (n sequences, consumed). */
uint32_t sc_rule(sc *c, gseq *alts, uint32_t n);
/* A rule matching exactly the literal bytes. */
uint32_t sc_literal(sc *c, const char *p, size_t n);
/* A rule matching the compact JSON text of value v. */
uint32_t sc_json_literal(sc *c, json_object *v);

/* schema_types.c */
uint32_t sc_string(sc *c, json_object *s);     /* minLength, maxLength, format */
uint32_t sc_number(sc *c, json_object *s);     /* "number": minimum 0 only */
uint32_t sc_integer(sc *c, json_object *s);    /* bounds: exact ranges */
uint32_t sc_any_value(sc *c);                  /* any JSON value */
uint32_t sc_any_object(sc *c);                 /* any JSON object */
uint32_t sc_any_array(sc *c);
uint32_t sc_plain_string(sc *c);

#endif

/*
 * schema_types.c — the leaf types of the JSON-schema compiler (schema.h):
 * strings (any UTF-8, escapes, minLength/maxLength counted in characters,
 * the formats date, time, date-time and uuid), numbers (at most 16 integer
 * digits, 6 fraction digits and a 2-digit exponent: bounded so a model
 * cannot run on forever inside one), integers with exact ranges
 * (minimum/maximum, exclusive too, as digit-by-digit alternatives), and
 * any JSON value for schemas that allow one.
 *
 * The repeated part of a string is one rule whose alternatives each end
 * by calling it again in tail position: a whole run of characters stays
 * inside one rule, which the token-mask cache (mask.c) relies on to
 * decide most tokens once per grammar.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "grammar/schema.h"

static const uint8_t PLAIN[] = {0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f}; /* not " \ or controls */
static const uint8_t DIGIT[] = {'0', '9'};
static const uint8_t HEX[] = {'0', '9', 'a', 'f', 'A', 'F'};
static const uint8_t ESC[] = {'"', '"', '\\', '\\', '/', '/', 'b', 'b',
                              'f', 'f', 'n', 'n', 'r', 'r', 't', 't'};

/* One character's alternatives, each followed by a tail call of `next`
 * (SC_NONE: nothing follows), appended to alts; returns how many. */
static uint32_t char_alts(sc *c, gseq *alts, uint32_t next) {
    static const uint8_t u2[] = {0xc2, 0xdf}, cont[] = {0x80, 0xbf};
    static const uint8_t e0[] = {0xa0, 0xbf}, e1[] = {0xe1, 0xec, 0xee, 0xef}, ed[] = {0x80, 0x9f};
    static const uint8_t f0[] = {0x90, 0xbf}, f1[] = {0xf1, 0xf3}, f4[] = {0x80, 0x8f};
    sw_grammar *g = c->g;
    const uint32_t CONT = grammar_ranges(g, cont, 1);
    uint32_t n = 0;
    gseq_set(&alts[n++], grammar_ranges(g, PLAIN, 3));
    gseq_byte(&alts[n], '\\');
    gseq_set(&alts[n++], grammar_ranges(g, ESC, 8));
    gseq_lit(&alts[n], "\\u", 2);
    for (int i = 0; i < 4; i++)
        gseq_set(&alts[n], grammar_ranges(g, HEX, 3));
    n++;
    gseq_set(&alts[n], grammar_ranges(g, u2, 1));
    gseq_set(&alts[n++], CONT);
    gseq_byte(&alts[n], 0xe0);
    gseq_set(&alts[n], grammar_ranges(g, e0, 1));
    gseq_set(&alts[n++], CONT);
    gseq_set(&alts[n], grammar_ranges(g, e1, 2));
    gseq_set(&alts[n], CONT);
    gseq_set(&alts[n++], CONT);
    gseq_byte(&alts[n], 0xed);
    gseq_set(&alts[n], grammar_ranges(g, ed, 1));
    gseq_set(&alts[n++], CONT);
    gseq_byte(&alts[n], 0xf0);
    gseq_set(&alts[n], grammar_ranges(g, f0, 1));
    gseq_set(&alts[n], CONT);
    gseq_set(&alts[n++], CONT);
    gseq_set(&alts[n], grammar_ranges(g, f1, 1));
    for (int i = 0; i < 3; i++)
        gseq_set(&alts[n], CONT);
    n++;
    gseq_byte(&alts[n], 0xf4);
    gseq_set(&alts[n], grammar_ranges(g, f4, 1));
    gseq_set(&alts[n], CONT);
    gseq_set(&alts[n++], CONT);
    for (uint32_t i = 0; next != SC_NONE && i < n; i++)
        gseq_ref(&alts[i], next);
    return n;
}

enum { N_CHAR_ALTS = 10 };

/* chars ::= char chars | "" : any run of characters. */
static uint32_t chars_rule(sc *c) {
    if (c->r_chars != SC_NONE)
        return c->r_chars;
    const uint32_t r = grammar_rule_new(c->g);
    gseq alts[N_CHAR_ALTS + 1] = {0};
    const uint32_t n = char_alts(c, alts, r);
    grammar_define(c->g, r, alts, n + 1); /* the last, empty: the run may end */
    return c->r_chars = r;
}

uint32_t sc_plain_string(sc *c) {
    if (c->r_string != SC_NONE)
        return c->r_string;
    gseq s = {0};
    gseq_byte(&s, '"');
    gseq_ref(&s, chars_rule(c));
    gseq_byte(&s, '"');
    return c->r_string = sc_rule(c, &s, 1);
}

/* A string of min..max characters (max SC_NONE: no bound). */
static uint32_t bounded_string(sc *c, uint32_t min, uint32_t max) {
    gseq one[N_CHAR_ALTS] = {0};
    const uint32_t r_one = sc_rule(c, one, char_alts(c, one, SC_NONE));
    uint32_t rest = max == SC_NONE ? chars_rule(c) : SC_NONE;
    for (uint32_t k = 0; max != SC_NONE && k <= max - min; k++) { /* up to k more */
        gseq alts[N_CHAR_ALTS + 1] = {0};
        const uint32_t n = k > 0 ? char_alts(c, alts, rest) : 0;
        rest = sc_rule(c, alts, n + 1);
    }
    gseq s = {0};
    gseq_byte(&s, '"');
    for (uint32_t i = 0; i < min; i++)
        gseq_ref(&s, r_one);
    gseq_ref(&s, rest);
    gseq_byte(&s, '"');
    return sc_rule(c, &s, 1);
}

/* n digits exactly, appended to s. */
static void digits(sc *c, gseq *s, int n) {
    for (int i = 0; i < n; i++)
        gseq_set(s, grammar_ranges(c->g, DIGIT, 1));
}

/* Appends two characters: one of [a_lo-a_hi], then one of [b_lo-b_hi]. */
static void pair(sc *c, gseq *s, char a_lo, char a_hi, char b_lo, char b_hi) {
    const uint8_t a[2] = {(uint8_t)a_lo, (uint8_t)a_hi}, b[2] = {(uint8_t)b_lo, (uint8_t)b_hi};
    gseq_set(s, grammar_ranges(c->g, a, 1));
    gseq_set(s, grammar_ranges(c->g, b, 1));
}

/* hh:mm:ss, three fraction digits or none, then Z or +hh:mm / -hh:mm. */
static uint32_t time_rule(sc *c) {
    static const uint8_t pm[] = {'+', '+', '-', '-'};
    gseq a[2] = {0};
    pair(c, &a[0], '0', '1', '0', '9');
    pair(c, &a[1], '2', '2', '0', '3');
    const uint32_t hour = sc_rule(c, a, 2);
    pair(c, &a[0], '0', '5', '0', '9');
    const uint32_t min60 = sc_rule(c, a, 1);
    gseq_byte(&a[0], 'Z');
    gseq_set(&a[1], grammar_ranges(c->g, pm, 2));
    gseq_ref(&a[1], hour);
    gseq_byte(&a[1], ':');
    gseq_ref(&a[1], min60);
    const uint32_t zone = sc_rule(c, a, 2);
    gseq_byte(&a[0], '.');
    digits(c, &a[0], 3);
    const uint32_t frac = sc_rule(c, a, 2); /* a[1] empty: no fraction */
    gseq t = {0};
    gseq_ref(&t, hour);
    gseq_byte(&t, ':');
    gseq_ref(&t, min60);
    gseq_byte(&t, ':');
    gseq_ref(&t, min60);
    gseq_ref(&t, frac);
    gseq_ref(&t, zone);
    return sc_rule(c, &t, 1);
}

/* YYYY-MM-DD: months 01-12, days 01-31. */
static uint32_t date_rule(sc *c) {
    gseq a[3] = {0};
    pair(c, &a[0], '0', '0', '1', '9');
    pair(c, &a[1], '1', '1', '0', '2');
    const uint32_t month = sc_rule(c, a, 2);
    pair(c, &a[0], '0', '0', '1', '9');
    pair(c, &a[1], '1', '2', '0', '9');
    pair(c, &a[2], '3', '3', '0', '1');
    const uint32_t day = sc_rule(c, a, 3);
    gseq d = {0};
    digits(c, &d, 4);
    gseq_byte(&d, '-');
    gseq_ref(&d, month);
    gseq_byte(&d, '-');
    gseq_ref(&d, day);
    return sc_rule(c, &d, 1);
}

/* The formats: "date", "time" and "date-time" (RFC 3339: the two joined by
 * T), "uuid" (8-4-4-4-12 hex digits), each inside quotes. */
static uint32_t format_string(sc *c, const char *f) {
    gseq s = {0};
    gseq_byte(&s, '"');
    if (!strcmp(f, "date") || !strcmp(f, "date-time"))
        gseq_ref(&s, date_rule(c));
    if (!strcmp(f, "date-time"))
        gseq_byte(&s, 'T');
    if (!strcmp(f, "time") || !strcmp(f, "date-time"))
        gseq_ref(&s, time_rule(c));
    for (int i = 0; !strcmp(f, "uuid") && i < 32; i++) {
        if (i == 8 || i == 12 || i == 16 || i == 20)
            gseq_byte(&s, '-');
        gseq_set(&s, grammar_ranges(c->g, HEX, 3));
    }
    gseq_byte(&s, '"');
    return sc_rule(c, &s, 1);
}

/* A non-negative count keyword ("minLength"), or def when absent. */
static uint32_t count_of(sc *c, json_object *s, const char *key, uint32_t def) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(s, key, &v) || v == NULL)
        return def;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
        sc_fail(c, SW_ERR_ARG, "\"%s\" must be a non-negative integer", key);
        return def;
    }
    const int64_t n = json_object_get_int64(v);
    if (n > SC_MAX_COUNT) {
        sc_fail(c, SW_ERR_UNSUPPORTED, "\"%s\": %lld is above the %d this server supports",
                key, (long long)n, SC_MAX_COUNT);
        return def;
    }
    return (uint32_t)n;
}

uint32_t sc_string(sc *c, json_object *s) {
    json_object *f = NULL;
    if (json_object_object_get_ex(s, "format", &f) && f != NULL) {
        const char *name = json_object_get_string(f);
        if (!strcmp(name, "date") || !strcmp(name, "time") || !strcmp(name, "date-time") ||
            !strcmp(name, "uuid"))
            return format_string(c, name);
        sc_fail(c, SW_ERR_UNSUPPORTED, "string format \"%s\" is not supported (date, time, "
                "date-time and uuid are)", name);
        return SC_NONE;
    }
    const uint32_t min = count_of(c, s, "minLength", 0);
    const uint32_t max = count_of(c, s, "maxLength", SC_NONE);
    if (max != SC_NONE && max < min) {
        sc_fail(c, SW_ERR_ARG, "maxLength %u is below minLength %u", max, min);
        return SC_NONE;
    }
    return min == 0 && max == SC_NONE ? sc_plain_string(c) : bounded_string(c, min, max);
}

/* digits_upto(k) ::= [0-9] digits_upto(k-1) | "" : at most k more digits. */
static uint32_t digits_upto(sc *c, int k) {
    if (c->r_digits[k] != SC_NONE)
        return c->r_digits[k];
    gseq a[2] = {0};
    if (k > 0) {
        gseq_set(&a[0], grammar_ranges(c->g, DIGIT, 1));
        gseq_ref(&a[0], digits_upto(c, k - 1));
    }
    return c->r_digits[k] = sc_rule(c, a, k > 0 ? 2 : 1);
}

/* "0" or [1-9] and up to 15 more digits; optional "-" when neg. */
static void int_part(sc *c, gseq *s, bool neg) {
    static const uint8_t nz[] = {'1', '9'};
    gseq a[2] = {0};
    gseq_byte(&a[0], '0');
    gseq_set(&a[1], grammar_ranges(c->g, nz, 1));
    gseq_ref(&a[1], digits_upto(c, 15));
    const uint32_t r_int = sc_rule(c, a, 2);
    if (neg) {
        gseq_byte(&a[0], '-');
        gseq_ref(s, sc_rule(c, a, 2));
    }
    gseq_ref(s, r_int);
}

uint32_t sc_number(sc *c, json_object *s) {
    static const uint8_t e[] = {'e', 'e', 'E', 'E'}, sg[] = {'+', '+', '-', '-'};
    json_object *v = NULL;
    bool nonneg = false;
    if (s == NULL && c->r_number != SC_NONE)
        return c->r_number;
    if (s != NULL && json_object_object_get_ex(s, "minimum", &v) && v != NULL)
        nonneg = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                     ? json_object_get_double(v) == 0.0 : false;
    const char *bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int i = nonneg ? 1 : 0; i < 4; i++)
        if (s != NULL && json_object_object_get_ex(s, bounds[i], NULL)) {
            sc_fail(c, SW_ERR_UNSUPPORTED, "\"%s\" on a number is not supported (only "
                    "\"minimum\": 0; integers take any bounds)", bounds[i]);
            return SC_NONE;
        }
    gseq num = {0}, a[2] = {0};
    int_part(c, &num, !nonneg);
    gseq_byte(&a[0], '.');
    gseq_set(&a[0], grammar_ranges(c->g, DIGIT, 1));
    gseq_ref(&a[0], digits_upto(c, 5));
    gseq_ref(&num, sc_rule(c, a, 2));
    gseq_set(&a[0], grammar_ranges(c->g, sg, 2));
    const uint32_t sign = sc_rule(c, a, 2);
    gseq_set(&a[0], grammar_ranges(c->g, e, 2));
    gseq_ref(&a[0], sign);
    gseq_set(&a[0], grammar_ranges(c->g, DIGIT, 1));
    gseq_ref(&a[0], digits_upto(c, 1)); /* 2 digits: 1e99 at most, finite as a double */
    gseq_ref(&num, sc_rule(c, a, 2));
    const uint32_t r = sc_rule(c, &num, 1);
    if (s == NULL)
        c->r_number = r;
    return r;
}

#define INT_LIM 9999999999999999LL /* 16 digits, as int_part allows */

/* Digit strings of n digits from lo to hi (lo <= hi). Alternatives by the
 * first digit: lo's own (then lo's rest to 9s), the ones between (then any
 * digits), hi's own (then 0s to hi's rest). */
static uint32_t same_len(sc *c, const char *lo, const char *hi, int n) {
    gseq a[3] = {0};
    bool all = true;
    for (int i = 0; i < n; i++)
        all = all && lo[i] == '0' && hi[i] == '9';
    if (all || n == 1) {
        const uint8_t r[2] = {(uint8_t)lo[0], (uint8_t)hi[0]};
        gseq_set(&a[0], grammar_ranges(c->g, r, 1));
        digits(c, &a[0], n - 1); /* all: any digits after */
        return sc_rule(c, a, 1);
    }
    if (lo[0] == hi[0]) {
        gseq_byte(&a[0], (uint8_t)lo[0]);
        gseq_ref(&a[0], same_len(c, lo + 1, hi + 1, n - 1));
        return sc_rule(c, a, 1);
    }
    char nines[17] = "9999999999999999", zeros[17] = "0000000000000000";
    uint32_t k = 0;
    gseq_byte(&a[k], (uint8_t)lo[0]);
    gseq_ref(&a[k++], same_len(c, lo + 1, nines, n - 1));
    if (lo[0] + 1 <= hi[0] - 1) {
        const uint8_t r[2] = {(uint8_t)(lo[0] + 1), (uint8_t)(hi[0] - 1)};
        gseq_set(&a[k], grammar_ranges(c->g, r, 1));
        digits(c, &a[k++], n - 1);
    }
    gseq_byte(&a[k], (uint8_t)hi[0]);
    gseq_ref(&a[k++], same_len(c, zeros, hi + 1, n - 1));
    return sc_rule(c, a, k);
}

static int n_digits(int64_t v) {
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Alternatives for the integers a..b (0 <= a <= b), "-" before each when
 * neg, appended to alts[*n]: one per digit count. */
static void range_alts(sc *c, int64_t a, int64_t b, bool neg, gseq *alts, uint32_t *n) {
    int64_t p = 1;
    for (int len = 1; len <= n_digits(b); len++, p *= 10) {
        const int64_t lo = a > (len == 1 ? 0 : p) ? a : (len == 1 ? 0 : p);
        const int64_t hi = b < p * 10 - 1 ? b : p * 10 - 1;
        if (lo > hi)
            continue;
        char slo[24], shi[24]; /* len digits each: lo and hi have exactly len */
        snprintf(slo, sizeof slo, "%lld", (long long)lo);
        snprintf(shi, sizeof shi, "%lld", (long long)hi);
        if (len == 1 && lo == 0)
            slo[0] = '0';
        if (neg)
            gseq_byte(&alts[*n], '-');
        gseq_ref(&alts[*n], same_len(c, slo, shi, len));
        (*n)++;
    }
}

/* Tightens [*lo, *hi] by bound keyword key of s; false after a failure. */
static bool int_bound(sc *c, json_object *s, const char *key, int64_t *lo, int64_t *hi) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(s, key, &v) || v == NULL)
        return true;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
        sc_fail(c, json_object_is_type(v, json_type_boolean) ? SW_ERR_UNSUPPORTED : SW_ERR_ARG,
                "\"%s\" must be a number (the boolean form of draft 4 is not supported)", key);
        return false;
    }
    double x = json_object_get_double(v);
    x = x < -(double)INT_LIM ? -(double)INT_LIM : x > (double)INT_LIM ? (double)INT_LIM : x;
    const bool ex = !strncmp(key, "exclusive", 9);
    if (strstr(key, "inimum") != NULL) {
        const int64_t b = ex ? (int64_t)floor(x) + 1 : (int64_t)ceil(x);
        *lo = b > *lo ? b : *lo;
    } else {
        const int64_t b = ex ? (int64_t)ceil(x) - 1 : (int64_t)floor(x);
        *hi = b < *hi ? b : *hi;
    }
    return true;
}

uint32_t sc_integer(sc *c, json_object *s) {
    int64_t lo = -INT_LIM, hi = INT_LIM;
    const char *keys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    bool bounded = false;
    for (int i = 0; i < 4; i++) {
        bounded = bounded || json_object_object_get_ex(s, keys[i], NULL);
        if (!int_bound(c, s, keys[i], &lo, &hi))
            return SC_NONE;
    }
    if (lo > hi) {
        sc_fail(c, SW_ERR_ARG, "no integer lies within the bounds given");
        return SC_NONE;
    }
    gseq alts[40] = {0};
    uint32_t n = 0;
    if (!bounded) {
        int_part(c, &alts[0], true);
        return sc_rule(c, alts, 1);
    }
    if (lo < 0)
        range_alts(c, hi < 0 ? -hi : 1, -lo, true, alts, &n);
    if (hi >= 0)
        range_alts(c, lo > 0 ? lo : 0, hi, false, alts, &n);
    return sc_rule(c, alts, n);
}

uint32_t sc_any_value(sc *c) {
    if (c->r_value != SC_NONE)
        return c->r_value;
    const uint32_t r = c->r_value = grammar_rule_new(c->g);
    gseq a[7] = {0};
    gseq_ref(&a[0], sc_any_object(c));
    gseq_ref(&a[1], sc_any_array(c));
    gseq_ref(&a[2], sc_plain_string(c));
    gseq_ref(&a[3], sc_number(c, NULL));
    gseq_lit(&a[4], "true", 4);
    gseq_lit(&a[5], "false", 5);
    gseq_lit(&a[6], "null", 4);
    grammar_define(c->g, r, a, 7);
    return r;
}

/* open (item sep)* close with at least one item, or open close: `item`
 * is a member ("key":value) or a value. */
static uint32_t any_list(sc *c, uint32_t r, char open, char close, bool members) {
    gseq a[2] = {0}, item = {0};
    if (members) {
        gseq_ref(&item, sc_plain_string(c));
        gseq_byte(&item, ':');
    }
    gseq_ref(&item, sc_any_value(c));
    const uint32_t r_item = sc_rule(c, &item, 1);
    const uint32_t more = grammar_rule_new(c->g);
    gseq_byte(&a[0], ',');
    gseq_ref(&a[0], r_item);
    gseq_ref(&a[0], more);
    grammar_define(c->g, more, a, 2);
    gseq_byte(&a[0], (uint8_t)open);
    gseq_byte(&a[0], (uint8_t)close);
    gseq_byte(&a[1], (uint8_t)open);
    gseq_ref(&a[1], r_item);
    gseq_ref(&a[1], more);
    gseq_byte(&a[1], (uint8_t)close);
    grammar_define(c->g, r, a, 2);
    return r;
}

uint32_t sc_any_object(sc *c) {
    if (c->r_object != SC_NONE)
        return c->r_object;
    c->r_object = grammar_rule_new(c->g);
    return any_list(c, c->r_object, '{', '}', true);
}

uint32_t sc_any_array(sc *c) {
    if (c->r_array != SC_NONE)
        return c->r_array;
    c->r_array = grammar_rule_new(c->g);
    return any_list(c, c->r_array, '[', ']', false);
}

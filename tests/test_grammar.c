/*
 * test_grammar.c — structured output (src/grammar, spillway_grammar.h).
 *
 * 1. The compiler and matcher: for each of a suite of schemas, compact JSON
 *    texts that validate are accepted whole, byte by byte
 *    (sw_grammar_check: complete), and texts that break the schema are
 *    refused or left incomplete; json_object likewise.
 * 2. Unsupported and invalid schemas fail with the status and a message
 *    naming the keyword.
 * 3. Token masks on the tiny Gemma 3's vocabulary: at every step of random
 *    walks through each schema, the cached mask (rule-local classes plus
 *    exits) equals a brute-force check of every token against the whole
 *    state, end tokens are allowed exactly where the text is complete, and
 *    each walk's text is accepted by sw_grammar_check.
 * 4. The scheduler: greedy requests with a grammar on the tiny model end
 *    complete (SW_FINISH_EOG) with text the grammar accepts.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "grammar/grammar.h"
#include "spillway_grammar.h"

typedef struct schema_case {
    const char *schema;
    const char *good[5];
    const char *bad[5];
} schema_case;

static const schema_case CASES[] = {
    {"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":"
     "\"integer\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
     {"{\"name\":\"Bob\",\"age\":42}", "{\"name\":\"\",\"age\":-7}",
      "{\"name\":\"caf\xc3\xa9 \\\"x\\\" \\u00e9\",\"age\":0}"},
     {"{\"age\":42,\"name\":\"Bob\"}", "{\"name\":\"Bob\"}", "{\"name\":\"Bob\",\"age\":4.5}",
      "{\"name\":\"Bob\",\"age\":042}", "{\"name\":\"a\nb\",\"age\":1}"}},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"},\"b\":{\"type\":"
     "\"null\"},\"c\":{\"type\":\"number\"}}}",
     {"{}", "{\"a\":true}", "{\"b\":null,\"c\":1.5e-3}", "{\"a\":false,\"b\":null,\"c\":-0.25}",
      "{\"c\":10}"},
     {"{,}", "{\"a\":1}", "{\"c\":01}", "{\"b\":null,\"a\":true}", "{\"a\":true,}"}},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}",
     {"[1]", "[1,2]", "[1,2,3]"},
     {"[]", "[1,2,3,4]", "[1,]", "[\"a\"]"}},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"red\",\"green\"]}}",
     {"[]", "[\"red\"]", "[\"green\",\"red\",\"red\"]"},
     {"[\"blue\"]", "[red]", "[\"re\"]"}},
    {"{\"enum\":[\"a\",1,null,true,{\"k\":[1,2]}]}",
     {"\"a\"", "1", "null", "true", "{\"k\":[1,2]}"},
     {"\"b\"", "2", "false", "{\"k\":[1]}"}},
    {"{\"type\":\"string\",\"enum\":[\"x\",1,\"y\"]}", {"\"x\"", "\"y\""}, {"1"}},
    {"{\"const\":\"fixed/value\"}", {"\"fixed/value\""}, {"\"fixed\\/value\"", "\"other\""}},
    {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":4}",
     {"\"ab\"", "\"abcd\"", "\"\xc3\xa9\xc3\xa9\"", "\"\\n\\t\""},
     {"\"a\"", "\"abcde\"", "\"\"", "\"\xc3\""}},
    {"{\"type\":\"integer\",\"minimum\":-15,\"maximum\":250}",
     {"-15", "-1", "0", "99", "250"},
     {"-16", "251", "1000", "-0", "007"}},
    {"{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1000}",
     {"1", "999", "500"},
     {"0", "1000", "-5"}},
    {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"},{\"type\":\"null\"}]}",
     {"\"x\"", "12", "null"},
     {"true", "1.5", "[]"}},
    {"{\"type\":[\"boolean\",\"null\"]}", {"true", "false", "null"}, {"0", "\"true\""}},
    {"{\"$defs\":{\"Pt\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},"
     "\"y\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]}},\"type\":\"object\","
     "\"properties\":{\"from\":{\"$ref\":\"#/$defs/Pt\"},\"to\":{\"$ref\":\"#/$defs/Pt\"}},"
     "\"required\":[\"from\",\"to\"]}",
     {"{\"from\":{\"x\":0,\"y\":1},\"to\":{\"x\":2.5,\"y\":-3}}"},
     {"{\"from\":{\"x\":0},\"to\":{\"x\":2,\"y\":3}}", "{\"from\":1,\"to\":2}"}},
    {"{\"definitions\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
     "\"integer\"},\"next\":{\"anyOf\":[{\"$ref\":\"#/definitions/node\"},{\"type\":\"null\"}]}},"
     "\"required\":[\"v\",\"next\"]}},\"$ref\":\"#/definitions/node\"}",
     {"{\"v\":1,\"next\":null}", "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3,\"next\":null}}}"},
     {"{\"v\":1}", "{\"v\":1,\"next\":{\"v\":2}}"}},
    {"{\"type\":\"object\",\"properties\":{\"when\":{\"type\":\"string\",\"format\":"
     "\"date-time\"},\"id\":{\"type\":\"string\",\"format\":\"uuid\"}},\"required\":[\"when\","
     "\"id\"]}",
     {"{\"when\":\"2026-12-06T18:30:00Z\",\"id\":\"123e4567-e89b-12d3-a456-426614174000\"}",
      "{\"when\":\"2026-01-31T23:59:59.123+02:00\",\"id\":\"00000000-0000-0000-0000-000000000000\"}"},
     {"{\"when\":\"2026-13-06T18:30:00Z\",\"id\":\"123e4567-e89b-12d3-a456-426614174000\"}",
      "{\"when\":\"yesterday\",\"id\":\"x\"}"}},
    {"{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"items\":{\"type\":"
     "\"string\",\"maxLength\":3}},\"meta\":{\"type\":\"object\"},\"oneOf\":{\"oneOf\":[{\"type\":"
     "\"number\",\"minimum\":0},{\"type\":\"boolean\"}]},\"one\":{\"allOf\":[{\"type\":"
     "\"integer\"}]}},\"required\":[\"tags\",\"meta\"],\"additionalProperties\":false,"
     "\"title\":\"T\",\"description\":\"d\"}",
     {"{\"tags\":[\"a\",\"bcd\"],\"meta\":{}}",
      "{\"tags\":[],\"meta\":{\"k\":[1,{\"z\":null}],\"s\":\"v\"},\"oneOf\":3.5,\"one\":7}"},
     {"{\"tags\":[\"abcd\"],\"meta\":{}}", "{\"tags\":[],\"meta\":[]}",
      "{\"tags\":[],\"meta\":{},\"oneOf\":-1}", "{\"tags\":[],\"meta\":{},\"x\":1}"}},
    {"true", {"{\"a\":[1,\"b\",null]}", "3", "\"s\"", "[]"}, {"{\"a\"}", "tru"}},
};

static void check_case(const schema_case *c, int i) {
    sw_grammar *g = NULL;
    sw_status st = sw_grammar_from_json_schema(c->schema, strlen(c->schema), &g);
    SW_CHECK(st == SW_OK, "schema %d: %s", i, sw_last_error());
    if (g == NULL)
        return;
    for (int k = 0; k < 5 && c->good[k] != NULL; k++) {
        int complete = 0;
        st = sw_grammar_check(g, c->good[k], strlen(c->good[k]), &complete);
        SW_CHECK(st == SW_OK && complete, "schema %d: %s refused (%s)", i, c->good[k],
                 st != SW_OK ? sw_last_error() : "incomplete");
    }
    for (int k = 0; k < 5 && c->bad[k] != NULL; k++) {
        int complete = 0;
        st = sw_grammar_check(g, c->bad[k], strlen(c->bad[k]), &complete);
        SW_CHECK(st != SW_OK || !complete, "schema %d: %s accepted", i, c->bad[k]);
    }
    sw_grammar_destroy(g);
}

static void check_refusals(void) {
    static const struct {
        const char *schema, *word;
        sw_status st;
    } R[] = {
        {"{\"type\":\"string\",\"pattern\":\"^a+$\"}", "pattern", SW_ERR_UNSUPPORTED},
        {"{\"$ref\":\"https://example.com/s.json\"}", "$ref", SW_ERR_UNSUPPORTED},
        {"{\"type\":\"string\",\"format\":\"email\"}", "email", SW_ERR_UNSUPPORTED},
        {"{\"type\":\"number\",\"maximum\":3.5}", "maximum", SW_ERR_UNSUPPORTED},
        {"{\"allOf\":[{\"type\":\"string\"},{\"maxLength\":3}]}", "allOf", SW_ERR_UNSUPPORTED},
        {"{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems", SW_ERR_UNSUPPORTED},
        {"{\"type\":\"object\",\"properties\":{},\"required\":[\"x\"]}", "\"x\"",
         SW_ERR_UNSUPPORTED},
        {"{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}", "no integer", SW_ERR_ARG},
        {"{\"type\":\"wat\"}", "wat", SW_ERR_ARG},
        {"{\"type\":\"object\",\"anyOf\":[{\"required\":[\"a\"]}]}", "beside", SW_ERR_UNSUPPORTED},
        {"{\"type\":\"integer\",\"multipleOf\":3}", "multipleOf", SW_ERR_UNSUPPORTED},
        {"{\"$ref\":\"#/$defs/missing\"}", "missing", SW_ERR_ARG},
        {"{\"type\":", "invalid", SW_ERR_ARG},
    };
    for (size_t i = 0; i < sizeof R / sizeof R[0]; i++) {
        sw_grammar *g = NULL;
        const sw_status st = sw_grammar_from_json_schema(R[i].schema, strlen(R[i].schema), &g);
        SW_CHECK(st == R[i].st && g == NULL && strstr(sw_last_error(), R[i].word) != NULL,
                 "%s: %s (%s), want %s naming %s", R[i].schema, sw_status_name(st),
                 sw_last_error(), sw_status_name(R[i].st), R[i].word);
    }
    /* left-recursive and doubly branching: compiles, and checking ends */
    const char *loop = "{\"anyOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"},{\"type\":\"null\"}]}";
    sw_grammar *g = NULL;
    SW_CHECK_OK(sw_grammar_from_json_schema(loop, strlen(loop), &g));
    int complete = 0;
    SW_CHECK(g != NULL && sw_grammar_check(g, "null", 4, &complete) == SW_OK,
             "a self-referencing anyOf refused null");
    sw_grammar_destroy(g);
    g = NULL;
    SW_CHECK_OK(sw_grammar_json_object(&g));
    const char *obj = "{\"a\":[1,{\"b\":\"c\"}],\"d\":-1.5}";
    SW_CHECK(sw_grammar_check(g, obj, strlen(obj), &complete) == SW_OK && complete,
             "json_object refused an object: %s", sw_last_error());
    SW_CHECK(sw_grammar_check(g, "[1]", 3, &complete) != SW_OK, "json_object took an array");
    sw_grammar_destroy(g);
}

/* Whether token id may follow state s, by brute force over its bytes. */
static bool allowed_brute(const sw_grammar *g, const gvocab *v, const gstate *s, uint32_t id,
                          gstate *tmp) {
    for (uint32_t j = 0; j < v->n_end; j++)
        if ((uint32_t)v->end_ids[j] == id)
            return s->accept;
    const uint32_t len = v->off[id + 1] - v->off[id];
    if (len == 0)
        return false;
    return gstate_accepts(g, s, v->blob + v->off[id], len, tmp);
}

/* A random walk of up to 40 tokens through g, the mask checked against
 * brute force at every step. */
static void walk(sw_grammar *g, const gvocab *v, uint64_t seed, int which) {
    gmatch *gm = NULL;
    gstate *tmp = malloc(2 * sizeof *tmp);
    uint32_t *allowed = malloc(v->n_vocab * sizeof *allowed);
    SW_CHECK_OK(gmatch_create(g, v, &gm));
    char text[8192];
    size_t len = 0;
    bool ended = false;
    int bad = 0;
    for (int step = 0; gm != NULL && tmp && allowed && step < 40 && !ended; step++) {
        const uint64_t *bits = NULL;
        SW_CHECK_OK(gmatch_mask_bits(gm, &bits));
        uint32_t n_allowed = 0;
        for (uint32_t id = 0; bits != NULL && id < v->n_vocab; id++) {
            const bool got = bits[id >> 6] >> (id & 63) & 1;
            if (got != allowed_brute(g, v, gmatch_state(gm), id, tmp) && bad++ < 3)
                SW_CHECK(false, "schema %d step %d: token %u (\"%.*s\") mask %d, brute force %d",
                         which, step, id, (int)(v->off[id + 1] - v->off[id]),
                         (const char *)v->blob + v->off[id], got, !got);
            if (got)
                allowed[n_allowed++] = id;
        }
        SW_CHECK(n_allowed > 0, "schema %d step %d: nothing allowed", which, step);
        if (n_allowed == 0)
            break;
        uint32_t id = allowed[sw_test_rng_next(&seed) % n_allowed];
        for (uint32_t j = 0; j < v->n_end && gmatch_state(gm)->accept; j++)
            if (sw_test_rng_next(&seed) % 4 == 0 || gmatch_done(gm))
                id = (uint32_t)v->end_ids[j];
        SW_CHECK(gmatch_accept(gm, (int32_t)id), "schema %d: allowed token %u refused", which, id);
        const uint32_t n = v->off[id + 1] - v->off[id];
        ended = n == 0;
        if (len + n < sizeof text) {
            memcpy(text + len, v->blob + v->off[id], n);
            len += n;
        }
    }
    int complete = 0;
    SW_CHECK(sw_grammar_check(g, text, len, &complete) == SW_OK && (!ended || complete),
             "schema %d: walk text %.*s refused", which, (int)len, text);
    SW_CHECK(bad == 0, "schema %d: %d mask mismatches", which, bad);
    gmatch_destroy(gm);
    free(tmp);
    free(allowed);
}

/* Greedy requests with a grammar on the tiny model end complete. */
static void check_scheduler(const sw_model *m, sw_grammar *g, int which) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "cpu";
    o.n_threads = 1;
    o.n_ctx = 256;
    sw_engine *e = NULL;
    sw_scheduler *q = NULL;
    sw_request *r = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    if (e != NULL)
        SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    int32_t ids[16];
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, "JSON:", 5, SW_TOK_ADD_BOS, ids, 16, &n));
    sw_request_options ro = sw_request_options_default();
    ro.sampling.temp = 0.0f;
    ro.n_predict = 200;
    ro.grammar = g;
    if (q != NULL)
        SW_CHECK_OK(sw_scheduler_submit(q, ids, n, &ro, &r));
    uint32_t step = 1;
    for (int guard = 0; r != NULL && step != 0 && guard < 1000; guard++)
        SW_CHECK_OK(sw_scheduler_step(q, &step));
    sw_request_info info;
    sw_request_get_info(q, r, &info);
    char text[4096];
    const size_t len = sw_request_text(q, r, 0, text, sizeof text);
    int complete = 0;
    const sw_status st = sw_grammar_check(g, text, len, &complete);
    SW_CHECK(r != NULL && info.finish == SW_FINISH_EOG && st == SW_OK && complete,
             "schema %d: request ended %s with %.*s", which, sw_finish_name(info.finish),
             (int)len, text);
    sw_request_release(q, r);
    sw_scheduler_destroy(q);
    sw_engine_destroy(e);
}

int main(void) {
    const size_t n_cases = sizeof CASES / sizeof CASES[0];
    for (size_t i = 0; i < n_cases; i++)
        check_case(&CASES[i], (int)i);
    check_refusals();
    sw_model *m = NULL;
    gvocab *v = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &m));
    if (m != NULL)
        SW_CHECK_OK(gvocab_create(m, (uint32_t)sw_vocab_size(m), &v));
    for (size_t i = 0; v != NULL && i < n_cases; i++) {
        sw_grammar *g = NULL;
        SW_CHECK_OK(sw_grammar_from_json_schema(CASES[i].schema, strlen(CASES[i].schema), &g));
        for (uint64_t w = 0; g != NULL && w < 3; w++)
            walk(g, v, 0x9e3779b97f4a7c15ull * (w + 1) + i, (int)i);
        if (g != NULL && (i == 2 || i == 7 || i == 8 || i == 12)) /* bounded */
            check_scheduler(m, g, (int)i);
        sw_grammar_destroy(g);
    }
    gvocab_destroy(v);
    sw_model_close(m);
    return sw_check_finish("test_grammar");
}

/*
 * test_tools.c — Gemma 4 tool calls in `spillway serve` (src/serve/tools.h):
 * the parser on well-formed, multiple, malformed and partial calls, fed
 * whole, byte by byte and split at every byte boundary; the stream's
 * deltas summed against the whole reply; and the prompt writer's exact
 * markup for declarations, calls and responses, and its 400s (Gemma 3,
 * malformed fields) on the tiny Gemma 3 and Gemma 4 models.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "check.h"
#include "serve/tools.h"

typedef struct want_call {
    const char *name, *args;     /* args: JSON, compared as values */
} want_call;

typedef struct pcase {
    const char *what, *text, *content;
    size_t n_calls;
    want_call calls[3];
} pcase;

static const pcase CASES[] = {
    {"text only", "Hello, world.", "Hello, world.", 0, {{0}}},
    {"text then a call, then the tool's turn",
     "Sure.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>"
     "<|tool_response>ignored",
     "Sure.", 1, {{"get_weather", "{\"city\":\"Paris\",\"days\":3}"}}},
    {"two calls", "<|tool_call>call:a{x:1}<tool_call|><|tool_call>call:b.c{y:<|\"|>q<|\"|>}"
                  "<tool_call|>", "", 2, {{"a", "{\"x\":1}"}, {"b.c", "{\"y\":\"q\"}"}}},
    {"every kind of value",
     "<|tool_call>call:f{s:<|\"|>say \"hi\"\n\\ <b> & <|\"|>,n:-1.5e3,t:true,F:False,z:None,"
     "l:[1,<|\"|>two<|\"|>,[],{}],o:{k:{deep:[null]}},w: hello world ,e:1.}<tool_call|>",
     "", 1, {{"f", "{\"s\":\"say \\\"hi\\\"\\n\\\\ <b> & \",\"n\":-1.5e3,\"t\":true,"
                   "\"F\":false,\"z\":null,\"l\":[1,\"two\",[],{}],\"o\":{\"k\":{\"deep\":"
                   "[null]}},\"w\":\"hello world\",\"e\":\"1.\"}"}}},
    {"JSON-style arguments", "<|tool_call>call:f{\"a\":\"x\\\"y\\u00e9\",\"b\":[1, 2]}"
                             "<tool_call|>", "", 1,
     {{"f", "{\"a\":\"x\\\"y\\u00e9\",\"b\":[1,2]}"}}},
    {"a bad escape is a backslash", "<|tool_call>call:f{\"a\":\"\\q\\u12\"}<tool_call|>", "",
     1, {{"f", "{\"a\":\"\\\\q\\\\u12\"}"}}},
    {"not a call: keyword", "a<|tool_call>cal x", "a<|tool_call>cal x", 0, {{0}}},
    {"not a call: name", "<|tool_call>call:bad name{}", "<|tool_call>call:bad name{}", 0,
     {{0}}},
    {"not a call: no name", "<|tool_call>call:{}", "<|tool_call>call:{}", 0, {{0}}},
    {"cut off in a string", "<|tool_call>call:f{a:<|\"|>unfinished", "", 1,
     {{"f", "{\"a\":\"unfinished\"}"}}},
    {"cut off in a JSON string", "<|tool_call>call:f{\"a\":\"x\\", "", 1,
     {{"f", "{\"a\":\"x\\\\\"}"}}},
    {"cut off after a key", "<|tool_call>call:f{a:[1],b:", "", 1,
     {{"f", "{\"a\":[1],\"b\":null}"}}},
    {"a missing value", "<|tool_call>call:f{a:,b:1}<tool_call|>after", "after", 1,
     {{"f", "{\"a\":null}"}}},
    {"closed early", "<|tool_call>call:f{a:[1,2<tool_call|>tail", "tail", 1,
     {{"f", "{\"a\":[1,2]}"}}},
    {"a trailing comma", "<|tool_call>call:f{a:1,}<tool_call|>", "", 1, {{"f", "{\"a\":1}"}}},
    {"stray markers are text", "x <|\"|> y <tool_call|> z", "x <|\"|> y <tool_call|> z", 0,
     {{0}}},
    {"a marker at the end", "abc<|tool_call>", "abc<|tool_call>", 0, {{0}}},
    {"part of a marker at the end", "abc<|tool_ca", "abc<|tool_ca", 0, {{0}}},
    {"no closing marker", "<|tool_call>call:f{}then", "then", 1, {{"f", "{}"}}},
    {"mismatched bracket", "<|tool_call>call:f{a:[1}<tool_call|>x", "x", 1,
     {{"f", "{\"a\":[1]}"}}},
    {"the end in a call", "<|tool_call>call:f{a:<|\"|>x<|tool_response>more", "", 1,
     {{"f", "{\"a\":\"x\"}"}}},
    {"too deep", "<|tool_call>call:f{a:[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]}<tool_call|>",
     "", 1, {{"f", NULL}}},
};

static bool args_equal(const char *got, const char *want) {
    json_object *g = json_tokener_parse(got);
    bool ok = json_object_is_type(g, json_type_object);
    if (ok && want != NULL) {
        json_object *w = json_tokener_parse(want);
        ok = w != NULL && json_object_equal(g, w);
        json_object_put(w);
    }
    json_object_put(g);
    return ok;
}

static bool parsed_ok(const tool_parser *p, const pcase *c) {
    bool ok = !p->oom && p->n_calls == c->n_calls &&
              strcmp(p->content.p ? p->content.p : "", c->content) == 0;
    for (size_t i = 0; ok && i < c->n_calls; i++)
        ok = p->calls[i].done && !strcmp(p->calls[i].name.p, c->calls[i].name) &&
             args_equal(p->calls[i].args.p, c->calls[i].args);
    return ok;
}

/* Whole, byte by byte, and split in two at every boundary. */
static void test_parser_case(const pcase *c) {
    const size_t n = strlen(c->text);
    for (size_t split = 0; split <= n + 1; split++) {
        tool_parser p;
        tool_parser_init(&p, "7");
        if (split == n + 1) {
            for (size_t i = 0; i < n; i++)
                tool_parser_feed(&p, c->text + i, 1);
        } else {
            tool_parser_feed(&p, c->text, split);
            tool_parser_feed(&p, c->text + split, n - split);
        }
        tool_parser_finish(&p);
        const bool ok = parsed_ok(&p, c);
        SW_CHECK(ok, "%s (split %zu): content '%s', %zu calls, first '%s' %s", c->what, split,
                 p.content.p ? p.content.p : "", p.n_calls,
                 p.n_calls ? p.calls[0].name.p : "", p.n_calls ? p.calls[0].args.p : "");
        if (p.n_calls > 0)
            SW_CHECK(!strcmp(p.calls[0].id, "call_7_0"), "id %s", p.calls[0].id);
        tool_parser_free(&p);
        if (!ok)
            break;
    }
}

/* Random texts of marker fragments: whole and byte by byte the same, and
 * every call's arguments a JSON object. */
static void test_parser_random(void) {
    static const char *const bits[] = {
        "<|tool_call>", "call:", "f", "{", "}", "[", "]", ",", ":", "<|\"|>", "<tool_call|>",
        "\"", "\\", "a", " ", "1", "-", "<", "|", "None", "\n", "u", "e", "\x01", "\xc3\xa9",
        "<|tool_call>call:f{", "<|tool_response>"};
    const size_t n_bits = sizeof bits / sizeof bits[0];
    uint64_t rng = 41;
    int bad = 0;
    for (int k = 0; k < 3000 && bad < 3; k++) {
        char text[512] = "";
        const size_t n = 1 + sw_test_rng_next(&rng) % 40;
        for (size_t i = 0; i < n; i++) {
            const uint64_t r = sw_test_rng_next(&rng) % (n_bits * 4); /* the last: rare */
            strcat(text, bits[r == n_bits * 4 - 1 ? n_bits - 1 : r % (n_bits - 1)]);
        }
        tool_parser a, b;
        tool_parser_init(&a, "1");
        tool_parser_init(&b, "1");
        tool_parser_feed(&a, text, strlen(text));
        for (size_t i = 0; text[i]; i++)
            tool_parser_feed(&b, text + i, 1);
        tool_parser_finish(&a);
        tool_parser_finish(&b);
        bool ok = a.n_calls == b.n_calls && a.content.len == b.content.len &&
                  (a.content.len == 0 || !memcmp(a.content.p, b.content.p, a.content.len));
        for (size_t i = 0; ok && i < a.n_calls; i++)
            ok = !strcmp(a.calls[i].args.p, b.calls[i].args.p) && a.calls[i].done &&
                 args_equal(a.calls[i].args.p, NULL);
        SW_CHECK(ok, "random text '%s': %zu calls, first %s", text, a.n_calls,
                 a.n_calls ? a.calls[0].args.p : "-");
        bad += !ok;
        tool_parser_free(&a);
        tool_parser_free(&b);
    }
}

/* ---- streamed deltas against the whole reply ----------------------------------- */

typedef struct summed {
    sw_bytebuf content;
    sw_bytebuf name[4], args[4];
    char id[4][48];
    size_t n_calls;
    const char *finish;
} summed;

static void add_delta(summed *s, json_object *d) {
    json_object *v = NULL, *calls = NULL;
    if (json_object_object_get_ex(d, "content", &v) && v != NULL)
        sw_bytebuf_add(&s->content, json_object_get_string(v),
                       (size_t)json_object_get_string_len(v));
    if (!json_object_object_get_ex(d, "tool_calls", &calls))
        return;
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *c = json_object_array_get_idx(calls, i), *fn = NULL, *x = NULL;
        json_object_object_get_ex(c, "index", &x);
        const size_t k = (size_t)json_object_get_int(x);
        if (k >= 4)
            continue;
        s->n_calls = k + 1 > s->n_calls ? k + 1 : s->n_calls;
        if (json_object_object_get_ex(c, "id", &x))
            snprintf(s->id[k], sizeof s->id[k], "%s", json_object_get_string(x));
        json_object_object_get_ex(c, "function", &fn);
        if (json_object_object_get_ex(fn, "name", &x))
            sw_bytebuf_add(&s->name[k], json_object_get_string(x),
                           (size_t)json_object_get_string_len(x));
        if (json_object_object_get_ex(fn, "arguments", &x))
            sw_bytebuf_add(&s->args[k], json_object_get_string(x),
                           (size_t)json_object_get_string_len(x));
    }
}

static void summed_free(summed *s) {
    sw_bytebuf_free(&s->content);
    for (int i = 0; i < 4; i++) {
        sw_bytebuf_free(&s->name[i]);
        sw_bytebuf_free(&s->args[i]);
    }
}

/* r's text streamed in pieces of `step` bytes, summed. */
static void stream_sum(srv_req *r, size_t step, summed *s) {
    memset(s, 0, sizeof *s);
    srv_tools *t = r->tools;
    tool_parser_free(&t->stream);
    t->stream_started = false;
    for (size_t at = 0; at < r->text.len; at += step) {
        const char *finish = NULL;
        const size_t n = r->text.len - at < step ? r->text.len - at : step;
        json_object *d = srv_tools_delta(r, r->text.p + at, n, at == 0, &finish);
        add_delta(s, d);
        json_object_put(d);
    }
    s->finish = "stop";
    json_object *d = srv_tools_delta(r, "", 0, false, &s->finish);
    add_delta(s, d);
    json_object_put(d);
}

static void test_stream(const char *prefix, const char *text) {
    srv_req r = {0};
    r.chat = true;
    snprintf(r.id, sizeof r.id, "chatcmpl-12");
    r.tools = calloc(1, sizeof *r.tools);
    r.tools->prefix = prefix ? strdup(prefix) : NULL;
    sw_bytebuf_add(&r.text, text, strlen(text));
    const char *finish = "stop";
    json_object *msg = srv_tools_message(&r, &finish), *calls = NULL, *content = NULL;
    json_object_object_get_ex(msg, "tool_calls", &calls);
    json_object_object_get_ex(msg, "content", &content);
    const size_t n_calls = calls ? json_object_array_length(calls) : 0;
    SW_CHECK(!strcmp(finish, n_calls ? "tool_calls" : "stop"), "finish %s", finish);
    for (size_t step = 1; step <= strlen(text) + 1; step++) {
        summed s;
        stream_sum(&r, step, &s);
        bool ok = s.n_calls == n_calls && !strcmp(s.finish, finish) &&
                  !strcmp(s.content.p ? s.content.p : "",
                          content ? json_object_get_string(content) : "");
        for (size_t i = 0; ok && i < n_calls; i++) {
            json_object *c = json_object_array_get_idx(calls, i), *fn = NULL, *x = NULL;
            json_object_object_get_ex(c, "function", &fn);
            json_object_object_get_ex(fn, "arguments", &x);
            ok = s.args[i].p && !strcmp(s.args[i].p, json_object_get_string(x));
            json_object_object_get_ex(fn, "name", &x);
            ok = ok && s.name[i].p && !strcmp(s.name[i].p, json_object_get_string(x));
            json_object_object_get_ex(c, "id", &x);
            ok = ok && !strcmp(s.id[i], json_object_get_string(x));
        }
        SW_CHECK(ok, "stream of '%s' in steps of %zu: %zu calls, content '%s'", text, step,
                 s.n_calls, s.content.p ? s.content.p : "");
        summed_free(&s);
        if (!ok)
            break;
    }
    json_object_put(msg);
    sw_bytebuf_free(&r.text);
    srv_tools_free(r.tools);
}

/* ---- the prompt writer ------------------------------------------------------------ */

#define Q "<|\"|>"
#define TOOLS                                                                               \
    "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "         \
    "\"description\": \"Weather now\", \"parameters\": {\"type\": \"object\", "              \
    "\"properties\": {\"unit\": {\"type\": \"string\", \"enum\": [\"c\", \"f\"]}, "          \
    "\"city\": {\"type\": \"string\", \"description\": \"City\"}, \"days\": {\"type\": "     \
    "\"array\", \"items\": {\"type\": \"integer\"}}}, \"required\": [\"city\"]}}}]"
#define DECL                                                                                \
    "<|tool>declaration:get_weather{description:" Q "Weather now" Q ",parameters:{properties:" \
    "{city:{description:" Q "City" Q ",type:" Q "STRING" Q "},days:{items:{type:" Q          \
    "INTEGER" Q "},type:" Q "ARRAY" Q "},unit:{enum:[" Q "c" Q "," Q "f" Q "],type:" Q      \
    "STRING" Q "}},required:[" Q "city" Q "],type:" Q "OBJECT" Q "}}<tool|>"
#define CALL_MSG                                                                            \
    "{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", "         \
    "\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": "      \
    "\"{\\\"unit\\\": \\\"c\\\", \\\"city\\\": \\\"Paris\\\", \\\"x\\\": {\\\"b\\\": [1, "    \
    "true, null], \\\"a\\\": 2.5}}\"}}]}"
#define CALL_TEXT                                                                           \
    "<|tool_call>call:get_weather{city:" Q "Paris" Q ",unit:" Q "c" Q ",x:{a:2.5,b:[1,true," \
    "None]}}<tool_call|>"
#define OPEN "<|turn>model\n<|channel>thought\n<channel|>"

typedef struct wcase {
    const char *what, *body, *want; /* want NULL: a 400 */
    int choice;                     /* SRV_TOOL_*, or -1: no tool state */
} wcase;

static const wcase WRITES[] = {
    {"system, tools, user",
     "{\"messages\": [{\"role\": \"system\", \"content\": \" Be brief. \"}, {\"role\": \"user\", "
     "\"content\": \"Weather in Paris?\"}], " TOOLS "}",
     "<|turn>system\nBe brief." DECL "<turn|>\n<|turn>user\nWeather in Paris?<turn|>\n" OPEN,
     SRV_TOOL_AUTO},
    {"a call and its response: the model's turn goes on",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, " CALL_MSG ", {\"role\": "
     "\"tool\", \"tool_call_id\": \"c1\", \"content\": \"15\"}], " TOOLS "}",
     "<|turn>system\n" DECL "<turn|>\n<|turn>user\nQ<turn|>\n<|turn>model\n" CALL_TEXT
     "<|tool_response>response:get_weather{value:" Q "15" Q "}<tool_response|>",
     SRV_TOOL_AUTO},
    {"the answer after the response, then the next question",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, " CALL_MSG ", {\"role\": "
     "\"tool\", \"tool_call_id\": \"zz\", \"name\": \"other\", \"content\": [{\"type\": "
     "\"text\", \"text\": \"15\"}]}, {\"role\": \"assistant\", \"content\": \"It is 15.\"}, "
     "{\"role\": \"user\", \"content\": \"Thanks\"}], \"tool_choice\": \"none\", " TOOLS "}",
     "<|turn>user\nQ<turn|>\n<|turn>model\n" CALL_TEXT "<|tool_response>response:other{value:"
     Q "15" Q "}<tool_response|>It is 15.<turn|>\n<|turn>user\nThanks<turn|>\n" OPEN, -1},
    {"a call with no response yet",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, " CALL_MSG "]}",
     "<|turn>user\nQ<turn|>\n<|turn>model\n" CALL_TEXT "<|tool_response>", -1},
    {"a named function opens the call",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], \"tool_choice\": {\"type\": "
     "\"function\", \"function\": {\"name\": \"get_weather\"}}, " TOOLS "}",
     "<|turn>system\n" DECL "<turn|>\n<|turn>user\nQ<turn|>\n" OPEN
     "<|tool_call>call:get_weather", SRV_TOOL_NAMED},
    {"required opens a call", "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], "
     "\"tool_choice\": \"required\", " TOOLS "}",
     "<|turn>system\n" DECL "<turn|>\n<|turn>user\nQ<turn|>\n" OPEN
     "<|tool_call>call:get_weather", SRV_TOOL_REQUIRED},
    {"required among two functions opens a call",
     "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], \"tool_choice\": "
     "\"required\", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a\"}}, "
     "{\"type\": \"function\", \"function\": {\"name\": \"b\", \"description\": \"B\", "
     "\"parameters\": {}}}]}",
     "<|turn>system\n<|tool>declaration:a{description:" Q Q "}<tool|><|tool>declaration:b{"
     "description:" Q "B" Q "}<tool|><turn|>\n<|turn>user\nQ<turn|>\n" OPEN
     "<|tool_call>call:", SRV_TOOL_REQUIRED},
    {"unknown function", "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], "
     "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"nope\"}}, " TOOLS
     "}", NULL, 0},
    {"a schema the grammar cannot take", "{\"messages\": [{\"role\": \"user\", \"content\": "
     "\"Q\"}], \"tool_choice\": \"required\", \"tools\": [{\"type\": \"function\", "
     "\"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
     "\"properties\": {\"a\": {\"type\": \"string\", \"pattern\": \"^x$\"}}}}}]}", NULL, 0},
    {"tools not an array", "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], "
     "\"tools\": {}}", NULL, 0},
    {"a bad function name", "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], "
     "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"a b\"}}]}", NULL, 0},
    {"a tool message first", "{\"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}",
     NULL, 0},
    {"arguments not JSON", "{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": "
     "[{\"function\": {\"name\": \"f\", \"arguments\": \"{oops\"}}]}]}", NULL, 0},
    {"required without tools", "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], "
     "\"tool_choice\": \"required\"}", NULL, 0},
    {"an unknown role", "{\"messages\": [{\"role\": \"robot\", \"content\": \"Q\"}], "
     "\"tools\": []}", NULL, 0},
};

static void test_writer(const sw_model *m, const wcase *c) {
    json_object *root = json_tokener_parse(c->body);
    SW_CHECK(root != NULL, "%s: the test's JSON", c->what);
    sw_bytebuf out = {0};
    srv_tools *t = NULL;
    srv_reply err = {0};
    const int got = srv_tools_prompt(m, root, &out, &t, &err);
    if (c->want == NULL) {
        SW_CHECK(got == -1 && err.status == 400 && t == NULL, "%s: %d %u", c->what, got,
                 err.status);
    } else {
        SW_CHECK(got == 1 && !strcmp(out.p ? out.p : "", c->want), "%s: %d '%s' %s", c->what,
                 got, out.p ? out.p : "", err.body ? err.body : "");
        SW_CHECK(c->choice < 0 ? t == NULL : t != NULL && (int)t->choice == c->choice,
                 "%s: tool state", c->what);
        SW_CHECK(t == NULL || (t->grammar != NULL) == (c->choice == SRV_TOOL_NAMED ||
                                                      (c->choice == SRV_TOOL_REQUIRED &&
                                                       strstr(c->want, "declaration:b") == NULL)),
                 "%s: grammar", c->what);
        if (t != NULL && t->prefix != NULL)
            SW_CHECK(strstr(c->want, t->prefix) != NULL &&
                     !strcmp(c->want + strlen(c->want) - strlen(t->prefix), t->prefix),
                     "%s: prefix '%s'", c->what, t->prefix);
    }
    free(err.body);
    srv_tools_free(t);
    sw_bytebuf_free(&out);
    json_object_put(root);
}

static void test_models(void) {
    sw_model *g4 = NULL, *g3 = NULL;
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma4-kv.gguf"), &g4));
    SW_CHECK_OK(sw_model_open(sw_test_data("tiny/gemma3.gguf"), &g3));
    if (g4 == NULL || g3 == NULL)
        goto done;
    for (size_t i = 0; i < sizeof WRITES / sizeof WRITES[0]; i++)
        test_writer(g4, &WRITES[i]);
    static const char *const plain[] = {
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}]}",
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], \"temperature\": 0}"};
    for (int k = 0; k < 2; k++) { /* no tools: the plain template's, on either model */
        json_object *root = json_tokener_parse(plain[k]);
        sw_bytebuf out = {0};
        srv_tools *t = NULL;
        srv_reply err = {0};
        SW_CHECK(srv_tools_prompt(g4, root, &out, &t, &err) == 0 && out.len == 0, "plain g4");
        SW_CHECK(srv_tools_prompt(g3, root, &out, &t, &err) == 0 && out.len == 0, "plain g3");
        json_object_put(root);
    }
    json_object *root = json_tokener_parse(
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}], " TOOLS "}");
    sw_bytebuf out = {0};
    srv_tools *t = NULL;
    srv_reply err = {0};
    SW_CHECK(srv_tools_prompt(g3, root, &out, &t, &err) == -1 && err.status == 400 &&
             err.body && strstr(err.body, "architecture 'gemma3'") &&
             strstr(err.body, "no native tool-call format"), "gemma3: %s", err.body);
    free(err.body);
    sw_bytebuf_free(&out);
    json_object_put(root);
done:
    sw_model_close(g4);
    sw_model_close(g3);
}

int main(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        test_parser_case(&CASES[i]);
    test_parser_random();
    test_stream(NULL, "Sure.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:[1,2]}"
                      "<tool_call|>then<|tool_call>call:b{}<tool_call|><|tool_response>x");
    test_stream(NULL, "Only text, <b>no calls</b>.");
    test_stream("<|tool_call>call:f{", "a:<|\"|>x<|\"|>}<tool_call|>");
    test_stream("<|tool_call>call:f{", "garbage that is not arguments");
    test_stream("<|tool_call>call:f", "{\"a\":\"x\\\"y\",\"b\":[1,{\"c\":null}]}");
    test_models();
    return sw_check_finish("test_tools");
}

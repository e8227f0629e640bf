/*
 * tool_prompt.c — a chat request with "tools", "tool_choice", assistant
 * "tool_calls" or "tool" messages, written as Gemma 4's prompt (tools.h
 * has the markup and its sources). Every field is checked: a malformed
 * one is a 400 naming it; so is a tool request to a model with no native
 * tool-call format (Gemma 1-3), naming its architecture.
 *
 * The layout follows the Gemma 4 chat template: the declarations go in
 * the system turn (after the first system message's text, which then
 * opens no turn of its own); an assistant's calls, and the "tool"
 * messages that follow it (named by tool_call_id), stay in one model
 * turn, which is left open when no text follows them, so the next
 * assistant message or the reply goes on in it; objects are written with
 * their keys sorted as the template's dictsort sorts them (case-folded).
 * tool_choice "required" and a named function open the reply with
 * "<|tool_call>call:" (and "NAME" when one function is named or is the
 * only one), so that the model's reply is a call; the named call's
 * arguments are then decoded under a grammar of its "parameters" schema
 * (spillway_grammar.h), which writes JSON (the parser reads it as well as
 * the native markup): they always parse and validate. A schema the
 * grammar cannot take is a 400 naming the feature.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strncasecmp */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve/tools.h"

#define QUOTE "<|\"|>"
#define BAD(...) srv_api_error(400, "invalid_request_error", __VA_ARGS__)

typedef struct writer {
    sw_bytebuf *b;
    bool oom;
} writer;

static void put(writer *w, const char *s, size_t n) {
    w->oom = w->oom || !sw_bytebuf_add(w->b, s, n);
}

static void puts_(writer *w, const char *s) {
    put(w, s, strlen(s));
}

/* s with leading and trailing white space left out (Jinja's trim). */
static void put_trimmed(writer *w, const char *s, size_t n) {
    while (n > 0 && strchr(" \t\r\n", s[n - 1]) != NULL)
        n--;
    while (n > 0 && strchr(" \t\r\n", *s) != NULL)
        s++, n--;
    put(w, s, n);
}

static void put_upper(writer *w, const char *s) {
    for (; *s; s++) {
        const char c = *s >= 'a' && *s <= 'z' ? (char)(*s - 32) : *s;
        put(w, &c, 1);
    }
}

/* ---- values --------------------------------------------------------------- */

static int key_cmp(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    const int c = strcasecmp(x, y);
    return c != 0 ? c : strcmp(x, y);
}

/* o's keys, sorted (malloc'd; *n of them), or NULL when empty or short
 * of memory (*oom). */
static const char **sorted_keys(json_object *o, size_t *n, bool *oom) {
    *n = (size_t)json_object_object_length(o);
    if (*n == 0)
        return NULL;
    const char **k = malloc(*n * sizeof *k);
    if (k == NULL) {
        *oom = true;
        *n = 0;
        return NULL;
    }
    size_t i = 0;
    json_object_object_foreach(o, key, val) {
        (void)val;
        k[i++] = key;
    }
    qsort(k, *n, sizeof *k, key_cmp);
    return k;
}

/* A JSON value as the template's format_argument prints it: strings in
 * <|"|>, keys quoted the same way when escape_keys, null as Python's None. */
static void put_value(writer *w, json_object *v, bool escape_keys) {
    switch (json_object_get_type(v)) {
    case json_type_null: puts_(w, "None"); break;
    case json_type_boolean: puts_(w, json_object_get_boolean(v) ? "true" : "false"); break;
    case json_type_string:
        puts_(w, QUOTE);
        put(w, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        puts_(w, QUOTE);
        break;
    case json_type_array:
        puts_(w, "[");
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            if (i > 0)
                puts_(w, ",");
            put_value(w, json_object_array_get_idx(v, i), escape_keys);
        }
        puts_(w, "]");
        break;
    case json_type_object: {
        size_t n = 0;
        const char **keys = sorted_keys(v, &n, &w->oom);
        puts_(w, "{");
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                puts_(w, ",");
            if (escape_keys)
                puts_(w, QUOTE);
            puts_(w, keys[i]);
            if (escape_keys)
                puts_(w, QUOTE);
            puts_(w, ":");
            put_value(w, json_object_object_get(v, keys[i]), escape_keys);
        }
        puts_(w, "}");
        free(keys);
        break;
    }
    default: puts_(w, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)); break;
    }
}

/* ---- declarations ----------------------------------------------------------- */

static json_object *get(json_object *o, const char *key) {
    json_object *v = NULL;
    return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v)
               ? v : NULL;
}

static bool is_str(json_object *v) {
    return json_object_is_type(v, json_type_string);
}

/* A field separator inside one {...} of a declaration. */
static void sep(writer *w, bool *first) {
    if (!*first)
        puts_(w, ",");
    *first = false;
}

static void put_required(writer *w, json_object *req, bool *first) {
    if (!json_object_is_type(req, json_type_array) || json_object_array_length(req) == 0)
        return;
    sep(w, first);
    puts_(w, "required:[");
    for (size_t i = 0; i < json_object_array_length(req); i++) {
        json_object *s = json_object_array_get_idx(req, i);
        if (i > 0)
            puts_(w, ",");
        puts_(w, QUOTE);
        puts_(w, is_str(s) ? json_object_get_string(s) : "");
        puts_(w, QUOTE);
    }
    puts_(w, "]");
}

/* "STRING", or the upper-cased list of a type list. */
static void put_type(writer *w, json_object *type, bool *first) {
    if (is_str(type)) {
        sep(w, first);
        puts_(w, "type:" QUOTE);
        put_upper(w, json_object_get_string(type));
        puts_(w, QUOTE);
    } else if (json_object_is_type(type, json_type_array)) {
        sep(w, first);
        puts_(w, "type:[");
        for (size_t i = 0; i < json_object_array_length(type); i++) {
            json_object *t = json_object_array_get_idx(type, i);
            puts_(w, i > 0 ? "," QUOTE : QUOTE);
            put_upper(w, is_str(t) ? json_object_get_string(t) : "");
            puts_(w, QUOTE);
        }
        puts_(w, "]");
    }
}

static bool type_is(json_object *schema, const char *name) {
    json_object *t = get(schema, "type");
    return is_str(t) && !strcasecmp(json_object_get_string(t), name);
}

static void put_properties(writer *w, json_object *props, int depth);

static void put_items(writer *w, json_object *items, int depth) {
    size_t n = 0;
    const char **keys = sorted_keys(items, &n, &w->oom);
    bool first = true;
    puts_(w, "items:{");
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_object_get(items, keys[i]);
        if (v == NULL)
            continue;
        if (!strcmp(keys[i], "properties")) {
            sep(w, &first);
            puts_(w, "properties:{");
            put_properties(w, v, depth + 1);
            puts_(w, "}");
        } else if (!strcmp(keys[i], "required")) {
            put_required(w, v, &first);
        } else if (!strcmp(keys[i], "type")) {
            put_type(w, v, &first);
        } else {
            sep(w, &first);
            puts_(w, keys[i]);
            puts_(w, ":");
            put_value(w, v, true);
        }
    }
    puts_(w, "}");
    free(keys);
}

/* One property's schema, as the template's format_parameters writes it. */
static void put_property(writer *w, json_object *p, int depth) {
    bool first = true;
    json_object *desc = get(p, "description"), *items = get(p, "items");
    if (is_str(desc) && json_object_get_string_len(desc) > 0) {
        sep(w, &first);
        puts_(w, "description:" QUOTE);
        puts_(w, json_object_get_string(desc));
        puts_(w, QUOTE);
    }
    if (type_is(p, "string") && get(p, "enum") != NULL) {
        sep(w, &first);
        puts_(w, "enum:");
        put_value(w, get(p, "enum"), true);
    } else if (type_is(p, "array") && json_object_is_type(items, json_type_object) &&
               json_object_object_length(items) > 0) {
        sep(w, &first);
        put_items(w, items, depth);
    }
    if (json_object_get_boolean(get(p, "nullable"))) {
        sep(w, &first);
        puts_(w, "nullable:true");
    }
    if (type_is(p, "object") && json_object_is_type(get(p, "properties"), json_type_object)) {
        sep(w, &first);
        puts_(w, "properties:{");
        put_properties(w, get(p, "properties"), depth + 1);
        puts_(w, "}");
    }
    if (type_is(p, "object"))
        put_required(w, get(p, "required"), &first);
    put_type(w, get(p, "type"), &first);
}

static void put_properties(writer *w, json_object *props, int depth) {
    if (!json_object_is_type(props, json_type_object) || depth > 16)
        return;
    size_t n = 0;
    const char **keys = sorted_keys(props, &n, &w->oom);
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_object_get(props, keys[i]);
        if (!json_object_is_type(p, json_type_object))
            continue;
        sep(w, &first);
        puts_(w, keys[i]);
        puts_(w, ":{");
        put_property(w, p, depth);
        puts_(w, "}");
    }
    free(keys);
}

/* <|tool>declaration:NAME{description:...,parameters:{...}}<tool|> */
static void put_declaration(writer *w, json_object *fn) {
    json_object *desc = get(fn, "description"), *params = get(fn, "parameters");
    puts_(w, "<|tool>declaration:");
    puts_(w, json_object_get_string(get(fn, "name")));
    puts_(w, "{description:" QUOTE);
    puts_(w, is_str(desc) ? json_object_get_string(desc) : "");
    puts_(w, QUOTE);
    if (json_object_is_type(params, json_type_object) &&
        json_object_object_length(params) > 0) {
        bool first = true;
        puts_(w, ",parameters:{");
        json_object *props = get(params, "properties");
        if (json_object_is_type(props, json_type_object) &&
            json_object_object_length(props) > 0) {
            sep(w, &first);
            puts_(w, "properties:{");
            put_properties(w, props, 0);
            puts_(w, "}");
        }
        put_required(w, get(params, "required"), &first);
        json_object *type = get(params, "type");
        json_object *obj = json_object_new_string("object");
        put_type(w, type != NULL ? type : obj, &first);
        json_object_put(obj);
        puts_(w, "}");
    }
    puts_(w, "}<tool|>");
}

/* ---- checking the request ---------------------------------------------------- */

static bool valid_name(const char *s, size_t n) {
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* "tools": [{"type": "function", "function": {"name", "description"?,
 * "parameters"?}}], the functions into fns (borrowed). */
static bool check_tools(json_object *tools, json_object ***fns, size_t *n, srv_reply *err) {
    *n = 0;
    *fns = NULL;
    if (tools == NULL)
        return true;
    if (!json_object_is_type(tools, json_type_array)) {
        *err = BAD("\"tools\" must be an array of {\"type\": \"function\", \"function\": "
                   "{...}}");
        return false;
    }
    const size_t count = json_object_array_length(tools);
    *fns = calloc(count ? count : 1, sizeof **fns);
    if (*fns == NULL) {
        *err = srv_api_error(500, "server_error", "out of memory");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        json_object *t = json_object_array_get_idx(tools, i), *fn = get(t, "function");
        json_object *type = get(t, "type"), *name = get(fn, "name");
        json_object *desc = get(fn, "description"), *params = get(fn, "parameters");
        if (!is_str(type) || strcmp(json_object_get_string(type), "function") != 0 ||
            !json_object_is_type(fn, json_type_object)) {
            *err = BAD("tools[%zu] must be {\"type\": \"function\", \"function\": {...}}", i);
            return false;
        }
        if (!is_str(name) || !valid_name(json_object_get_string(name),
                                         (size_t)json_object_get_string_len(name))) {
            *err = BAD("tools[%zu].function.name must be 1 to 64 letters, digits, '_', '-' "
                       "or '.'", i);
            return false;
        }
        if ((desc != NULL && !is_str(desc)) ||
            (params != NULL && !json_object_is_type(params, json_type_object))) {
            *err = BAD("tools[%zu].function: \"description\" must be a string and "
                       "\"parameters\" a JSON-schema object", i);
            return false;
        }
        (*fns)[(*n)++] = fn;
    }
    return true;
}

static json_object *find_tool(json_object **fns, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(json_object_get_string(get(fns[i], "name")), name))
            return fns[i];
    return NULL;
}

/* "tool_choice": "none" | "auto" | "required" | {"type": "function",
 * "function": {"name"}}; *named gets the function then. */
static bool check_choice(json_object *c, json_object **fns, size_t n, srv_tool_choice *out,
                         json_object **named, srv_reply *err) {
    *named = NULL;
    *out = n > 0 ? SRV_TOOL_AUTO : SRV_TOOL_NONE;
    if (c == NULL)
        return true;
    const char *s = is_str(c) ? json_object_get_string(c) : NULL;
    json_object *name = get(get(c, "function"), "name");
    if (s != NULL && (!strcmp(s, "none") || !strcmp(s, "auto") || !strcmp(s, "required"))) {
        *out = !strcmp(s, "none") ? SRV_TOOL_NONE
               : !strcmp(s, "auto") ? SRV_TOOL_AUTO : SRV_TOOL_REQUIRED;
    } else if (is_str(name)) {
        *named = find_tool(fns, n, json_object_get_string(name));
        if (*named == NULL) {
            *err = BAD("\"tool_choice\" names the function '%.64s', which \"tools\" does not "
                       "declare", json_object_get_string(name));
            return false;
        }
        *out = SRV_TOOL_NAMED;
    } else {
        *err = BAD("\"tool_choice\" must be \"none\", \"auto\", \"required\" or "
                   "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        return false;
    }
    if (*out == SRV_TOOL_REQUIRED && n == 0) {
        *err = BAD("\"tool_choice\" is \"required\" but \"tools\" is empty");
        return false;
    }
    if (*out == SRV_TOOL_AUTO && n == 0)
        *out = SRV_TOOL_NONE;
    return true;
}

/* ---- the conversation ------------------------------------------------------- */

typedef enum last_kind { LAST_OTHER, LAST_CALL, LAST_RESPONSE } last_kind;

/* A message's text: a string, null, or an array of {"type": "text",
 * "text"} parts (each trimmed, as the template does); *any: not empty. */
static bool put_content(writer *w, json_object *c, bool *any) {
    *any = false;
    if (c == NULL)
        return true;
    if (is_str(c)) {
        *any = json_object_get_string_len(c) > 0;
        put_trimmed(w, json_object_get_string(c), (size_t)json_object_get_string_len(c));
        return true;
    }
    if (!json_object_is_type(c, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(c); i++) {
        json_object *part = json_object_array_get_idx(c, i), *text = get(part, "text");
        if (!is_str(get(part, "type")) || !is_str(text))
            return false;
        *any = true;
        put_trimmed(w, json_object_get_string(text), (size_t)json_object_get_string_len(text));
    }
    return true;
}

/* One assistant message's "tool_calls" as <|tool_call>call:NAME{...}<tool_call|>. */
static bool put_calls(writer *w, json_object *calls, size_t m, srv_reply *err) {
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        json_object *fn = get(json_object_array_get_idx(calls, i), "function");
        json_object *name = get(fn, "name"), *args = get(fn, "arguments"), *parsed = NULL;
        if (is_str(args))
            parsed = json_tokener_parse(json_object_get_string(args));
        else if (json_object_is_type(args, json_type_object))
            parsed = json_object_get(args);
        if (!is_str(name) || !json_object_is_type(parsed, json_type_object)) {
            json_object_put(parsed);
            *err = BAD("messages[%zu].tool_calls[%zu] needs \"function\": {\"name\": a "
                       "string, \"arguments\": a JSON object (as a string)}", m, i);
            return false;
        }
        size_t n = 0;
        const char **keys = sorted_keys(parsed, &n, &w->oom);
        puts_(w, "<|tool_call>call:");
        puts_(w, json_object_get_string(name));
        puts_(w, "{");
        for (size_t k = 0; k < n; k++) {
            puts_(w, k > 0 ? "," : "");
            puts_(w, keys[k]);
            puts_(w, ":");
            put_value(w, json_object_object_get(parsed, keys[k]), false);
        }
        puts_(w, "}<tool_call|>");
        free(keys);
        json_object_put(parsed);
    }
    return true;
}

/* The name of the call a "tool" message answers: by tool_call_id among
 * calls, else its "name", else "unknown" (as the template does). */
static const char *response_name(json_object *calls, json_object *msg) {
    json_object *id = get(msg, "tool_call_id"), *name = get(msg, "name");
    for (size_t i = 0; is_str(id) && i < json_object_array_length(calls); i++) {
        json_object *c = json_object_array_get_idx(calls, i);
        json_object *cid = get(c, "id"), *fname = get(get(c, "function"), "name");
        if (is_str(cid) && is_str(fname) &&
            !strcmp(json_object_get_string(cid), json_object_get_string(id)))
            return json_object_get_string(fname);
    }
    return is_str(name) ? json_object_get_string(name) : "unknown";
}

/* The "tool" messages right after message m, in its model turn; *next:
 * the first message after them. */
static bool put_responses(writer *w, json_object *msgs, size_t m, json_object *calls,
                          size_t *next, bool *any, srv_reply *err) {
    size_t k = m + 1;
    *any = false;
    for (; k < json_object_array_length(msgs); k++) {
        json_object *t = json_object_array_get_idx(msgs, k), *role = get(t, "role");
        if (!is_str(role) || strcmp(json_object_get_string(role), "tool") != 0)
            break;
        puts_(w, "<|tool_response>response:");
        puts_(w, response_name(calls, t));
        puts_(w, "{value:" QUOTE);
        bool text = false;
        if (!put_content(w, get(t, "content"), &text)) {
            *err = BAD("messages[%zu].content must be a string or an array of text parts", k);
            return false;
        }
        puts_(w, QUOTE "}<tool_response|>");
        *any = true;
    }
    *next = k;
    return true;
}

/* Message i (not "tool"): its turn, calls, their responses, text. */
static bool put_message(writer *w, json_object *msgs, size_t *i, bool *prev_assistant,
                        last_kind *last, srv_reply *err) {
    json_object *msg = json_object_array_get_idx(msgs, *i), *role = get(msg, "role");
    json_object *calls = get(msg, "tool_calls");
    const char *r = json_object_get_string(role);
    const bool assistant = !strcmp(r, "assistant");
    if (calls != NULL && (!assistant || !json_object_is_type(calls, json_type_array))) {
        *err = BAD("messages[%zu].tool_calls must be an array, on an assistant message", *i);
        return false;
    }
    if (!(assistant && *prev_assistant)) { /* else its turn goes on */
        puts_(w, "<|turn>");
        puts_(w, assistant ? "model" : !strcmp(r, "developer") ? "system" : r);
        puts_(w, "\n");
    }
    *last = LAST_OTHER;
    bool responded = false, text = false;
    size_t next = *i + 1;
    if (calls != NULL && json_object_array_length(calls) > 0) {
        if (!put_calls(w, calls, *i, err) ||
            !put_responses(w, msgs, *i, calls, &next, &responded, err))
            return false;
        *last = responded ? LAST_RESPONSE : LAST_CALL;
    }
    if (!put_content(w, get(msg, "content"), &text)) {
        *err = BAD("messages[%zu].content must be a string, null or an array of text parts",
                   *i);
        return false;
    }
    if (*last == LAST_CALL)
        puts_(w, "<|tool_response>");
    else if (!(responded && !text))
        puts_(w, "<turn|>\n");
    *prev_assistant = assistant;
    *i = next;
    return true;
}

static bool check_roles(json_object *msgs, srv_reply *err) {
    for (size_t i = 0; i < json_object_array_length(msgs); i++) {
        json_object *role = get(json_object_array_get_idx(msgs, i), "role");
        const char *r = is_str(role) ? json_object_get_string(role) : "";
        if (strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") &&
            strcmp(r, "assistant") && strcmp(r, "tool")) {
            *err = BAD("messages[%zu]: unknown role \"%.32s\" (system, developer, user, "
                       "assistant or tool)", i, r);
            return false;
        }
    }
    return true;
}

/* The system turn (first system message, declarations), every message,
 * the reply's opening and forced start. */
static bool put_conversation(writer *w, json_object *msgs, json_object **fns, size_t n_fns,
                             srv_tools *t, json_object *named, srv_reply *err) {
    size_t i = 0;
    json_object *r0 = get(json_object_array_get_idx(msgs, 0), "role");
    const bool sys = !strcmp(json_object_get_string(r0), "system") ||
                     !strcmp(json_object_get_string(r0), "developer");
    const bool declare = t != NULL && n_fns > 0;
    if (sys || declare) {
        bool text = false;
        puts_(w, "<|turn>system\n");
        if (sys && !put_content(w, get(json_object_array_get_idx(msgs, 0), "content"), &text)) {
            *err = BAD("messages[0].content must be a string or an array of text parts");
            return false;
        }
        for (size_t k = 0; declare && k < n_fns; k++)
            put_declaration(w, fns[k]);
        puts_(w, "<turn|>\n");
        i = sys ? 1 : 0;
    }
    bool prev_assistant = false;
    last_kind last = LAST_OTHER;
    while (i < json_object_array_length(msgs)) {
        json_object *role = get(json_object_array_get_idx(msgs, i), "role");
        if (!strcmp(json_object_get_string(role), "tool")) {
            *err = BAD("messages[%zu]: a \"tool\" message must follow an assistant message "
                       "with \"tool_calls\" (or another \"tool\" message)", i);
            return false;
        }
        if (!put_message(w, msgs, &i, &prev_assistant, &last, err))
            return false;
    }
    if (last == LAST_OTHER) /* after calls and responses the model's turn goes on */
        puts_(w, "<|turn>model\n<|channel>thought\n<channel|>");
    if (t != NULL && (t->choice == SRV_TOOL_REQUIRED || t->choice == SRV_TOOL_NAMED)) {
        const size_t from = w->b->len;
        puts_(w, "<|tool_call>call:");
        if (named != NULL) {
            puts_(w, json_object_get_string(get(named, "name")));
            if (t->grammar == NULL)
                puts_(w, "{");
        }
        if (!w->oom && (t->prefix = strndup(w->b->p + from, w->b->len - from)) == NULL)
            w->oom = true;
    }
    return true;
}

/* The grammar of a forced call's arguments: its "parameters" schema; with
 * none (or {}), "{}" alone (OpenAI: a function without parameters). */
static bool compile_arguments(json_object *fn, sw_grammar **out, srv_reply *err) {
    static const char none[] = "{\"type\":\"object\",\"properties\":{},"
                               "\"additionalProperties\":false}";
    json_object *params = get(fn, "parameters");
    size_t len = sizeof none - 1;
    const char *text = none;
    if (params != NULL && json_object_object_length(params) > 0)
        text = json_object_to_json_string_length(params, JSON_C_TO_STRING_PLAIN, &len);
    const sw_status st = sw_grammar_from_json_schema(text, len, out);
    if (st == SW_ERR_OOM_HOST)
        *err = srv_api_error(500, "server_error", "out of memory");
    else if (st != SW_OK)
        *err = BAD("the parameters of '%.64s' cannot constrain its call: %s",
                   json_object_get_string(get(fn, "name")), sw_last_error());
    return st == SW_OK;
}

/* Gemma 4's vocabulary opens turns with "<|turn>" (as sw_chat_format tells). */
static bool has_native_tools(const sw_model *m) {
    sw_special_tokens sp;
    const char *t = sw_model_special_tokens(m, &sp) == SW_OK && sp.start_of_turn >= 0
                        ? sw_token_text(m, sp.start_of_turn) : NULL;
    return t != NULL && !strcmp(t, "<|turn>");
}

/* Whether the request uses tools at all. */
static bool wants_tools(json_object *root, json_object *msgs) {
    if (get(root, "tools") != NULL || get(root, "tool_choice") != NULL)
        return true;
    for (size_t i = 0; json_object_is_type(msgs, json_type_array) &&
                       i < json_object_array_length(msgs); i++) {
        json_object *m = json_object_array_get_idx(msgs, i), *role = get(m, "role");
        if (get(m, "tool_calls") != NULL ||
            (is_str(role) && !strcmp(json_object_get_string(role), "tool")))
            return true;
    }
    return false;
}

static srv_reply no_native_format(const sw_model *m) {
    sw_model_summary sum;
    const char *arch = sw_model_get_summary(m, &sum) == SW_OK && sum.architecture[0]
                           ? sum.architecture : "unknown";
    return BAD("this model (architecture '%s') has no native tool-call format: \"tools\", "
               "\"tool_choice\", \"tool_calls\" and \"tool\" messages need Gemma 4",
               arch);
}

int srv_tools_prompt(const sw_model *model, json_object *root, sw_bytebuf *out,
                     srv_tools **tools, srv_reply *err) {
    *tools = NULL;
    json_object *msgs = get(root, "messages"), **fns = NULL, *named = NULL;
    if (!wants_tools(root, msgs))
        return 0;
    if (!has_native_tools(model)) {
        *err = no_native_format(model);
        return -1;
    }
    size_t n_fns = 0;
    srv_tool_choice choice = SRV_TOOL_NONE;
    srv_tools *t = NULL;
    writer w = {out, false};
    bool ok = json_object_is_type(msgs, json_type_array) &&
              json_object_array_length(msgs) > 0;
    if (!ok)
        *err = BAD("\"messages\" must be a non-empty array");
    ok = ok && check_roles(msgs, err) && check_tools(get(root, "tools"), &fns, &n_fns, err) &&
         check_choice(get(root, "tool_choice"), fns, n_fns, &choice, &named, err);
    if (ok && choice != SRV_TOOL_NONE) {
        if ((t = calloc(1, sizeof *t)) == NULL) {
            *err = srv_api_error(500, "server_error", "out of memory");
            ok = false;
        } else {
            t->choice = choice;
            t->model = model;
        }
    }
    if (ok && choice == SRV_TOOL_REQUIRED && n_fns == 1)
        named = fns[0]; /* the one function there is: its call opens the reply */
    if (ok && named != NULL)
        ok = compile_arguments(named, &t->grammar, err);
    ok = ok && put_conversation(&w, msgs, fns, n_fns, t, named, err);
    if (ok && w.oom) {
        *err = srv_api_error(500, "server_error", "out of memory");
        ok = false;
    }
    free(fns);
    if (!ok) {
        srv_tools_free(t);
        return -1;
    }
    *tools = t;
    return 1;
}

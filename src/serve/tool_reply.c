/*
 * tool_reply.c — the output side of a tool request (tools.h): the text
 * the parser reads, and the OpenAI message or stream delta built from it.
 *
 * Gemma 4's tool markers are control tokens, which print nothing in the
 * library's text; so a tool request takes its text from its own on_token
 * (raw: pieces, and the text of the "<|...>" / "<...|>" control tokens),
 * and ends itself at <|tool_response> (the model hands over to the tool
 * there; llama.cpp ends generation at it) or at one of its stop strings.
 * A stream feeds each new piece to the request's own parser and sends
 * what it settled: content, then for each call one delta with its index,
 * id, type and name, and deltas with its arguments as they are converted,
 * as OpenAI streams them. The finish reason is "tool_calls" when the
 * model made calls and stopped.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "serve/tools.h"
#include "util/utf8.h"

void srv_tools_free(srv_tools *t) {
    if (t == NULL)
        return;
    free(t->prefix);
    sw_grammar_destroy(t->grammar);
    sw_bytebuf_free(&t->raw);
    tool_parser_free(&t->stream);
    free(t);
}

/* Control tokens shaped like Gemma 4's markers: "<|tool_call>", "<|\"|>". */
static bool marker_token(const char *s) {
    const size_t n = s != NULL ? strlen(s) : 0;
    return n >= 3 && s[0] == '<' && s[n - 1] == '>' && (s[1] == '|' || s[n - 2] == '|');
}

void srv_tools_on_token(void *user, sw_request *req, int32_t id, const char *piece,
                        size_t len) {
    (void)req;
    srv_tools *t = user;
    if (t->stopped || t->raw_oom)
        return;
    if (len == 0) {
        const char *text = sw_token_text(t->model, id);
        if (!marker_token(text))
            return;
        piece = text;
        len = strlen(text);
    }
    const size_t from = t->raw.len;
    if (!sw_bytebuf_add(&t->raw, piece, len)) {
        t->raw_oom = true;
        return;
    }
    static const char end[] = "<|tool_response>";
    const size_t look = from > sizeof end ? from - sizeof end : 0;
    const char *hit = strstr(t->raw.p + look, end);
    if (hit != NULL) {
        t->raw.len = (size_t)(hit - t->raw.p);
        t->raw.p[t->raw.len] = '\0';
        t->stopped = true;
    }
}

/* Cuts text at the earliest of the stop strings in it at or after from. */
static bool cut_at_stop(sw_bytebuf *text, size_t from, char *const *stop, size_t n_stop) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < n_stop; i++) {
        const size_t back = strlen(stop[i]);
        const size_t at = from > back ? from - back : 0;
        const char *hit = strstr(text->p + at, stop[i]);
        if (hit != NULL && (size_t)(hit - text->p) < best)
            best = (size_t)(hit - text->p);
    }
    if (best == SIZE_MAX)
        return false;
    text->len = best;
    text->p[best] = '\0';
    return true;
}

bool srv_tools_take(srv_tools *t, sw_bytebuf *text, char *const *stop, size_t n_stop) {
    if (t->raw_oom)
        return false;
    if (t->raw.len <= t->raw_taken || t->cut)
        return true;
    const size_t from = text->len;
    if (!sw_bytebuf_add(text, t->raw.p + t->raw_taken, t->raw.len - t->raw_taken))
        return false;
    t->raw_taken = t->raw.len;
    if (n_stop > 0 && cut_at_stop(text, from, stop, n_stop))
        t->cut = t->stopped = true;
    return true;
}

/* ---- replies --------------------------------------------------------------- */

/* A JSON string of n bytes, ill-formed UTF-8 replaced (as api.c's). */
static json_object *json_text(const char *p, size_t n) {
    uint8_t *buf = malloc(3 * n + 1);
    if (buf == NULL)
        return json_object_new_string("");
    const uint64_t len = utf8_repair((const uint8_t *)(p ? p : ""), n, buf);
    json_object *o = json_object_new_string_len((const char *)buf, (int)len);
    free(buf);
    return o;
}

/* "chatcmpl-12" -> "12": call ids are "call_12_0", "call_12_1", ... */
static const char *id_base(const char *id) {
    const char *dash = strrchr(id, '-');
    return dash != NULL ? dash + 1 : id;
}

static void parser_start(const srv_req *r, tool_parser *p) {
    tool_parser_init(p, id_base(r->id));
    if (r->tools->prefix != NULL)
        tool_parser_feed(p, r->tools->prefix, strlen(r->tools->prefix));
}

static const char *finish_of(const tool_parser *p, const char *finish) {
    return p->n_calls > 0 && finish != NULL && !strcmp(finish, "stop") ? "tool_calls" : finish;
}

/* {"id", "type": "function", "function": {"name", "arguments"}} with
 * arguments from byte `from` (a stream's new part), id and name when full. */
static json_object *call_json(const tool_call *c, size_t index, bool full, size_t from,
                              bool with_index) {
    json_object *o = json_object_new_object(), *fn = json_object_new_object();
    if (with_index)
        json_object_object_add(o, "index", json_object_new_int((int)index));
    if (full) {
        json_object_object_add(o, "id", json_object_new_string(c->id));
        json_object_object_add(o, "type", json_object_new_string("function"));
        json_object_object_add(fn, "name", json_text(c->name.p, c->name.len));
    }
    json_object_object_add(fn, "arguments", json_text(c->args.p + from, c->args.len - from));
    json_object_object_add(o, "function", fn);
    return o;
}

json_object *srv_tools_message(const srv_req *r, const char **finish) {
    tool_parser p;
    parser_start(r, &p);
    tool_parser_feed(&p, r->text.p ? r->text.p : "", r->text.len);
    tool_parser_finish(&p);
    if (p.oom) {
        tool_parser_free(&p);
        return NULL;
    }
    json_object *msg = json_object_new_object();
    json_object_object_add(msg, "role", json_object_new_string("assistant"));
    json_object_object_add(msg, "content", p.content.len > 0 || p.n_calls == 0
                                               ? json_text(p.content.p, p.content.len)
                                               : NULL);
    if (p.n_calls > 0) {
        json_object *calls = json_object_new_array();
        for (size_t i = 0; i < p.n_calls; i++)
            json_object_array_add(calls, call_json(&p.calls[i], i, true, 0, false));
        json_object_object_add(msg, "tool_calls", calls);
    }
    *finish = finish_of(&p, *finish);
    tool_parser_free(&p);
    return msg;
}

json_object *srv_tools_delta(const srv_req *r, const char *delta, size_t len, bool first,
                             const char **finish) {
    srv_tools *t = r->tools;
    tool_parser *p = &t->stream;
    if (!t->stream_started) {
        parser_start(r, p);
        t->stream_started = true;
    }
    tool_parser_feed(p, delta, len);
    if (*finish != NULL)
        tool_parser_finish(p);
    json_object *d = json_object_new_object(), *calls = json_object_new_array();
    if (first)
        json_object_object_add(d, "role", json_object_new_string("assistant"));
    const bool text = p->content.len > p->content_sent;
    if (text || (*finish == NULL && p->n_calls == 0))
        json_object_object_add(d, "content", json_text(p->content.p + p->content_sent,
                                                       p->content.len - p->content_sent));
    p->content_sent = p->content.len;
    for (size_t i = 0; i < p->n_calls; i++) {
        tool_call *c = &p->calls[i];
        if (c->announced && c->args.len == c->args_sent)
            continue;
        json_object_array_add(calls, call_json(c, i, !c->announced, c->args_sent, true));
        c->announced = true;
        c->args_sent = c->args.len;
    }
    if (json_object_array_length(calls) > 0)
        json_object_object_add(d, "tool_calls", calls);
    else
        json_object_put(calls);
    *finish = finish_of(p, *finish);
    return d;
}

/*
 * tool_parse.c — Gemma 4's tool calls in generated text, back into
 * OpenAI's shape (tools.h): a byte-at-a-time state machine, so a stream
 * can feed each new piece of text as it comes and send what is settled.
 *
 * Bytes that may start a marker (<|tool_call>, <tool_call|>,
 * <|tool_response>, <|"|>) are held until they do or cannot; everything
 * else is decided when it arrives. Arguments become JSON as they are read:
 * bare keys are quoted, <|"|>strings<|"|> escaped, bare values kept when
 * they are JSON numbers or literals (Python's True/False/None as well:
 * that is how the chat template prints them) and quoted otherwise; a
 * "JSON string" (a key or a value, as a model or a JSON grammar may write
 * them) is taken as it is, its escapes checked. The
 * emitted JSON is only ever appended to, never rewritten: a comma waits
 * for the item after it, a key for its colon. Limits: 64 calls, 32 levels.
 */
#include <stdio.h>
#include <string.h>

#include "serve/tools.h"

enum {
    S_TEXT, S_HEAD, S_KEY, S_KEY_BARE, S_KEY_STR, S_KEY_JSON, S_COLON, S_VALUE, S_STR,
    S_JSON_STR, S_BARE, S_AFTER, S_END, S_SKIP
};

enum { M_NONE = -1, M_CALL, M_CALL_END, M_RESP, M_QUOTE, N_MARKERS };

static const char *const MARKERS[N_MARKERS] = {"<|tool_call>", "<tool_call|>",
                                               "<|tool_response>", "<|\"|>"};

static void plain(tool_parser *p, char c);
static void marker(tool_parser *p, int m);

static void add(tool_parser *p, sw_bytebuf *b, const char *s, size_t n) {
    p->oom = p->oom || !sw_bytebuf_add(b, s, n);
}

static tool_call *cur(tool_parser *p) {
    return &p->calls[p->n_calls - 1];
}

static void emit(tool_parser *p, const char *s) {
    add(p, &cur(p)->args, s, strlen(s));
}

/* s as the inside of a JSON string, into b. */
static void escape_into(tool_parser *p, sw_bytebuf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '"' || c == '\\')
            snprintf(e, sizeof e, "\\%c", c);
        else if (c == '\n')
            snprintf(e, sizeof e, "\\n");
        else if (c == '\t')
            snprintf(e, sizeof e, "\\t");
        else if (c == '\r')
            snprintf(e, sizeof e, "\\r");
        else if (c < 0x20)
            snprintf(e, sizeof e, "\\u%04x", c);
        else
            e[0] = (char)c, e[1] = '\0';
        add(p, b, e, strlen(e));
    }
}

static void emit_escaped(tool_parser *p, const char *s, size_t n) {
    escape_into(p, &cur(p)->args, s, n);
}

static bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* A JSON number, exactly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *s, size_t n) {
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        const size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        const size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

/* The bare text read so far, spaces trimmed: *s, *n. */
static void bare_trimmed(tool_parser *p, const char **s, size_t *n) {
    const char *b = p->bare.p ? p->bare.p : "";
    size_t len = p->bare.len;
    while (len > 0 && is_space(b[len - 1]))
        len--;
    while (len > 0 && is_space(*b))
        b++, len--;
    *s = b;
    *n = len;
}

static void emit_bare_value(tool_parser *p) {
    const char *s;
    size_t n;
    bare_trimmed(p, &s, &n);
    static const char *const lit[][2] = {{"true", "true"}, {"false", "false"},
                                         {"null", "null"}, {"True", "true"},
                                         {"False", "false"}, {"None", "null"}};
    for (size_t k = 0; k < sizeof lit / sizeof lit[0]; k++)
        if (n == strlen(lit[k][0]) && !memcmp(s, lit[k][0], n)) {
            emit(p, lit[k][1]);
            p->bare.len = 0;
            return;
        }
    if (is_json_number(s, n)) {
        add(p, &cur(p)->args, s, n);
    } else {
        emit(p, "\"");
        emit_escaped(p, s, n);
        emit(p, "\"");
    }
    p->bare.len = 0;
}

/* An item begins: the comma it waits for, if any. */
static void item_starts(tool_parser *p) {
    if (!p->empty)
        emit(p, ",");
    p->empty = false;
}

/* A value begins: an item of an array (in an object its key began it). */
static void value_starts(tool_parser *p) {
    if (p->stack[p->depth - 1] == '[')
        item_starts(p);
}

static void emit_key(tool_parser *p) {
    const char *s;
    size_t n;
    bare_trimmed(p, &s, &n);
    item_starts(p);
    emit(p, "\"");
    if (p->key_json)
        add(p, &cur(p)->args, s, n); /* escapes checked as it was read */
    else
        emit_escaped(p, s, n);
    p->key_json = false;
    emit(p, "\":");
    p->bare.len = 0;
    p->state = S_VALUE;
}

/* ---- "JSON strings": a key (into bare) or a value (emitted) ---- */

static sw_bytebuf *json_out(tool_parser *p) {
    return p->state == S_KEY_JSON ? &p->bare : &cur(p)->args;
}

/* An escape JSON does not have: its backslash is a character. */
static void bad_escape(tool_parser *p) {
    add(p, json_out(p), "\\\\", 2);
    escape_into(p, json_out(p), p->esc + 1, p->n_esc - 1);
    p->n_esc = 0;
}

static bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void json_str_byte(tool_parser *p, char c) {
    if (p->n_esc == 1 && c != '\0' && strchr("\"\\/bfnrtu", c) != NULL) {
        p->esc[p->n_esc++] = c;
        if (c != 'u') {
            add(p, json_out(p), p->esc, 2);
            p->n_esc = 0;
        }
        return;
    }
    if (p->n_esc >= 2 && is_hex(c)) {
        p->esc[p->n_esc++] = c;
        if (p->n_esc == 6) {
            add(p, json_out(p), p->esc, 6);
            p->n_esc = 0;
        }
        return;
    }
    if (p->n_esc > 0)
        bad_escape(p); /* and c is read as itself */
    if (c == '\\') {
        p->esc[p->n_esc++] = c;
    } else if (c == '"' && p->state == S_KEY_JSON) {
        p->key_json = true;
        p->state = S_COLON;
    } else if (c == '"') {
        emit(p, "\"");
        p->state = S_AFTER;
    } else {
        escape_into(p, json_out(p), &c, 1);
    }
}

/* Closes what is open so the arguments are a JSON object. */
static void repair(tool_parser *p) {
    if (p->state == S_JSON_STR && p->n_esc > 0)
        bad_escape(p);
    p->n_esc = 0;
    p->key_json = false;
    if (p->state == S_STR || p->state == S_JSON_STR)
        emit(p, "\"");
    else if (p->state == S_BARE)
        emit_bare_value(p);
    else if (p->state == S_VALUE && p->depth > 0 && p->stack[p->depth - 1] == '{')
        emit(p, "null"); /* its key is out */
    while (p->depth > 0)
        emit(p, p->stack[--p->depth] == '{' ? "}" : "]");
    p->bare.len = 0;
    cur(p)->done = true;
}

static void malformed(tool_parser *p) {
    repair(p);
    p->state = S_SKIP;
}

static void push(tool_parser *p, char open) {
    if (p->depth == TOOL_DEPTH_MAX) {
        malformed(p);
        return;
    }
    p->stack[p->depth++] = open;
    emit(p, open == '{' ? "{" : "[");
    p->empty = true;
    p->state = open == '{' ? S_KEY : S_VALUE;
}

/* A '}' or ']' after an item (or in an empty container). */
static void close_one(tool_parser *p, char c) {
    const char want = c == '}' ? '{' : '[';
    if (p->depth == 0 || p->stack[p->depth - 1] != want) {
        malformed(p);
        return;
    }
    p->depth--;
    emit(p, c == '}' ? "}" : "]");
    p->empty = false;
    if (p->depth == 0) {
        cur(p)->done = true;
        p->state = S_END;
    } else {
        p->state = S_AFTER;
    }
}

/* "<|tool_call>call:NAME" was not a call: it is text. */
static void abort_header(tool_parser *p) {
    add(p, &p->content, MARKERS[M_CALL], strlen(MARKERS[M_CALL]));
    add(p, &p->content, p->header.p ? p->header.p : "", p->header.len);
    p->header.len = 0;
    p->state = S_TEXT;
}

/* "NAME{": a call is taken. */
static void take_call(tool_parser *p) {
    const size_t kw = 5; /* "call:" */
    if (p->header.len == kw || p->n_calls == TOOL_CALLS_MAX) {
        abort_header(p);
        plain(p, '{');
        return;
    }
    tool_call *c = &p->calls[p->n_calls++];
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "call_%s_%zu", p->id_base, p->n_calls - 1);
    add(p, &c->name, p->header.p + kw, p->header.len - kw);
    p->header.len = 0;
    p->depth = 0;
    push(p, '{');
}

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || c == ':';
}

static void head_byte(tool_parser *p, char c) {
    const size_t kw = 5;
    if (p->header.len < kw) {
        if (c != "call:"[p->header.len]) {
            abort_header(p);
            plain(p, c);
            return;
        }
        add(p, &p->header, &c, 1);
    } else if (c == '{') {
        take_call(p);
    } else if (name_char(c) && p->header.len - kw < TOOL_NAME_MAX) {
        add(p, &p->header, &c, 1);
    } else {
        abort_header(p);
        plain(p, c);
    }
}

static void value_byte(tool_parser *p, char c) {
    if (is_space(c))
        return;
    if (c == '{' || c == '[') {
        value_starts(p);
        push(p, c);
    } else if (c == '"') {
        value_starts(p);
        emit(p, "\"");
        p->state = S_JSON_STR;
    } else if (c == ']' && p->empty && p->stack[p->depth - 1] == '[') {
        close_one(p, c);
    } else if (c == '}' || c == ']' || c == ',' || c == ':') {
        malformed(p);
    } else {
        value_starts(p);
        add(p, &p->bare, &c, 1);
        p->state = S_BARE;
    }
}

static void after_byte(tool_parser *p, char c) {
    if (is_space(c))
        return;
    if (c == ',')
        p->state = p->stack[p->depth - 1] == '{' ? S_KEY : S_VALUE; /* its comma waits */
    else if (c == '}' || c == ']')
        close_one(p, c);
    else
        malformed(p);
}

static void key_byte(tool_parser *p, char c) {
    if (p->state == S_KEY) {
        if (is_space(c))
            return;
        if (c == '}') {
            close_one(p, c);
            return;
        }
        if (c == '"') {
            p->state = S_KEY_JSON;
            return;
        }
        p->state = S_KEY_BARE;
    }
    if (c == ':')
        emit_key(p);
    else if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',')
        malformed(p);
    else
        add(p, &p->bare, &c, 1);
}

/* One byte that is not (part of) a marker. */
static void plain(tool_parser *p, char c) {
    switch (p->state) {
    case S_TEXT: add(p, &p->content, &c, 1); break;
    case S_HEAD: head_byte(p, c); break;
    case S_KEY:
    case S_KEY_BARE: key_byte(p, c); break;
    case S_KEY_STR: add(p, &p->bare, &c, 1); break;
    case S_COLON:
        if (c == ':') {
            emit_key(p);
        } else if (!is_space(c)) {
            p->bare.len = 0;
            malformed(p);
        }
        break;
    case S_VALUE: value_byte(p, c); break;
    case S_STR: emit_escaped(p, &c, 1); break;
    case S_KEY_JSON:
    case S_JSON_STR: json_str_byte(p, c); break;
    case S_BARE:
        if (c == ',' || c == '}' || c == ']') {
            emit_bare_value(p);
            p->state = S_AFTER;
            after_byte(p, c);
        } else {
            add(p, &p->bare, &c, 1);
        }
        break;
    case S_AFTER: after_byte(p, c); break;
    case S_END:
        if (!is_space(c)) { /* no <tool_call|>: the call stands, this is text */
            p->state = S_TEXT;
            plain(p, c);
        }
        break;
    default: break; /* S_SKIP */
    }
}

/* A marker's bytes taken as text where it means nothing. */
static void marker_as_text(tool_parser *p, int m) {
    for (const char *s = MARKERS[m]; *s; s++)
        plain(p, *s);
}

static void marker_in_args(tool_parser *p, int m) {
    if (m == M_CALL_END || m == M_RESP) { /* closed early: what is open is closed */
        repair(p);
        p->state = S_TEXT;
        p->ended = m == M_RESP;
        return;
    }
    switch (p->state) {
    case S_KEY:
        if (m == M_QUOTE)
            p->state = S_KEY_STR;
        else
            malformed(p);
        break;
    case S_KEY_STR:
        if (m == M_QUOTE)
            p->state = S_COLON;
        else
            marker_as_text(p, m);
        break;
    case S_VALUE:
        if (m == M_QUOTE) {
            value_starts(p);
            emit(p, "\"");
            p->state = S_STR;
        } else {
            malformed(p);
        }
        break;
    case S_STR:
        if (m == M_QUOTE) {
            emit(p, "\"");
            p->state = S_AFTER;
        } else {
            marker_as_text(p, m);
        }
        break;
    case S_KEY_JSON:
    case S_JSON_STR: marker_as_text(p, m); break;
    default: malformed(p); break;
    }
}

static void marker(tool_parser *p, int m) {
    switch (p->state) {
    case S_TEXT:
    case S_END:
        if (m == M_CALL) {
            p->state = S_HEAD;
            p->header.len = 0;
        } else if (m == M_RESP) {
            p->ended = true;
        } else if (p->state == S_END && m == M_CALL_END) {
            p->state = S_TEXT; /* the call's close */
        } else {
            p->state = S_TEXT;
            marker_as_text(p, m);
        }
        break;
    case S_HEAD:
        abort_header(p);
        marker(p, m);
        break;
    case S_SKIP:
        if (m == M_CALL_END)
            p->state = S_TEXT;
        else if (m == M_CALL || m == M_RESP) {
            p->state = S_TEXT;
            marker(p, m);
        }
        break;
    default: marker_in_args(p, m); break;
    }
}

/* hold[0..n) against the markers: one complete, a prefix of one, or none. */
static int match_hold(const tool_parser *p, bool *prefix) {
    *prefix = false;
    for (int m = 0; m < N_MARKERS; m++) {
        const size_t len = strlen(MARKERS[m]);
        if (p->n_hold <= len && !memcmp(MARKERS[m], p->hold, p->n_hold)) {
            if (p->n_hold == len)
                return m;
            *prefix = true;
        }
    }
    return M_NONE;
}

static void feed_byte(tool_parser *p, char c) {
    if (p->ended)
        return;
    if (p->n_hold == 0 && c != '<') {
        plain(p, c);
        return;
    }
    p->hold[p->n_hold++] = c;
    bool prefix;
    const int m = match_hold(p, &prefix);
    if (m != M_NONE) {
        p->n_hold = 0;
        marker(p, m);
    } else if (!prefix) { /* the first byte is plain; the rest may start a marker */
        char again[TOOL_HOLD_MAX];
        const size_t n = p->n_hold;
        memcpy(again, p->hold, n);
        p->n_hold = 0;
        plain(p, again[0]);
        for (size_t i = 1; i < n; i++)
            feed_byte(p, again[i]);
    }
}

void tool_parser_init(tool_parser *p, const char *id_base) {
    memset(p, 0, sizeof *p);
    p->state = S_TEXT;
    snprintf(p->id_base, sizeof p->id_base, "%s", id_base ? id_base : "0");
}

void tool_parser_feed(tool_parser *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        feed_byte(p, s[i]);
}

void tool_parser_finish(tool_parser *p) {
    if (!p->ended && p->n_hold > 0) {
        char rest[TOOL_HOLD_MAX];
        const size_t n = p->n_hold;
        memcpy(rest, p->hold, n);
        p->n_hold = 0;
        for (size_t i = 0; i < n; i++)
            plain(p, rest[i]);
    }
    p->n_hold = 0;
    if (p->state == S_HEAD)
        abort_header(p);
    else if (p->state != S_TEXT && p->state != S_END && p->state != S_SKIP)
        repair(p);
    p->state = S_TEXT;
    p->ended = true;
}

void tool_parser_free(tool_parser *p) {
    sw_bytebuf_free(&p->header);
    sw_bytebuf_free(&p->bare);
    sw_bytebuf_free(&p->content);
    for (size_t i = 0; i < p->n_calls; i++) {
        sw_bytebuf_free(&p->calls[i].name);
        sw_bytebuf_free(&p->calls[i].args);
    }
    p->n_calls = 0;
}

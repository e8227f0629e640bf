/*
 * tools.h — OpenAI tool calls on Gemma 4 for `spillway serve`: a chat
 * request's "tools", "tool_choice", assistant "tool_calls" and "tool"
 * messages written in Gemma 4's native function-calling markup
 * (tool_prompt.c), the model's output parsed back into OpenAI tool_calls
 * by a byte-level state machine that can be fed any split of the text
 * (tool_parse.c), and the replies and stream deltas built from it
 * (tool_reply.c). Earlier Gemmas have no native format: a tool request
 * to them is a 400.
 *
 * Why the server and not the library: the format is a translation of the
 * OpenAI request's JSON (schemas, arguments as JSON strings), which only
 * the HTTP API speaks; the library's sw_chat_format keeps writing plain
 * conversations.
 *
 * The markup (Google, "Gemma 4 prompt formatting",
 * https://ai.google.dev/gemma/docs/core/prompt-formatting-gemma4, and the
 * chat template of google/gemma-4-31B-it, which llama.cpp keeps as
 * models/templates/google-gemma-4-31B-it.jinja):
 *   declarations, in the system turn:  <|tool>declaration:NAME{...}<tool|>
 *   a call, in the model's turn:       <|tool_call>call:NAME{key:value,...}<tool_call|>
 *   its result, in the same turn:      <|tool_response>response:NAME{...}<tool_response|>
 *   strings are enclosed in <|"|> (no escaping inside), keys of call
 *   arguments are bare, numbers and true/false as written. After its calls
 *   the model emits <|tool_response> (llama.cpp counts it an end of
 *   generation); the results follow in the same model turn, which goes on
 *   after the last <tool_response|>.
 *
 * Limits: a forced call's arguments are constrained (grammar) only when
 * its function is known (named, or the only one): with "required" among
 * several the model picks the name and writes free arguments. Logprobs of
 * a tool request index the library's text, which lacks the control
 * tokens' text that the reply's text holds.
 */
#ifndef SW_SERVE_TOOLS_H
#define SW_SERVE_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "serve/server.h"
#include "spillway_grammar.h"
#include "util/bytebuf.h"

/* ---- the parser (tool_parse.c) ------------------------------------------ */

enum { TOOL_HOLD_MAX = 24, TOOL_DEPTH_MAX = 32, TOOL_CALLS_MAX = 64, TOOL_NAME_MAX = 256 };

/* One call the model made: arguments converted to JSON as they arrive. */
typedef struct tool_call {
    char id[48];                 /* "call_<request>_<index>" */
    sw_bytebuf name;
    sw_bytebuf args;             /* JSON text so far; a complete object once done */
    bool done;                   /* closed (or repaired at the end) */
    bool announced;              /* a stream sent its id and name */
    size_t args_sent;            /* bytes of args a stream sent */
} tool_call;

/* The state machine over the generated text: bytes outside calls are
 * content; <|tool_call>call:NAME{...}<tool_call|> becomes a call; text
 * from <|tool_response> on is dropped (the model's end of its calls). A
 * call is taken once "NAME{" is in; a header that does not parse is
 * content. Arguments that do not parse are repaired (open strings and
 * containers closed: always a JSON object) and the rest of the call
 * skipped to <tool_call|>. */
typedef struct tool_parser {
    int state;
    char hold[TOOL_HOLD_MAX];    /* bytes that may start a marker */
    size_t n_hold;
    sw_bytebuf header;           /* "<|tool_call>call:NAME" while not yet taken */
    sw_bytebuf bare;             /* an unquoted key or value being read */
    char stack[TOOL_DEPTH_MAX];  /* '{' or '[' of the open containers */
    size_t depth;
    bool empty;                  /* the innermost container has no item yet */
    bool key_json;               /* the key in bare is a JSON string's inside, escaped */
    char esc[8];                 /* an escape being read in a JSON string */
    size_t n_esc;
    sw_bytebuf content;          /* text outside calls */
    tool_call calls[TOOL_CALLS_MAX];
    size_t n_calls;
    size_t content_sent;         /* bytes of content a stream sent */
    bool ended;                  /* <|tool_response> seen: the rest is dropped */
    bool oom;
    char id_base[24];            /* the request's number, for call ids */
} tool_parser;

void tool_parser_init(tool_parser *p, const char *id_base);
/* Feeds n bytes (any split of the text, in order). */
void tool_parser_feed(tool_parser *p, const char *s, size_t n);
/* The text is complete: held bytes become content, an open call is repaired. */
void tool_parser_finish(tool_parser *p);
void tool_parser_free(tool_parser *p);

/* ---- a tool request (tool_prompt.c, tool_reply.c) ------------------------ */

typedef enum srv_tool_choice {
    SRV_TOOL_NONE,               /* declared nowhere, output not parsed */
    SRV_TOOL_AUTO,
    SRV_TOOL_REQUIRED,           /* the reply starts "<|tool_call>call:" (one function: as NAMED) */
    SRV_TOOL_NAMED               /* the reply starts "<|tool_call>call:NAME", its arguments
                                    a JSON object kept to the function's schema */
} srv_tool_choice;

typedef struct srv_tools {
    srv_tool_choice choice;
    const sw_model *model;
    char *prefix;                /* the forced start of the reply (in the prompt), or NULL */
    sw_grammar *grammar;         /* the forced call's arguments: its parameters' schema
                                    as JSON (spillway_grammar.h), or NULL */
    /* the scheduler thread's (on_token, then sync under mu): the output
     * with the text of Gemma 4's control tokens, which print nothing */
    sw_bytebuf raw;
    size_t raw_taken;            /* bytes of raw already in the srv_req's text */
    bool stopped;                /* <|tool_response> or a stop string reached: end it */
    bool cut;                    /* a stop string cut the text: nothing more is taken */
    bool raw_oom;
    tool_parser stream;          /* a streamed reply's parser (connection side, under mu) */
    bool stream_started;
} srv_tools;

/* A chat request's tool fields and messages. Returns 0 when the request
 * has none of them (the plain chat template applies), 1 when it wrote the
 * whole prompt into *out and set *tools (NULL for tool_choice "none"),
 * -1 with an error reply (400: a malformed field, or a model with no
 * native tool-call format). */
int srv_tools_prompt(const sw_model *model, json_object *root, sw_bytebuf *out,
                     srv_tools **tools, srv_reply *err);
void srv_tools_free(srv_tools *t);

/* on_token of a tool request (user: its srv_tools): appends the piece, or
 * a control token's text, to raw until <|tool_response>. */
void srv_tools_on_token(void *user, sw_request *req, int32_t id, const char *piece, size_t len);
/* raw's new bytes into text, cut at the first of the n_stop stop strings
 * (under mu, scheduler thread); false when out of memory. */
bool srv_tools_take(srv_tools *t, sw_bytebuf *text, char *const *stop, size_t n_stop);

/* The "message" of a finished tool request: content and tool_calls parsed
 * from its text; *finish becomes "tool_calls" when it made calls and
 * stopped. NULL when out of memory. */
json_object *srv_tools_message(const srv_req *r, const char **finish);
/* A stream chunk's "delta" for delta bytes of new text (finish non-NULL:
 * the last, which flushes); *finish as above. */
json_object *srv_tools_delta(const srv_req *r, const char *delta, size_t len, bool first,
                             const char **finish);

#endif

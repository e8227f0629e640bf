/*
 * response_format.h — OpenAI's "response_format" for `spillway serve`
 * (response_format.c): {"type": "text"} (the default), {"type":
 * "json_object"} and {"type": "json_schema", "json_schema": {"name",
 * "schema", "strict"}} become a grammar the library's scheduler keeps the
 * output to (spillway_grammar.h). A schema the compiler cannot honour is
 * a 400 naming the keyword.
 */
#ifndef SW_SERVE_RESPONSE_FORMAT_H
#define SW_SERVE_RESPONSE_FORMAT_H

#include "serve/server.h"
#include "spillway_grammar.h"

/* The request body's response_format into *out (NULL: none; else a
 * reference the caller drops with sw_grammar_destroy), or an error reply.
 * Compiled grammars are kept (a few, by their schema's text), so a schema
 * sent again reuses its grammar and its warm token cache. */
bool srv_response_format_parse(json_object *root, sw_grammar **out, srv_reply *err);

#endif

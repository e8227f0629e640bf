/*
 * spillway_grammar.h — structured output: decoding constrained to a
 * grammar, compiled from a JSON schema (OpenAI's response_format), so the
 * text always parses and validates. Include it beside spillway.h (it
 * includes spillway.h itself); libspillway exports these calls like the
 * rest of the API.
 *
 * A request made with sw_request_options.grammar has, at every sampled
 * step, the logits of the tokens that cannot continue the grammar set to
 * -infinity (the sampler then picks among the rest, with its own
 * settings), and ends (SW_FINISH_EOG) as soon as the text is complete and
 * nothing may follow; an end-of-turn token is allowed only where the text
 * is complete. It may still end early at n_predict or the context's end:
 * then the text is a prefix of a valid one. Requests with a grammar take
 * no speculative drafts.
 *
 * Example: a JSON object with a name and an age
 *   sw_grammar *g;
 *   const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
 *       "\"string\",\"maxLength\":20},\"age\":{\"type\":\"integer\",\"minimum\":0}},"
 *       "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";
 *   if (sw_grammar_from_json_schema(schema, strlen(schema), &g) != SW_OK)
 *       puts(sw_last_error());               (names any unsupported keyword)
 *   ro.grammar = g;  sw_scheduler_submit(q, ids, n, &ro, &r);
 *   sw_grammar_destroy(g);                   (the request keeps its own reference)
 *
 * Output is compact JSON: no whitespace, an object's properties in the
 * schema's order (required ones always, optional ones as the model
 * chooses, no others). Supported: type (a name or a list), object
 * (properties, required, additionalProperties), array (items, minItems,
 * maxItems up to 512), string (minLength, maxLength up to 512; format
 * date, time, date-time, uuid), integer (minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum: exact), number (minimum 0 only),
 * boolean, null, enum, const, anyOf, oneOf (as anyOf), allOf of one
 * schema, nullable, $ref to "#", "#/$defs/..." or "#/definitions/..."
 * (recursion too), and annotations (title, description, default, ...).
 * Anything else (pattern, other formats, bounds on numbers, tuples,
 * uniqueItems, external $ref, ...) is refused with SW_ERR_UNSUPPORTED and
 * a message naming it. Numbers are written with at most 16 integer
 * digits, 6 fraction digits and a 2-digit exponent.
 *
 * Thread-safety: a grammar may be used by many requests and threads at
 * once (its token cache locks itself). Ownership: references are
 * counted; sw_grammar_destroy drops the caller's.
 */
#ifndef SPILLWAY_GRAMMAR_H
#define SPILLWAY_GRAMMAR_H

#include "spillway.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_grammar sw_grammar;

/* Compiles the JSON schema text (len bytes) into *out.
 * Errors: SW_ERR_ARG (not JSON, or an invalid schema: the message says
 * where), SW_ERR_UNSUPPORTED (a feature above is missing: the message
 * names the keyword), SW_ERR_OOM_HOST. */
SW_API sw_status sw_grammar_from_json_schema(const char *schema, size_t len, sw_grammar **out);

/* Any JSON object (response_format {"type": "json_object"}), nested up
 * to about 20 levels. Errors: SW_ERR_OOM_HOST. */
SW_API sw_status sw_grammar_json_object(sw_grammar **out);

/* Drops the caller's reference. Accepts NULL. */
SW_API void sw_grammar_destroy(sw_grammar *grammar);

/* Takes one more reference (dropped by sw_grammar_destroy); returns grammar. */
SW_API sw_grammar *sw_grammar_ref(sw_grammar *grammar);

/* Whether text (len bytes) is a prefix the grammar allows (SW_OK) or not
 * (SW_ERR_ARG: the message names the first byte it cannot take);
 * *complete (may be NULL) gets 1 when the text is a whole sentence. */
SW_API sw_status sw_grammar_check(const sw_grammar *grammar, const char *text, size_t len,
                                  int *complete);

#ifdef __cplusplus
}
#endif

#endif

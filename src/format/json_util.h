/*
 * json_util.h — strict parsing of untrusted JSON (json-c underneath) and
 * typed member getters whose errors name the file and the member.
 *
 * Used by the Hugging Face readers: safetensors headers, config.json,
 * tokenizer.json, tokenizer_config.json. Parsing is strict RFC 8259 (no
 * comments, no trailing commas), UTF-8 is validated, nesting is capped at
 * JSONU_MAX_DEPTH and nothing but whitespace may follow the document.
 *
 *   json_object *root;
 *   if (jsonu_parse_file(path, JSONU_MAX_FILE_BYTES, &root) != SW_OK) return ...;
 *   int64_t n;
 *   st = jsonu_get_i64(root, "num_hidden_layers", path, &n);  // SW_ERR_ARG: absent
 *   json_object_put(root);
 */
#ifndef SW_FORMAT_JSON_UTIL_H
#define SW_FORMAT_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "spillway.h"

#define JSONU_MAX_DEPTH 64
/* Largest JSON file read whole: tokenizer.json of a 262k vocabulary is
 * ~33 MB; 512 MiB leaves room without letting a hostile file take RAM. */
#define JSONU_MAX_FILE_BYTES ((size_t)512 << 20)

/* Parses text[0..len) (need not be NUL-terminated). `what` names the source
 * in messages ("config.json", "safetensors header of X"). On success *out
 * is owned by the caller (json_object_put). Errors: SW_ERR_FORMAT ("WHAT:
 * invalid JSON at byte N: reason"), SW_ERR_OOM_HOST. */
sw_status jsonu_parse(const char *text, size_t len, const char *what, json_object **out);

/* Reads `path` whole (at most max_bytes) and parses it. Errors: SW_ERR_IO
 * (missing or unreadable: message names the path), SW_ERR_FORMAT (too big,
 * invalid JSON), SW_ERR_OOM_HOST. */
sw_status jsonu_parse_file(const char *path, size_t max_bytes, json_object **out);

/* Member getters. SW_OK and *out set when `key` exists with the right
 * type; SW_ERR_ARG without a message when absent (or JSON null);
 * SW_ERR_FORMAT naming `what` and `key` when the type is wrong.
 * i64 accepts integers only; f64 accepts any number; str borrows the
 * string (valid while obj lives; *len may be NULL). */
sw_status jsonu_get_i64(const json_object *obj, const char *key, const char *what,
                        int64_t *out);
sw_status jsonu_get_f64(const json_object *obj, const char *key, const char *what,
                        double *out);
/* An integer member in [lo, hi], or `def` when absent or null. Errors:
 * SW_ERR_FORMAT naming the key and the range. */
sw_status jsonu_get_int_in(const json_object *o, const char *key, const char *what, int64_t def,
                          int64_t lo, int64_t hi, int64_t *out);
sw_status jsonu_get_bool(const json_object *obj, const char *key, const char *what,
                         bool *out);
sw_status jsonu_get_str(const json_object *obj, const char *key, const char *what,
                        const char **out, size_t *len);
sw_status jsonu_get_obj(const json_object *obj, const char *key, const char *what,
                        json_object **out);
sw_status jsonu_get_arr(const json_object *obj, const char *key, const char *what,
                        json_object **out);

#endif

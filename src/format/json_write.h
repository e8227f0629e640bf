/*
 * json_write.h — the one JSON writer: a streaming emitter into a byte_sink
 * or a stdio FILE, in two layouts.
 *
 *   JW_PRETTY   Python's json.dumps(indent=2) and serde_json's pretty
 *               printer, byte for byte (two-space indent, "key": value,
 *               empty containers as {} and []): the Hugging Face files
 *               synth writes (config.json, a 262k-entry tokenizer.json).
 *   JW_COMPACT  no whitespace at all, one line: the CLI's --json reports,
 *               plan --json (byte-compared snapshots) and doctor's cache.
 *
 *   jsonw j;
 *   jw_init_file(&j, stdout, JW_COMPACT);
 *   jw_obj(&j);
 *   jw_key_str(&j, "name", "gemma");      // {"name":"gemma","n_layer":18}
 *   jw_key_uint(&j, "n_layer", 18);
 *   jw_obj_end(&j);
 *   sw_status st = jw_finish(&j);          // adds "\n"
 *
 * Streaming keeps memory flat where a json-c tree of a 262k-token
 * vocabulary would take ~100 MB. Strings are escaped as Python does
 * (\" \\ \b \f \n \r \t, other controls \u00XX); bytes >= 0x80 pass
 * through (UTF-8 is the caller's to validate). Errors are sticky: the
 * first sink error (or nesting past JW_MAX_DEPTH) is kept in st, later
 * calls write nothing, and jw_finish returns it. The caller pairs every
 * container and puts a key before each member; the writer checks depth
 * only.
 */
#ifndef SW_FORMAT_JSON_WRITE_H
#define SW_FORMAT_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format/byte_sink.h"
#include "spillway.h"

#define JW_MAX_DEPTH 16

typedef enum jw_style { JW_PRETTY, JW_COMPACT } jw_style;

typedef struct jsonw {
    byte_sink sink;
    jw_style style;
    sw_status st;                    /* sticky: the first error */
    int depth;
    bool has_items[JW_MAX_DEPTH];    /* per open container: a value written */
    bool after_key;                  /* the next value follows a key */
} jsonw;

/* A writer into `sink` (copied) or into `f` (borrowed: it must outlive the
 * writer; a short fwrite is SW_ERR_IO). */
void jw_init(jsonw *j, const byte_sink *sink, jw_style style);
void jw_init_file(jsonw *j, FILE *f, jw_style style);

void jw_obj(jsonw *j);
void jw_obj_end(jsonw *j);
void jw_arr(jsonw *j);
void jw_arr_end(jsonw *j);
void jw_key(jsonw *j, const char *key);
void jw_keyn(jsonw *j, const char *key, size_t len);

/* Values. jw_str writes null for s == NULL. Numbers: jw_int and jw_uint
 * exactly; jw_float as Python's repr (1e-06, 10000.0: synth's files);
 * jw_num with 6 significant digits ("%.6g": the CLI's rates); jw_fixed
 * with `decimals` digits after the point. JSON has no inf or NaN: the
 * float forms write null for them. jw_raw writes `json`, a complete value
 * the caller already rendered (sw_model_meta_json), as it is. */
void jw_str(jsonw *j, const char *s);
void jw_strn(jsonw *j, const char *s, size_t len);
void jw_int(jsonw *j, int64_t v);
void jw_uint(jsonw *j, uint64_t v);
void jw_float(jsonw *j, double v);
void jw_num(jsonw *j, double v);
void jw_fixed(jsonw *j, double v, int decimals);
void jw_bool(jsonw *j, bool v);
void jw_null(jsonw *j);
void jw_raw(jsonw *j, const char *json);

/* "key": value in one call. */
void jw_key_str(jsonw *j, const char *key, const char *s);  /* NULL: null */
void jw_key_int(jsonw *j, const char *key, int64_t v);
void jw_key_uint(jsonw *j, const char *key, uint64_t v);
void jw_key_num(jsonw *j, const char *key, double v);
void jw_key_bool(jsonw *j, const char *key, bool v);

/* Ends the document with "\n"; returns the sticky status. */
sw_status jw_finish(jsonw *j);

/* Python's repr(float) for finite v into buf (>= 32 bytes): the shortest
 * digits that round-trip. */
void jw_py_float(double v, char *buf, size_t cap);

#endif

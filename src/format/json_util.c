/*
 * json_util.c — strict json-c parsing with a depth cap, and typed getters
 * (json_util.h). json-c converts types silently (a string read as int is
 * 0); these getters refuse instead, so a hostile file cannot pass a wrong
 * type off as a default.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json_util.h"
#include "util/error.h"

/* The first ' outside a double-quoted string of text[0..n), or n. json-c
 * takes single-quoted object keys even in strict mode; valid JSON has a '
 * only inside strings, and up to the first one outside them the document
 * reads the same both ways, so this finds exactly json-c's leniency. */
static size_t single_quote_at(const char *text, size_t n) {
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character */
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '\'') {
            return i;
        }
    }
    return n;
}

sw_status jsonu_parse(const char *text, size_t len, const char *what, json_object **out) {
    *out = NULL;
    if (len > (size_t)INT32_MAX) /* json-c takes an int length */
        return sw_errorf(SW_ERR_FORMAT, "%s: %zu bytes of JSON is more than the 2 GiB "
                         "supported", what, len);
    json_tokener *tok = json_tokener_new_ex(JSONU_MAX_DEPTH);
    if (tok == NULL)
        return sw_errorf(SW_ERR_OOM_HOST, "out of host memory parsing %s", what);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (err == json_tokener_continue)
        return sw_errorf(SW_ERR_FORMAT, "%s: JSON ends early (truncated after %zu bytes)",
                         what, len);
    if (err != json_tokener_success)
        return sw_errorf(SW_ERR_FORMAT, "%s: invalid JSON at byte %zu: %s", what, end,
                         json_tokener_error_desc(err));
    for (size_t i = end; i < len; i++) {
        char c = text[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            json_object_put(root);
            return sw_errorf(SW_ERR_FORMAT, "%s: unexpected data after the JSON document "
                             "at byte %zu", what, i);
        }
    }
    if (root == NULL) /* the document was the literal null */
        return sw_errorf(SW_ERR_FORMAT, "%s: the JSON document is null", what);
    const size_t quote = single_quote_at(text, end);
    if (quote < end) {
        json_object_put(root);
        return sw_errorf(SW_ERR_FORMAT, "%s: invalid JSON at byte %zu: a single-quoted "
                         "string (JSON strings take double quotes)", what, quote);
    }
    *out = root;
    return SW_OK;
}

sw_status jsonu_parse_file(const char *path, size_t max_bytes, json_object **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sw_errorf(SW_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    sw_status st = SW_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > max_bytes + 1)
                ncap = max_bytes + 1;
            if (ncap <= cap) {
                st = sw_errorf(SW_ERR_FORMAT, "%s is larger than the %zu bytes accepted",
                               path, max_bytes);
                goto done;
            }
            char *nb = realloc(buf, ncap);
            if (nb == NULL) {
                st = sw_errorf(SW_ERR_OOM_HOST, "out of host memory reading %s", path);
                goto done;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        st = sw_errorf(SW_ERR_IO, "cannot read %s", path);
        goto done;
    }
    if (len > max_bytes) {
        st = sw_errorf(SW_ERR_FORMAT, "%s is larger than the %zu bytes accepted", path,
                       max_bytes);
        goto done;
    }
    st = jsonu_parse(buf ? buf : "", len, path, out);
done:
    free(buf);
    fclose(f);
    return st;
}

/* The member `key`, or NULL when absent or null. */
static json_object *member(const json_object *obj, const char *key) {
    json_object *v = NULL;
    if (obj == NULL || !json_object_is_type(obj, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(obj, key, &v))
        return NULL;
    return v;
}

static sw_status wrong(const char *what, const char *key, const char *expected) {
    return sw_errorf(SW_ERR_FORMAT, "%s: '%s' should be %s", what, key, expected);
}

sw_status jsonu_get_i64(const json_object *obj, const char *key, const char *what,
                        int64_t *out) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_int))
        return wrong(what, key, "an integer");
    errno = 0;
    int64_t x = json_object_get_int64(v);
    if (errno != 0 || x == INT64_MAX) /* saturated: above int64 */
        return wrong(what, key, "an integer below 2^63");
    *out = x;
    return SW_OK;
}

sw_status jsonu_get_f64(const json_object *obj, const char *key, const char *what,
                        double *out) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return wrong(what, key, "a number");
    *out = json_object_get_double(v);
    return SW_OK;
}

sw_status jsonu_get_bool(const json_object *obj, const char *key, const char *what,
                         bool *out) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_boolean))
        return wrong(what, key, "true or false");
    *out = json_object_get_boolean(v) != 0;
    return SW_OK;
}

sw_status jsonu_get_str(const json_object *obj, const char *key, const char *what,
                        const char **out, size_t *len) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_string))
        return wrong(what, key, "a string");
    *out = json_object_get_string(v);
    if (len != NULL)
        *len = (size_t)json_object_get_string_len(v);
    return SW_OK;
}

sw_status jsonu_get_obj(const json_object *obj, const char *key, const char *what,
                        json_object **out) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_object))
        return wrong(what, key, "an object");
    *out = v;
    return SW_OK;
}

sw_status jsonu_get_arr(const json_object *obj, const char *key, const char *what,
                        json_object **out) {
    json_object *v = member(obj, key);
    if (v == NULL)
        return SW_ERR_ARG;
    if (!json_object_is_type(v, json_type_array))
        return wrong(what, key, "an array");
    *out = v;
    return SW_OK;
}

sw_status jsonu_get_int_in(const json_object *o, const char *key, const char *what, int64_t def,
                          int64_t lo, int64_t hi, int64_t *out) {
    sw_status st = jsonu_get_i64(o, key, what, out);
    if (st == SW_ERR_ARG) {
        *out = def;
        return SW_OK;
    }
    if (st != SW_OK)
        return st;
    if (*out < lo || *out > hi)
        return sw_errorf(SW_ERR_FORMAT, "%s: '%s' = %lld is out of range [%lld, %lld]", what,
                         key, (long long)*out, (long long)lo, (long long)hi);
    return SW_OK;
}

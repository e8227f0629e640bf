/*
 * response_format.c — "response_format" into a grammar (response_format.h).
 * The grammars compiled are kept in a small table by the schema's compact
 * text, the oldest dropped first: agent frameworks send the same schema
 * with every request, and a grammar's token cache (the walk over the
 * vocabulary for each new position, milliseconds each) then stays warm.
 * One table per process, under its own lock (one server per process),
 * kept until the process exits.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "serve/response_format.h"

#define BAD_REQUEST(...) srv_api_error(400, "invalid_request_error", __VA_ARGS__)

enum { N_KEPT = 8 };

static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *key;                   /* the schema's compact text ("" for json_object) */
    sw_grammar *g;               /* the table's reference */
} kept[N_KEPT];

/* A kept grammar for key (a new reference), or NULL. */
static sw_grammar *kept_find(const char *key) {
    sw_grammar *g = NULL;
    pthread_mutex_lock(&kept_mu);
    for (int i = 0; i < N_KEPT && g == NULL; i++)
        if (kept[i].key != NULL && !strcmp(kept[i].key, key))
            g = sw_grammar_ref(kept[i].g); /* the caller's; the table keeps its own */
    pthread_mutex_unlock(&kept_mu);
    return g;
}

/* Keeps g (the table's reference) under key, dropping the oldest. */
static void kept_add(const char *key, sw_grammar *g) {
    char *k = strdup(key);
    if (k == NULL) { /* not kept: the next request compiles it again */
        sw_grammar_destroy(g);
        return;
    }
    pthread_mutex_lock(&kept_mu);
    free(kept[N_KEPT - 1].key);
    sw_grammar_destroy(kept[N_KEPT - 1].g);
    memmove(&kept[1], &kept[0], (N_KEPT - 1) * sizeof kept[0]);
    kept[0].key = k;
    kept[0].g = g;
    pthread_mutex_unlock(&kept_mu);
}

/* The grammar of a json_schema format's "json_schema" object. */
static bool from_schema(json_object *js, sw_grammar **out, srv_reply *err) {
    json_object *schema = NULL, *name = NULL;
    if (!json_object_is_type(js, json_type_object)) {
        *err = BAD_REQUEST("\"response_format\": \"json_schema\" must be an object");
        return false;
    }
    if (json_object_object_get_ex(js, "name", &name) && !json_object_is_type(name,
                                                                         json_type_string)) {
        *err = BAD_REQUEST("\"response_format.json_schema.name\" must be a string");
        return false;
    }
    if (!json_object_object_get_ex(js, "schema", &schema) || schema == NULL) {
        *err = BAD_REQUEST("\"response_format.json_schema.schema\" is required");
        return false;
    }
    const char *key = json_object_to_json_string_ext(schema, JSON_C_TO_STRING_PLAIN);
    if ((*out = kept_find(key)) != NULL)
        return true;
    sw_grammar *g = NULL;
    const sw_status st = sw_grammar_from_json_schema(key, strlen(key), &g);
    if (st == SW_ERR_OOM_HOST) {
        *err = srv_api_error(500, "server_error", "out of memory for the schema");
        return false;
    }
    if (st != SW_OK) {
        *err = BAD_REQUEST("\"response_format\": %s", sw_last_error());
        return false;
    }
    kept_add(key, sw_grammar_ref(g));
    *out = g;
    return true;
}

bool srv_response_format_parse(json_object *root, sw_grammar **out, srv_reply *err) {
    json_object *rf = NULL, *type = NULL, *js = NULL;
    *out = NULL;
    if (!json_object_object_get_ex(root, "response_format", &rf) || rf == NULL)
        return true;
    if (!json_object_is_type(rf, json_type_object) ||
        !json_object_object_get_ex(rf, "type", &type) ||
        !json_object_is_type(type, json_type_string)) {
        *err = BAD_REQUEST("\"response_format\" must be an object with a \"type\"");
        return false;
    }
    const char *t = json_object_get_string(type);
    if (!strcmp(t, "text"))
        return true;
    if (!strcmp(t, "json_object")) {
        if ((*out = kept_find("")) != NULL)
            return true;
        if (sw_grammar_json_object(out) != SW_OK) {
            *err = srv_api_error(500, "server_error", "out of memory for the grammar");
            return false;
        }
        kept_add("", sw_grammar_ref(*out));
        return true;
    }
    if (!strcmp(t, "json_schema")) {
        json_object_object_get_ex(rf, "json_schema", &js);
        return from_schema(js, out, err);
    }
    *err = BAD_REQUEST("\"response_format\" type \"%s\": \"text\", \"json_object\" or "
                       "\"json_schema\"", t);
    return false;
}

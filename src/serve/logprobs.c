/*
 * logprobs.c — OpenAI's logprobs in requests and responses (server.h).
 * Requests: chat takes "logprobs": true and "top_logprobs": 0..20;
 * completions take "logprobs": 0..20 (OpenAI allows 5; Spillway's library
 * keeps up to SW_LOGPROBS_MAX). Responses, for the tokens whose pieces lie
 * in a byte range of the text (a stream's chunk, or all of it):
 *   chat         {"content": [{"token", "logprob", "bytes", "top_logprobs":
 *                 [{"token", "logprob", "bytes"}...]}...]}
 *   completions  {"tokens": [...], "token_logprobs": [...],
 *                 "top_logprobs": [{token: logprob, ...}...], "text_offset": [...]}
 * A log-probability is the model's, log-softmax of the logits row that
 * produced the token (as `spillway perplexity` scores text), not of the
 * distribution after temperature or top-p.
 */
#include <stdio.h>
#include <string.h>

#include "serve/server.h"
#include "util/utf8.h"

static srv_reply bad(const char *msg) {
    return srv_api_error(400, "invalid_request_error", "%s", msg);
}

bool srv_logprobs_parse(json_object *root, bool chat, int *out, srv_reply *err) {
    json_object *v = NULL, *top = NULL;
    *out = -1;
    const bool has = json_object_object_get_ex(root, "logprobs", &v) && v != NULL;
    const bool has_top = json_object_object_get_ex(root, "top_logprobs", &top) && top != NULL;
    if (chat) {
        if (has && !json_object_is_type(v, json_type_boolean)) {
            *err = bad("\"logprobs\" must be true or false");
            return false;
        }
        const bool want = has && json_object_get_boolean(v);
        if (has_top && !want) {
            *err = bad("\"top_logprobs\" needs \"logprobs\": true");
            return false;
        }
        v = top;
        if (!want)
            return true;
        if (!has_top) {
            *out = 0;
            return true;
        }
    } else if (!has) {
        return true;
    }
    const int64_t n = json_object_get_int64(v);
    if (!json_object_is_type(v, json_type_int) || n < 0 || n > SW_LOGPROBS_MAX) {
        *err = srv_api_error(400, "invalid_request_error", "\"%s\" must be an integer from 0 "
                             "to %d", chat ? "top_logprobs" : "logprobs", SW_LOGPROBS_MAX);
        return false;
    }
    *out = (int)n;
    return true;
}

/* A token's piece: its text, or where it is not whole UTF-8 (a byte
 * token, part of a character) "bytes:\xe4\xbd" as OpenAI names such
 * tokens; and its bytes. */
static void piece(const srv_state *s, int32_t id, json_object **text, json_object **bytes) {
    char buf[256];
    size_t len = 0;
    if (sw_token_to_piece(s->model, id, buf, sizeof buf, &len) != SW_OK || len > sizeof buf)
        len = 0;
    if (utf8_valid_prefix((const uint8_t *)buf, len) == len) {
        *text = json_object_new_string_len(buf, (int)len);
    } else {
        char named[sizeof "bytes:" + 4 * sizeof buf];
        size_t n = (size_t)snprintf(named, sizeof named, "bytes:");
        for (size_t i = 0; i < len; i++)
            n += (size_t)snprintf(named + n, sizeof named - n, "\\x%02x", (unsigned char)buf[i]);
        *text = json_object_new_string_len(named, (int)n);
    }
    if (bytes == NULL)
        return;
    *bytes = json_object_new_array();
    for (size_t i = 0; i < len; i++)
        json_object_array_add(*bytes, json_object_new_int((unsigned char)buf[i]));
}

static json_object *chat_entry(const srv_state *s, const sw_token_logprob *e) {
    json_object *o = json_object_new_object(), *text = NULL, *bytes = NULL;
    json_object *top = json_object_new_array();
    piece(s, e->id, &text, &bytes);
    json_object_object_add(o, "token", text);
    json_object_object_add(o, "logprob", json_object_new_double(e->logprob));
    json_object_object_add(o, "bytes", bytes);
    for (uint32_t j = 0; j < e->n_top; j++) {
        json_object *t = json_object_new_object();
        piece(s, e->top_id[j], &text, &bytes);
        json_object_object_add(t, "token", text);
        json_object_object_add(t, "logprob", json_object_new_double(e->top_logprob[j]));
        json_object_object_add(t, "bytes", bytes);
        json_object_array_add(top, t);
    }
    json_object_object_add(o, "top_logprobs", top);
    return o;
}

json_object *srv_logprobs_json(const srv_state *s, const srv_req *r, size_t from, size_t to) {
    if (r->logprobs < 0)
        return NULL;
    json_object *root = json_object_new_object();
    json_object *content = json_object_new_array(), *tokens = json_object_new_array();
    json_object *lps = json_object_new_array(), *tops = json_object_new_array();
    json_object *offsets = json_object_new_array();
    for (size_t i = 0; i < r->n_lp; i++) {
        const sw_token_logprob *e = &r->lp[i];
        if (e->text_offset < from || e->text_offset >= to)
            continue; /* another chunk's, or cut by a stop string */
        if (r->chat) {
            json_object_array_add(content, chat_entry(s, e));
            continue;
        }
        json_object *text = NULL, *top = json_object_new_object();
        piece(s, e->id, &text, NULL);
        json_object_array_add(tokens, text);
        json_object_array_add(lps, json_object_new_double(e->logprob));
        for (uint32_t j = 0; j < e->n_top; j++) { /* keys: the pieces, UTF-8 repaired */
            json_object *key = NULL;
            piece(s, e->top_id[j], &key, NULL);
            json_object_object_add(top, json_object_get_string(key),
                                   json_object_new_double(e->top_logprob[j]));
            json_object_put(key);
        }
        json_object_array_add(tops, top);
        json_object_array_add(offsets, json_object_new_int64((int64_t)e->text_offset));
    }
    if (r->chat) {
        json_object_object_add(root, "content", content);
        json_object_put(tokens), json_object_put(lps), json_object_put(tops);
        json_object_put(offsets);
    } else {
        json_object_object_add(root, "tokens", tokens);
        json_object_object_add(root, "token_logprobs", lps);
        json_object_object_add(root, "top_logprobs", tops);
        json_object_object_add(root, "text_offset", offsets);
        json_object_put(content);
    }
    return root;
}

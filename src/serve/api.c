/*
 * api.c — the OpenAI-shaped JSON of `spillway serve` (server.h):
 * request bodies of /v1/completions and /v1/chat/completions into
 * requests (every field checked: a wrong type, a value out of range, a
 * prompt the context cannot hold is a 400 naming the field and the
 * numbers), and the responses, stream chunks, errors, /v1/models,
 * /health and /metrics.
 *
 * Chat messages become the model's turns by the library's one template
 * (sw_chat_format, which `spillway chat` writes too):
 *   <start_of_turn>user\n{text}<end_of_turn>\n ... <start_of_turn>model\n
 * with "assistant" as the model's role and a "system" message folded into
 * the next user turn followed by a blank line (Gemma 1-3 have no system
 * role); Gemma 4's <|turn>...<turn|>, its system message a turn of its own.
 * A chat with "tools" (Gemma 4 only) is written, and its reply parsed into
 * tool_calls, by tools.h.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, open_memstream */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/server.h"
#include "serve/response_format.h"
#include "serve/tools.h"
#include "format/json_util.h"
#include "util/utf8.h"
#include "util/clock.h"

enum { DEFAULT_MAX_TOKENS_COMPLETION = 16 };

/* A JSON string of n bytes that may not be valid UTF-8 (generated text
 * can end inside a character, or hold byte tokens that form none): each
 * ill-formed part becomes U+FFFD, so the body is always valid JSON. */
static json_object *json_text(const char *p, size_t n) {
    uint8_t stack[1024];
    uint8_t *buf = 3 * n <= sizeof stack ? stack : malloc(3 * n + 1);
    if (buf == NULL)
        return json_object_new_string("");
    const uint64_t len = utf8_repair((const uint8_t *)p, n, buf);
    json_object *o = json_object_new_string_len((const char *)buf, (int)len);
    if (buf != stack)
        free(buf);
    return o;
}

srv_reply srv_api_error(unsigned status, const char *type, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object *root = json_object_new_object(), *e = json_object_new_object();
    json_object_object_add(e, "message", json_text(msg, strlen(msg)));
    json_object_object_add(e, "type", json_object_new_string(type));
    json_object_object_add(e, "param", NULL);
    json_object_object_add(e, "code", NULL);
    json_object_object_add(root, "error", e);
    char *body = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return (srv_reply){status, body};
}

#define BAD_REQUEST(...) srv_api_error(400, "invalid_request_error", __VA_ARGS__)

static srv_reply reply_json(unsigned status, json_object *root) {
    char *body = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return (srv_reply){status, body};
}

/* ---- requests ------------------------------------------------------------ */

/* The prompt being built; oom once an append failed (checked at the end). */
typedef struct text_buf {
    sw_bytebuf b;
    bool oom;
} text_buf;

static void tb_add(text_buf *t, const char *s, size_t n) {
    t->oom = t->oom || !sw_bytebuf_add(&t->b, s, n);
}

static bool valid_utf8(const char *s, size_t n) {
    return utf8_valid_prefix((const uint8_t *)s, n) == n;
}

/* The "prompt" of a completion: a string, or an array of exactly one. */
static bool completion_prompt(json_object *root, text_buf *t, srv_reply *err) {
    json_object *p = NULL;
    if (!json_object_object_get_ex(root, "prompt", &p) || p == NULL) {
        *err = BAD_REQUEST("\"prompt\" is required");
        return false;
    }
    if (json_object_is_type(p, json_type_array)) {
        if (json_object_array_length(p) != 1) {
            *err = BAD_REQUEST("\"prompt\" as an array must hold exactly one string");
            return false;
        }
        p = json_object_array_get_idx(p, 0);
    }
    if (!json_object_is_type(p, json_type_string)) {
        *err = BAD_REQUEST("\"prompt\" must be a string");
        return false;
    }
    tb_add(t, json_object_get_string(p), (size_t)json_object_get_string_len(p));
    return true;
}

/* The "messages" of a chat request as the model's turns (sw_chat_format,
 * as `spillway chat` writes them; with tools, Gemma 4's markup: tools.h). */
static bool chat_prompt(srv_state *s, json_object *root, srv_req *r, text_buf *t,
                        srv_reply *err) {
    const int tools = srv_tools_prompt(s->model, root, &t->b, &r->tools, err);
    if (tools != 0)
        return tools > 0;
    json_object *msgs = NULL;
    if (jsonu_get_arr(root, "messages", "the request", &msgs) != SW_OK ||
        json_object_array_length(msgs) == 0) {
        *err = BAD_REQUEST("\"messages\" must be a non-empty array");
        return false;
    }
    const size_t n = json_object_array_length(msgs);
    sw_chat_message *m = calloc(n, sizeof *m);
    if (m == NULL) {
        *err = srv_api_error(500, "server_error", "out of memory");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        json_object *o = json_object_array_get_idx(msgs, i);
        if (!json_object_is_type(o, json_type_object) ||
            jsonu_get_str(o, "role", "a message", &m[i].role, NULL) != SW_OK ||
            jsonu_get_str(o, "content", "a message", &m[i].content, &m[i].len) != SW_OK) {
            *err = BAD_REQUEST("each message needs a string \"role\" and a string "
                               "\"content\"");
            ok = false;
        } else if (!strcmp(m[i].role, "model")) { /* the API's name is "assistant" */
            *err = BAD_REQUEST("unknown message role \"model\" (system, user or assistant)");
            ok = false;
        }
    }
    size_t len = 0;
    if (ok && sw_chat_format(s->model, m, n, SW_CHAT_OPEN_REPLY, NULL, 0, &len) != SW_OK) {
        *err = BAD_REQUEST("%s", sw_last_error());
        ok = false;
    }
    char *text = ok ? malloc(len + 1) : NULL;
    if (ok && (text == NULL ||
               sw_chat_format(s->model, m, n, SW_CHAT_OPEN_REPLY, text, len + 1, &len))) {
        *err = srv_api_error(500, "server_error", "out of memory");
        ok = false;
    }
    if (ok)
        tb_add(t, text, len);
    free(text);
    free(m);
    return ok;
}

/* An optional number in [lo, hi] (absent or null: *out unchanged). */
static bool opt_num(json_object *root, const char *key, double lo, double hi, bool integer,
                    double *out, srv_reply *err) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(root, key, &v) || v == NULL)
        return true;
    const bool is_int = json_object_is_type(v, json_type_int);
    if (!(is_int || (!integer && json_object_is_type(v, json_type_double)))) {
        *err = BAD_REQUEST("\"%s\" must be %s", key, integer ? "an integer" : "a number");
        return false;
    }
    const double d = is_int ? (double)json_object_get_int64(v) : json_object_get_double(v);
    if (!(d >= lo && d <= hi)) {
        *err = srv_api_error(400, "invalid_request_error", "\"%s\" is %g; it must be in "
                             "[%g, %g]", key, d, lo, hi);
        return false;
    }
    *out = d;
    return true;
}

static bool parse_stop(json_object *root, srv_req *r, srv_reply *err) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(root, "stop", &v) || v == NULL)
        return true;
    json_object *one[1] = {v};
    json_object **list = one;
    size_t n = 1;
    if (json_object_is_type(v, json_type_array)) {
        n = json_object_array_length(v);
        list = NULL;
    }
    if (n > SRV_MAX_STOP) {
        *err = srv_api_error(400, "invalid_request_error", "\"stop\" holds %zu strings; at "
                             "most %d", n, SRV_MAX_STOP);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        json_object *s = list ? list[i] : json_object_array_get_idx(v, i);
        size_t len = json_object_is_type(s, json_type_string)
                         ? (size_t)json_object_get_string_len(s) : 0;
        /* "\u0000" would end the copy early: a shorter stop string, or an
         * empty one the scheduler refuses */
        if (len == 0 || len > 256 || !valid_utf8(json_object_get_string(s), len) ||
            memchr(json_object_get_string(s), '\0', len) != NULL) {
            *err = BAD_REQUEST("\"stop\" must be a string or an array of non-empty strings "
                               "of at most 256 bytes, without NUL");
            return false;
        }
        if ((r->stop[r->n_stop] = strdup(json_object_get_string(s))) == NULL) {
            *err = srv_api_error(500, "server_error", "out of memory");
            return false;
        }
        r->n_stop++;
        r->stop_max_len = len > r->stop_max_len ? len : r->stop_max_len;
    }
    return true;
}

/* Sampling and length fields. Absent ones take the server's sampling
 * flags (--temp, --top-k, --top-p, --min-p, --seed; their defaults are
 * run's, as llama-server's are llama-cli's); OpenAI's API has no top_k or
 * min_p, so those always come from the flags. Drafts per verify: Spillway's
 * "draft_max", or llama-server's "speculative.n_max" (0: no drafts for
 * this request; absent: the server's --draft-max). */
static bool parse_params(srv_state *s, json_object *root, srv_req *r, srv_reply *err) {
    double max_tokens = r->max_tokens, n = 1, draft_max = r->draft_max;
    double temp = s->sampler.temp, top_p = s->sampler.top_p;
    double seed = (double)s->sampler.seed;
    bool stream = false;
    json_object *v = NULL;
    if (json_object_object_get_ex(root, "stream", &v) && v != NULL) {
        if (!json_object_is_type(v, json_type_boolean)) {
            *err = BAD_REQUEST("\"stream\" must be true or false");
            return false;
        }
        stream = json_object_get_boolean(v);
    }
    if (!opt_num(root, "max_tokens", 1, 1 << 30, true, &max_tokens, err) ||
        !opt_num(root, "max_completion_tokens", 1, 1 << 30, true, &max_tokens, err) ||
        !opt_num(root, "temperature", 0, 2, false, &temp, err) ||
        !opt_num(root, "top_p", 1e-6, 1, false, &top_p, err) ||
        !opt_num(root, "seed", 0, 9007199254740992.0, true, &seed, err) ||
        !opt_num(root, "n", 1, 1, true, &n, err) ||
        !opt_num(root, "speculative.n_max", 0, SW_DRAFT_MAX, true, &draft_max, err) ||
        !opt_num(root, "draft_max", 0, SW_DRAFT_MAX, true, &draft_max, err) ||
        !parse_stop(root, r, err))
        return false;
    r->max_tokens = (long)max_tokens;
    r->draft_max = (int)draft_max;
    r->stream = stream;
    r->sampling = s->sampler;
    r->sampling.temp = (float)temp;
    r->sampling.top_p = (float)top_p;
    r->sampling.seed = (uint64_t)seed;
    return true;
}

static bool check_model(srv_state *s, json_object *root, srv_reply *err) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(root, "model", &v) || v == NULL)
        return true;
    if (!json_object_is_type(v, json_type_string)) {
        *err = BAD_REQUEST("\"model\" must be a string");
        return false;
    }
    if (strcmp(json_object_get_string(v), s->model_name) != 0) {
        *err = srv_api_error(404, "invalid_request_error", "the model '%.128s' does not "
                             "exist; this server serves '%s' (GET /v1/models)",
                             json_object_get_string(v), s->model_name);
        return false;
    }
    return true;
}

static bool tokenize(srv_state *s, const text_buf *t, srv_req *r, srv_reply *err) {
    const uint32_t n_ctx = sw_engine_n_ctx(s->engine);
    const char *text = t->b.p ? t->b.p : "";
    const size_t len = t->b.len;
    r->prompt = malloc(SW_TOKENIZE_MAX_IDS(len) * sizeof *r->prompt);
    if (r->prompt == NULL) {
        *err = srv_api_error(500, "server_error", "out of memory tokenizing the prompt");
        return false;
    }
    if (sw_tokenize(s->model, text, len, SW_TOK_ADD_BOS | SW_TOK_PARSE_SPECIAL, r->prompt,
                    SW_TOKENIZE_MAX_IDS(len), &r->n_prompt) != SW_OK) {
        *err = srv_api_error(400, "invalid_request_error", "cannot tokenize the prompt: %s",
                             sw_last_error());
        return false;
    }
    if (r->n_prompt >= n_ctx) {
        *err = srv_api_error(400, "invalid_request_error", "the prompt is %zu tokens but the "
                             "context holds %u (start the server with a larger -c)",
                             r->n_prompt, n_ctx);
        return false;
    }
    if (r->max_tokens > 0 && r->n_prompt + (size_t)r->max_tokens > n_ctx) {
        *err = srv_api_error(400, "invalid_request_error", "max_tokens %ld does not fit: the "
                             "prompt is %zu tokens and the context holds %u (at most %zu "
                             "more)", r->max_tokens, r->n_prompt, n_ctx,
                             (size_t)n_ctx - r->n_prompt);
        return false;
    }
    return true;
}

void srv_req_free(srv_req *r) {
    free(r->prompt);
    for (size_t i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    sw_bytebuf_free(&r->text);
    free(r->lp);
    srv_tools_free(r->tools);
    sw_grammar_destroy(r->grammar);
    free(r);
}

bool srv_api_parse(srv_state *s, bool chat, const char *body, size_t len, srv_req **out,
                   srv_reply *err) {
    *out = NULL;
    if (!valid_utf8(body, len)) {
        *err = BAD_REQUEST("the body is not valid UTF-8");
        return false;
    }
    json_object *root = NULL;
    if (jsonu_parse(body, len, "the request body", &root) != SW_OK) {
        *err = srv_api_error(400, "invalid_request_error", "%s", sw_last_error());
        return false;
    }
    srv_req *r = calloc(1, sizeof *r);
    text_buf t = {0};
    bool ok = r != NULL;
    if (!ok)
        *err = srv_api_error(500, "server_error", "out of memory");
    else if (!json_object_is_type(root, json_type_object)) {
        *err = BAD_REQUEST("the body must be a JSON object");
        ok = false;
    }
    if (ok) {
        r->chat = chat;
        r->max_tokens = chat ? -1 : DEFAULT_MAX_TOKENS_COMPLETION;
        r->draft_max = -1;
        ok = check_model(s, root, err) && parse_params(s, root, r, err) &&
             srv_logprobs_parse(root, chat, &r->logprobs, err) &&
             srv_response_format_parse(root, &r->grammar, err) &&
             (chat ? chat_prompt(s, root, r, &t, err)
                   : completion_prompt(root, &t, err));
    }
    if (ok && t.oom) {
        *err = srv_api_error(500, "server_error", "out of memory");
        ok = false;
    }
    if (ok && !valid_utf8(t.b.p ? t.b.p : "", t.b.len)) {
        *err = BAD_REQUEST("the prompt is not valid UTF-8");
        ok = false;
    }
    if (ok)
        ok = tokenize(s, &t, r, err);
    sw_bytebuf_free(&t.b);
    json_object_put(root);
    if (!ok && r != NULL) {
        srv_req_free(r);
        return false;
    }
    pthread_mutex_lock(&s->mu);
    const uint64_t id = ++s->next_id;
    pthread_mutex_unlock(&s->mu);
    snprintf(r->id, sizeof r->id, "%s-%llu", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)id);
    r->created = (int64_t)time(NULL);
    r->refs = 1; /* the connection's */
    *out = r;
    return true;
}

/* ---- responses ----------------------------------------------------------- */

static json_object *envelope(srv_state *s, const srv_req *r, const char *object) {
    json_object *root = json_object_new_object();
    json_object_object_add(root, "id", json_object_new_string(r->id));
    json_object_object_add(root, "object", json_object_new_string(object));
    json_object_object_add(root, "created", json_object_new_int64(r->created));
    json_object_object_add(root, "model", json_object_new_string(s->model_name));
    return root;
}

static json_object *finish_value(const char *finish) {
    return finish ? json_object_new_string(finish) : NULL;
}

srv_reply srv_api_response(srv_state *s, const srv_req *r) {
    if (r->error != NULL)
        return srv_api_error(503, "server_error", "%s", r->error);
    json_object *root = envelope(s, r, r->chat ? "chat.completion" : "text_completion");
    json_object *choice = json_object_new_object(), *choices = json_object_new_array();
    json_object_object_add(choice, "index", json_object_new_int(0));
    json_object *text = json_text(r->text.p ? r->text.p : "", r->text.len);
    const char *finish = r->finish;
    if (r->chat && r->tools != NULL) { /* content and tool_calls parsed */
        json_object_put(text);
        json_object *msg = srv_tools_message(r, &finish);
        if (msg == NULL) {
            json_object_put(choice);
            json_object_put(choices);
            json_object_put(root);
            return srv_api_error(500, "server_error", "out of memory");
        }
        json_object_object_add(choice, "message", msg);
    } else if (r->chat) {
        json_object *msg = json_object_new_object();
        json_object_object_add(msg, "role", json_object_new_string("assistant"));
        json_object_object_add(msg, "content", text);
        json_object_object_add(choice, "message", msg);
    } else {
        json_object_object_add(choice, "text", text);
    }
    json_object_object_add(choice, "logprobs", srv_logprobs_json(s, r, 0, r->text.len));
    json_object_object_add(choice, "finish_reason", finish_value(finish));
    json_object_array_add(choices, choice);
    json_object_object_add(root, "choices", choices);
    json_object *counts = json_object_new_object();
    json_object_object_add(counts, "prompt_tokens", json_object_new_int64((int64_t)r->n_prompt));
    json_object_object_add(counts, "completion_tokens",
                           json_object_new_int64((int64_t)r->n_generated));
    json_object_object_add(counts, "total_tokens",
                           json_object_new_int64((int64_t)(r->n_prompt + r->n_generated)));
    json_object_object_add(root, "usage", counts);
    return reply_json(200, root);
}

char *srv_api_chunk(srv_state *s, const srv_req *r, const char *delta, size_t len,
                    const char *finish, bool first) {
    json_object *root = envelope(s, r, r->chat ? "chat.completion.chunk" : "text_completion");
    json_object *choice = json_object_new_object(), *choices = json_object_new_array();
    json_object_object_add(choice, "index", json_object_new_int(0));
    json_object *text = json_text(delta, len);
    if (r->chat && r->tools != NULL) { /* content and tool_calls deltas */
        json_object_put(text);
        json_object_object_add(choice, "delta", srv_tools_delta(r, delta, len, first, &finish));
    } else if (r->chat) {
        json_object *d = json_object_new_object();
        if (first)
            json_object_object_add(d, "role", json_object_new_string("assistant"));
        if (len > 0 || finish == NULL)
            json_object_object_add(d, "content", text);
        else
            json_object_put(text);
        json_object_object_add(choice, "delta", d);
    } else {
        json_object_object_add(choice, "text", text);
    }
    /* the tokens whose pieces start in this chunk's bytes of the text */
    const size_t from = r->text.p != NULL && delta >= r->text.p &&
                                delta <= r->text.p + r->text.len
                            ? (size_t)(delta - r->text.p)
                            : r->text.len;
    json_object_object_add(choice, "logprobs", srv_logprobs_json(s, r, from, from + len));
    json_object_object_add(choice, "finish_reason", finish_value(finish));
    json_object_array_add(choices, choice);
    json_object_object_add(root, "choices", choices);
    if (finish != NULL) {
        json_object *counts = json_object_new_object();
        json_object_object_add(counts, "prompt_tokens",
                               json_object_new_int64((int64_t)r->n_prompt));
        json_object_object_add(counts, "completion_tokens",
                               json_object_new_int64((int64_t)r->n_generated));
        json_object_object_add(counts, "total_tokens",
                               json_object_new_int64((int64_t)(r->n_prompt + r->n_generated)));
        json_object_object_add(root, "usage", counts);
    }
    char *out = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
    json_object_put(root);
    return out;
}

srv_reply srv_api_models(srv_state *s) {
    json_object *root = json_object_new_object(), *list = json_object_new_array();
    json_object *m = json_object_new_object();
    json_object_object_add(m, "id", json_object_new_string(s->model_name));
    json_object_object_add(m, "object", json_object_new_string("model"));
    json_object_object_add(m, "created", json_object_new_int64(s->m.created));
    json_object_object_add(m, "owned_by", json_object_new_string("spillway"));
    /* a base model answers chat by continuing the text: clients may say so */
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "instruction_tuned",
                           json_object_new_boolean(sw_model_instruction_tuned(s->model)));
    json_object_object_add(m, "meta", meta);
    json_object_array_add(list, m);
    json_object_object_add(root, "object", json_object_new_string("list"));
    json_object_object_add(root, "data", list);
    return reply_json(200, root);
}

srv_reply srv_api_health(srv_state *s) {
    pthread_mutex_lock(&s->mu);
    const char *status = s->failed ? "error"
                         : s->engine == NULL ? "loading"
                         : s->draining || s->stopping ? "draining" /* not ready: 503 */
                         : s->n_queued > 0 ? "busy" : "ok";
    const size_t queued = s->n_queued, running = s->n_running;
    pthread_mutex_unlock(&s->mu);
    json_object *root = json_object_new_object();
    json_object_object_add(root, "status", json_object_new_string(status));
    json_object_object_add(root, "running", json_object_new_int64((int64_t)running));
    json_object_object_add(root, "queued", json_object_new_int64((int64_t)queued));
    const bool ok = !strcmp(status, "ok") || !strcmp(status, "busy");
    return reply_json(ok ? 200 : 503, root);
}

/* The listener's refusals and time-outs: what a load balancer or an
 * operator watches for a server at its caps (stderr has a line at most
 * every 10 s). */
static void conn_metrics(FILE *f, const srv_conn_counts *cc) {
    fprintf(f, "# TYPE spillway_connections_refused_total counter\n"
            "spillway_connections_refused_total{cap=\"max_conns\"} %llu\n"
            "spillway_connections_refused_total{cap=\"max_conns_per_addr\"} %llu\n"
            "# TYPE spillway_connections_timed_out_total counter\n"
            "spillway_connections_timed_out_total %llu\n",
            (unsigned long long)cc->refused_all, (unsigned long long)cc->refused_addr,
            (unsigned long long)cc->timed_out);
}

/* Speculative decoding: drafts verified and kept, verify forwards and the
 * tokens they output (all 0 without a drafter), and the two ratios that
 * say whether drafting pays: the share of drafts kept, and the tokens a
 * verify forward gives (1 would be plain decoding). */
static void spec_metrics(FILE *f, const srv_metrics *m) {
    const double rate = m->drafted_tokens
                            ? (double)m->accepted_tokens / (double)m->drafted_tokens : 0.0;
    const double per_verify = m->verify_forwards
                                  ? (double)m->verify_tokens / (double)m->verify_forwards : 0.0;
    fprintf(f, "# TYPE spillway_spec_drafted_tokens_total counter\n"
            "spillway_spec_drafted_tokens_total %llu\n"
            "# TYPE spillway_spec_accepted_tokens_total counter\n"
            "spillway_spec_accepted_tokens_total %llu\n"
            "# TYPE spillway_spec_verify_forwards_total counter\n"
            "spillway_spec_verify_forwards_total %llu\n"
            "# TYPE spillway_spec_verify_tokens_total counter\n"
            "spillway_spec_verify_tokens_total %llu\n"
            "# TYPE spillway_spec_acceptance_rate gauge\n"
            "spillway_spec_acceptance_rate %.6f\n"
            "# TYPE spillway_spec_tokens_per_verify gauge\n"
            "spillway_spec_tokens_per_verify %.6f\n",
            (unsigned long long)m->drafted_tokens, (unsigned long long)m->accepted_tokens,
            (unsigned long long)m->verify_forwards, (unsigned long long)m->verify_tokens, rate,
            per_verify);
}

/* The expert cache (issue 38), only with one: layer steps' needed experts,
 * hits and misses, misses copied (and bytes) or computed on the host (and
 * the expert-token pairs computed there), experts prefetched and how many
 * of them the next step needed. */
static void expert_metrics(FILE *f, const sw_expert_report *x) {
    if (x->slots == 0)
        return;
    const struct { const char *name; uint64_t v; } c[] = {
        {"needed", x->needed}, {"hits", x->hits}, {"misses", x->misses},
        {"copied", x->copied}, {"copied_bytes", x->copied_bytes},
        {"host_computed", x->host_experts}, {"host_expert_tokens", x->host_tokens},
        {"prefetched", x->prefetched}, {"prefetch_hits", x->prefetch_hits}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        fprintf(f, "# TYPE spillway_expert_cache_%s_total counter\n"
                "spillway_expert_cache_%s_total %llu\n", c[i].name, c[i].name,
                (unsigned long long)c[i].v);
    fprintf(f, "# TYPE spillway_expert_cache_slots gauge\nspillway_expert_cache_slots %u\n",
            x->slots);
}

/* Each replica's share (serve --replicas N > 1), labelled replica="i":
 * the series above are the sums. */
typedef struct replica_view {
    size_t queued, running;
    srv_metrics m;
    bool failed;
} replica_view;

static void replica_metrics(FILE *f, const replica_view *v, size_t n) {
    if (n < 2)
        return;
    const struct { const char *name, *type; int what; } fam[] = {
        {"spillway_replica_requests_total", "counter", 0},
        {"spillway_replica_generated_tokens_total", "counter", 1},
        {"spillway_replica_forwards_total", "counter", 2},
        {"spillway_replica_queue_depth", "gauge", 3},
        {"spillway_replica_running_requests", "gauge", 4},
        {"spillway_replica_kv_cache_used_tokens", "gauge", 5},
        {"spillway_replica_up", "gauge", 6}};
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
        fprintf(f, "# TYPE %s %s\n", fam[k].name, fam[k].type);
        for (size_t i = 0; i < n; i++) {
            const uint64_t x[] = {v[i].m.requests, v[i].m.generated_tokens, v[i].m.forwards,
                                  v[i].queued, v[i].running, v[i].m.kv_used_tokens,
                                  !v[i].failed};
            fprintf(f, "%s{replica=\"%zu\"} %llu\n", fam[k].name, i,
                    (unsigned long long)x[fam[k].what]);
        }
    }
}

srv_reply srv_api_metrics(srv_state *s, const srv_conn_counts *cc) {
    replica_view v[SRV_MAX_REPLICAS];
    pthread_mutex_lock(&s->mu);
    const srv_metrics m = s->m;
    const size_t queued = s->n_queued, running = s->n_running, n_seq = s->n_seq;
    const size_t n_rep = s->n_rep;
    for (size_t i = 0; i < n_rep; i++)
        v[i] = (replica_view){s->rep[i].n_queued, s->rep[i].n_running, s->rep[i].m,
                              s->rep[i].failed};
    pthread_mutex_unlock(&s->mu);
    const double up = sw_clock_s() - m.t_start;
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (f == NULL)
        return srv_api_error(500, "server_error", "out of memory");
    fprintf(f,
            "# TYPE spillway_requests_total counter\nspillway_requests_total %llu\n"
            "# TYPE spillway_requests_failed_total counter\n"
            "spillway_requests_failed_total %llu\n"
            "# TYPE spillway_requests_cancelled_total counter\n"
            "spillway_requests_cancelled_total %llu\n"
            "# TYPE spillway_prompt_tokens_total counter\nspillway_prompt_tokens_total %llu\n"
            "# TYPE spillway_generated_tokens_total counter\n"
            "spillway_generated_tokens_total %llu\n"
            "# TYPE spillway_forwards_total counter\nspillway_forwards_total %llu\n"
            "# TYPE spillway_queue_depth gauge\nspillway_queue_depth %zu\n"
            "# TYPE spillway_running_requests gauge\nspillway_running_requests %zu\n"
            "# TYPE spillway_batch_tokens gauge\nspillway_batch_tokens %u\n"
            "# TYPE spillway_bytes_to_device_total counter\n"
            "spillway_bytes_to_device_total %llu\n"
            "# TYPE spillway_bytes_to_device_per_second gauge\n"
            "spillway_bytes_to_device_per_second %.0f\n"
            "# TYPE spillway_device_bytes_peak gauge\nspillway_device_bytes_peak %llu\n"
            "# TYPE spillway_device_bytes_plan gauge\nspillway_device_bytes_plan %llu\n"
            "# TYPE spillway_host_rss_bytes_peak gauge\nspillway_host_rss_bytes_peak %llu\n",
            (unsigned long long)m.requests, (unsigned long long)m.requests_failed,
            (unsigned long long)m.requests_cancelled,
            (unsigned long long)m.prompt_tokens, (unsigned long long)m.generated_tokens,
            (unsigned long long)m.forwards, queued, running, m.last_batch,
            (unsigned long long)m.bytes_to_device,
            up > 0 ? (double)m.bytes_to_device / up : 0.0,
            (unsigned long long)m.peak_device_bytes, (unsigned long long)m.plan_device_bytes,
            (unsigned long long)m.peak_host_rss_bytes);
    srv_gateway_metrics(f, s->model_name, queued, running, n_seq, &m);
    spec_metrics(f, &m);
    expert_metrics(f, &m.experts);
    replica_metrics(f, v, n_rep);
    if (cc != NULL)
        conn_metrics(f, cc);
    if (fclose(f) != 0) {
        free(body);
        return srv_api_error(500, "server_error", "out of memory");
    }
    return (srv_reply){200, body};
}

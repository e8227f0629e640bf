/*
 * chat.c — sw_chat_format(): Gemma's chat markup (spillway.h), the one
 * template `chat` and `serve` both write. The markup is chosen by the
 * vocabulary: Gemma 4's when its turn-opening token is "<|turn>".
 */
#include <string.h>

#include "util/error.h"

typedef struct markup {
    const char *user;    /* opens a user turn */
    const char *model;   /* opens the model's reply */
    const char *system;  /* opens a system turn; NULL: fold into the next user turn */
    const char *end;     /* closes any turn */
} markup;

static const markup gemma3 = {"<start_of_turn>user\n", "<start_of_turn>model\n", NULL,
                              "<end_of_turn>\n"};
static const markup gemma4 = {"<|turn>user\n", "<|turn>model\n", "<|turn>system\n",
                              "<turn|>\n"};

static const markup *markup_of(const sw_model *m) {
    sw_special_tokens sp;
    if (sw_model_special_tokens(m, &sp) != SW_OK || sp.start_of_turn < 0)
        return &gemma3;
    const char *t = sw_token_text(m, sp.start_of_turn);
    return t != NULL && !strcmp(t, "<|turn>") ? &gemma4 : &gemma3;
}

/* Text written into a caller's buffer up to its capacity, counted in
 * full. */
typedef struct writer {
    char *buf;
    size_t cap, len;
} writer;

static void put(writer *w, const char *s, size_t n) {
    if (w->len < w->cap) {
        size_t room = w->cap - 1 - w->len < n ? w->cap - 1 - w->len : n;
        memcpy(w->buf + w->len, s, room);
    }
    w->len += n;
}

static void puts_(writer *w, const char *s) {
    put(w, s, strlen(s));
}

static void turn(writer *w, const char *open, const char *text, size_t len, const markup *mk) {
    puts_(w, open);
    put(w, text, len);
    puts_(w, mk->end);
}

sw_status sw_chat_format(const sw_model *model, const sw_chat_message *msgs, size_t n,
                         unsigned flags, char *buf, size_t cap, size_t *len) {
    if (model == NULL || len == NULL || (n && msgs == NULL) || (cap && buf == NULL))
        return sw_errorf(SW_ERR_ARG, "sw_chat_format: NULL argument");
    const markup *mk = markup_of(model);
    writer w = {buf, cap, 0};
    const sw_chat_message *system = NULL; /* waiting for its user turn (Gemma 1-3) */
    if (flags & SW_CHAT_CLOSE_REPLY)
        puts_(&w, mk->end);
    for (size_t i = 0; i < n; i++) {
        const sw_chat_message *m = &msgs[i];
        const char *role = m->role ? m->role : "";
        if (m->content == NULL && m->len != 0)
            return sw_errorf(SW_ERR_ARG, "message %zu has no content", i);
        const char *text = m->content ? m->content : "";
        if (!strcmp(role, "system") && mk->system != NULL) {
            turn(&w, mk->system, text, m->len, mk);
        } else if (!strcmp(role, "system")) {
            system = m;
        } else if (!strcmp(role, "user")) {
            puts_(&w, mk->user);
            if (system != NULL) {
                put(&w, system->content ? system->content : "", system->len);
                put(&w, "\n\n", 2);
                system = NULL;
            }
            put(&w, text, m->len);
            puts_(&w, mk->end);
        } else if (!strcmp(role, "assistant") || !strcmp(role, "model")) {
            turn(&w, mk->model, text, m->len, mk);
        } else {
            return sw_errorf(SW_ERR_ARG, "unknown message role \"%.64s\" (system, user or "
                             "assistant)", role);
        }
    }
    if (system != NULL) /* a system message with no user turn after it */
        turn(&w, mk->user, system->content ? system->content : "", system->len, mk);
    if (flags & SW_CHAT_OPEN_REPLY)
        puts_(&w, mk->model);
    if (cap > 0)
        buf[w.len < cap ? w.len : cap - 1] = '\0';
    *len = w.len;
    return SW_OK;
}

/*
 * test_scheduler.c — the library's scheduler and chat template
 * (spillway.h), through the public header only, on the tiny Gemma 3 (cpu
 * backend, 2 sequences, 256-token context):
 *   - greedy requests, more than the sequences, each give the text of one
 *     session generating alone (sw_session_eval + sw_sampler: the
 *     reference), with their n_predict, end reasons and counts; on_token's
 *     pieces make up the text;
 *   - a stop string cuts the text where it starts, finish "stop";
 *   - cancel: a queued request ends at once, a running one at the next
 *     step; a request released while running is freed (ASan: no leak);
 *   - stats: prompt and generated tokens, the KV capacity;
 *   - a conversation: a request kept (keep_sequence) and continued twice
 *     gives what one session gives evaluating the same turns in turn
 *     (only the new tokens evaluated); its held sequence is not given to
 *     queued requests until released; continuing what cannot be (not
 *     kept, released, overfull) refused;
 *   - bad input refused with SW_ERR_ARG: empty, overlong or out-of-vocab
 *     prompts, empty or too many stop strings, bad sampling, a scheduler
 *     on an engine whose session is open;
 *   - sw_chat_format: Gemma 3's turns (system folded into the user turn)
 *     and Gemma 4's (a system turn), reply opened/closed by the flags, the
 *     length-only call and a cut buffer, an unknown role refused.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "spillway.h"

#define N_REQ 5
#define N_PREDICT 12

static const char *prompts[N_REQ] = {"The capital of France is", "Once upon a time",
                                      "1, 2, 3, 4,", "Water boils at", "The quick brown fox"};

static char *data_path(const char *rel) {
    const char *dir = getenv("SW_TEST_DATA");
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%s/%s", dir ? dir : "tests/data", rel);
    return b;
}

static sw_engine *launch(const sw_model *m, uint32_t n_seq) {
    sw_plan_options o = sw_plan_options_default();
    o.backend = "cpu";
    o.n_threads = 1;
    o.n_ctx = 256;
    o.n_seq = n_seq;
    sw_engine *e = NULL;
    SW_CHECK_OK(sw_engine_launch(m, &o, NULL, &e));
    return e;
}

static size_t tokens(const sw_model *m, const char *text, int32_t *ids, size_t cap) {
    size_t n = 0;
    SW_CHECK_OK(sw_tokenize(m, text, strlen(text), SW_TOK_ADD_BOS, ids, cap, &n));
    return n;
}

/* The reference: one session alone, greedy, stopping as documented. */
static void alone(const sw_model *m, sw_engine *e, const int32_t *ids, size_t n, long n_predict,
                  char *text, size_t cap, sw_finish *why) {
    sw_session *s = NULL;
    sw_sampler *smp = NULL;
    sw_special_tokens sp;
    sw_sampler_options so = sw_sampler_options_default();
    so.temp = 0;
    float *logits = malloc(sw_engine_n_vocab(e) * sizeof *logits);
    size_t len = 0;
    long made = 0;
    text[0] = '\0';
    *why = SW_FINISH_NONE;
    SW_CHECK_OK(sw_model_special_tokens(m, &sp));
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK_OK(sw_sampler_create(&so, sw_engine_n_vocab(e), &smp));
    if (s && smp && logits && sw_session_eval(s, ids, n, logits, 0) == SW_OK) {
        for (;;) {
            int32_t id = sw_sampler_sample(smp, logits);
            if (id == sp.eos || id == sp.end_of_turn) {
                *why = SW_FINISH_EOG;
                break;
            }
            size_t k = 0;
            if (sw_token_to_piece(m, id, text + len, cap - len - 1, &k) == SW_OK)
                len += k;
            text[len] = '\0';
            if (++made >= n_predict) {
                *why = SW_FINISH_LIMIT;
                break;
            }
            if (sw_session_eval(s, &id, 1, logits, 0) != SW_OK)
                break;
        }
    }
    free(logits);
    sw_sampler_destroy(smp);
    sw_session_destroy(s);
}

typedef struct pieces {
    char text[4096];
    size_t len;
} pieces;

static void on_token(void *user, sw_request *r, int32_t id, const char *piece, size_t len) {
    pieces *p = user;
    (void)r;
    (void)id;
    if (p->len + len < sizeof p->text) {
        memcpy(p->text + p->len, piece, len);
        p->len += len;
        p->text[p->len] = '\0';
    }
}

static void run_all(sw_scheduler *q) {
    uint32_t n = 1;
    for (int guard = 0; n != 0 && guard < 10000; guard++)
        SW_CHECK_OK(sw_scheduler_step(q, &n));
}

/* A scheduler on a new engine of n_seq sequences (*e); NULL, with *e
 * destroyed, when either cannot be made. */
static sw_scheduler *scheduler_on(const sw_model *m, uint32_t n_seq, sw_engine **e) {
    sw_scheduler *q = NULL;
    *e = launch(m, n_seq);
    SW_CHECK_OK(sw_scheduler_create(*e, m, &q));
    if (q == NULL) {
        sw_engine_destroy(*e);
        *e = NULL;
    }
    return q;
}

static char *text_of(sw_scheduler *q, sw_request *r) {
    sw_request_info in;
    sw_request_get_info(q, r, &in);
    char *t = calloc(in.text_len + 1, 1);
    if (t != NULL)
        SW_CHECK(sw_request_text(q, r, 0, t, in.text_len) == in.text_len, "text copied whole");
    return t;
}

/* Greedy requests against each prompt's text generated alone. */
static void test_greedy(const sw_model *m) {
    static char want[N_REQ][4096];
    sw_finish want_why[N_REQ];
    int32_t ids[N_REQ][64];
    size_t n[N_REQ];
    sw_engine *solo = launch(m, 1);
    for (int i = 0; solo && i < N_REQ; i++) {
        n[i] = tokens(m, prompts[i], ids[i], 64);
        alone(m, solo, ids[i], n[i], N_PREDICT - i, want[i], sizeof want[i], &want_why[i]);
    }
    sw_engine_destroy(solo);

    sw_engine *e = NULL;
    sw_scheduler *q = scheduler_on(m, 2, &e);
    if (q == NULL)
        return;
    sw_request *r[N_REQ] = {0};
    static pieces got[N_REQ];
    uint64_t prompt_total = 0;
    for (int i = 0; i < N_REQ; i++) {
        sw_request_options o = sw_request_options_default();
        o.sampling.temp = 0;
        o.n_predict = N_PREDICT - i;
        o.on_token = on_token;
        o.user = &got[i];
        SW_CHECK_OK(sw_scheduler_submit(q, ids[i], n[i], &o, &r[i]));
        prompt_total += n[i];
    }
    sw_scheduler_stats st;
    sw_scheduler_get_stats(q, &st);
    SW_CHECK(st.n_queued == N_REQ && st.n_running == 0, "5 queued before a step (%zu, %zu)",
             st.n_queued, st.n_running);
    SW_CHECK(st.kv_capacity_tokens == 2 * 256, "KV capacity 2 x 256 (%llu)",
             (unsigned long long)st.kv_capacity_tokens);
    uint32_t first = 0;
    SW_CHECK_OK(sw_scheduler_step(q, &first));
    sw_scheduler_get_stats(q, &st);
    SW_CHECK(st.n_running == 2 && st.n_queued == N_REQ - 2 && first > 0,
             "a step runs two, three wait (%zu running, %zu queued, %u tokens)", st.n_running,
             st.n_queued, first);
    run_all(q);
    uint64_t generated = 0;
    for (int i = 0; i < N_REQ; i++) {
        sw_request_info in;
        sw_request_get_info(q, r[i], &in);
        char *t = text_of(q, r[i]);
        SW_CHECK(in.state == SW_REQ_DONE && in.finish == want_why[i],
                 "request %d ended %s, alone %s", i, sw_finish_name(in.finish),
                 sw_finish_name(want_why[i]));
        SW_CHECK(t && !strcmp(t, want[i]), "request %d: %s != alone %s", i, t ? t : "?",
                 want[i]);
        SW_CHECK(!strcmp(got[i].text, want[i]), "request %d: on_token's pieces are its text", i);
        SW_CHECK(in.n_prompt == n[i] && in.n_fed == n[i] && in.t_end >= in.t_first &&
                 in.t_first >= in.t_started && in.t_started >= in.t_submitted,
                 "request %d: counts and times", i);
        generated += in.n_generated;
        free(t);
        sw_request_release(q, r[i]);
    }
    sw_scheduler_get_stats(q, &st);
    SW_CHECK(st.prompt_tokens == prompt_total && st.generated_tokens == generated &&
             st.n_running == 0 && st.n_queued == 0 && st.kv_used_tokens == 0,
             "stats: %llu/%llu prompt, %llu/%llu generated",
             (unsigned long long)st.prompt_tokens, (unsigned long long)prompt_total,
             (unsigned long long)st.generated_tokens, (unsigned long long)generated);
    printf("  %d greedy requests on 2 sequences: texts equal each one alone, %llu forwards\n",
           N_REQ, (unsigned long long)st.n_forwards);

    /* a stop string: two characters from the middle of request 0's text */
    const char *full = want[0];
    size_t cut = strlen(full) / 2;
    while (cut > 0 && ((unsigned char)full[cut] & 0xC0) == 0x80)
        cut--;
    char stop[3] = {full[cut], full[cut + 1], '\0'};
    const char *stops[] = {"never appears", stop};
    sw_request_options o = sw_request_options_default();
    o.sampling.temp = 0;
    o.n_predict = N_PREDICT;
    o.stop = stops;
    o.n_stop = 2;
    sw_request *rs = NULL;
    SW_CHECK_OK(sw_scheduler_submit(q, ids[0], n[0], &o, &rs));
    run_all(q);
    sw_request_info in;
    sw_request_get_info(q, rs, &in);
    char *t = text_of(q, rs);
    size_t at = (size_t)(strstr(full, stop) - full);
    SW_CHECK(in.finish == SW_FINISH_STOP && t && strlen(t) == at && !strncmp(t, full, at),
             "stop %s: cut at %zu, got %s (%s)", stop, at, t ? t : "?",
             sw_finish_name(in.finish));
    free(t);
    sw_request_release(q, rs);

    /* cancel: one queued, one running; one released while running */
    sw_request *a = NULL, *b = NULL, *c = NULL;
    o = sw_request_options_default();
    o.n_predict = 50;
    SW_CHECK_OK(sw_scheduler_submit(q, ids[1], n[1], &o, &a));
    SW_CHECK_OK(sw_scheduler_submit(q, ids[2], n[2], &o, &b));
    SW_CHECK_OK(sw_scheduler_submit(q, ids[3], n[3], &o, &c));
    SW_CHECK_OK(sw_scheduler_step(q, NULL)); /* a and b run, c waits */
    sw_request_cancel(q, c);
    sw_request_get_info(q, c, &in);
    SW_CHECK(in.state == SW_REQ_DONE && in.finish == SW_FINISH_CANCELLED,
             "a queued request ends at once when cancelled");
    sw_request_cancel(q, a);
    sw_request_get_info(q, a, &in);
    SW_CHECK(in.state != SW_REQ_DONE, "a running request runs until the next step");
    sw_request_release(q, b); /* running: cancelled, freed at the next step */
    SW_CHECK_OK(sw_scheduler_step(q, NULL));
    sw_request_get_info(q, a, &in);
    SW_CHECK(in.state == SW_REQ_DONE && in.finish == SW_FINISH_CANCELLED,
             "cancelled running request ended at the next step");
    sw_scheduler_get_stats(q, &st);
    SW_CHECK(st.n_running == 0 && st.n_queued == 0, "nothing left running");
    sw_request_release(q, a);
    sw_request_release(q, c);

    /* a request left unreleased is freed with the scheduler */
    SW_CHECK_OK(sw_scheduler_submit(q, ids[4], n[4], &o, &a));
    sw_scheduler_destroy(q);
    sw_engine_destroy(e);
}

/* The reference conversation: one session, greedy; each turn's prompt
 * after the previous reply's last token (unless that ended the turn), the
 * two in one evaluation. */
static void alone_turns(const sw_model *m, sw_engine *e, int32_t turns[][32], const size_t *n,
                        int n_turns, long n_predict, char text[][1024]) {
    sw_session *s = NULL;
    sw_sampler *smp = NULL;
    sw_special_tokens sp;
    sw_sampler_options so = sw_sampler_options_default();
    so.temp = 0;
    float *logits = malloc(sw_engine_n_vocab(e) * sizeof *logits);
    int32_t pending = -1;
    SW_CHECK_OK(sw_model_special_tokens(m, &sp));
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK_OK(sw_sampler_create(&so, sw_engine_n_vocab(e), &smp));
    for (int k = 0; s && smp && logits && k < n_turns; k++) {
        size_t len = 0;
        text[k][0] = '\0';
        int32_t ids[33]; /* in one evaluation, as the scheduler feeds them */
        size_t m_ids = 0;
        if (pending >= 0)
            ids[m_ids++] = pending;
        memcpy(ids + m_ids, turns[k], n[k] * sizeof *ids);
        SW_CHECK_OK(sw_session_eval(s, ids, m_ids + n[k], logits, 0));
        for (long made = 0;;) {
            int32_t id = sw_sampler_sample(smp, logits);
            pending = id == sp.eos || id == sp.end_of_turn ? -1 : id;
            if (pending < 0)
                break;
            size_t got = 0;
            if (sw_token_to_piece(m, id, text[k] + len, 1000 - len, &got) == SW_OK)
                len += got;
            text[k][len] = '\0';
            if (++made >= n_predict)
                break;
            SW_CHECK_OK(sw_session_eval(s, &id, 1, logits, 0));
        }
    }
    free(logits);
    sw_sampler_destroy(smp);
    sw_session_destroy(s);
}

static void test_conversation(const sw_model *m) {
    int32_t turns[3][32];
    size_t n[3];
    static char want[3][1024];
    n[0] = tokens(m, prompts[0], turns[0], 32);
    for (int k = 1; k < 3; k++) {
        size_t got = 0;
        SW_CHECK_OK(sw_tokenize(m, prompts[k], strlen(prompts[k]), 0, turns[k], 32, &got));
        n[k] = got;
    }
    sw_engine *solo = launch(m, 1);
    if (solo != NULL)
        alone_turns(m, solo, turns, n, 3, 6, want);
    sw_engine_destroy(solo);

    sw_engine *e = NULL;
    sw_scheduler *q = scheduler_on(m, 2, &e);
    if (q == NULL)
        return;
    sw_request_options o = sw_request_options_default();
    o.sampling.temp = 0;
    o.n_predict = 6;
    o.keep_sequence = 1;
    sw_request *turn = NULL, *next = NULL, *other[2] = {0};
    SW_CHECK_OK(sw_scheduler_submit(q, turns[0], n[0], &o, &turn));
    run_all(q);
    for (int k = 1; k <= 3 && turn != NULL; k++) {
        char *t = text_of(q, turn);
        SW_CHECK(t && !strcmp(t, want[k - 1]), "turn %d: %s != one session's %s", k,
                 t ? t : "?", want[k - 1]);
        free(t);
        if (k == 3)
            break;
        if (k == 1) { /* the held sequence is nobody else's */
            sw_request_options plain = sw_request_options_default();
            plain.n_predict = 3;
            SW_CHECK_OK(sw_scheduler_submit(q, turns[0], n[0], &plain, &other[0]));
            SW_CHECK_OK(sw_scheduler_submit(q, turns[0], n[0], &plain, &other[1]));
            SW_CHECK_OK(sw_scheduler_step(q, NULL));
            sw_scheduler_stats st;
            sw_scheduler_get_stats(q, &st);
            SW_CHECK(st.n_running == 1 && st.n_queued == 1,
                     "one free sequence beside the held one (%zu running, %zu queued)",
                     st.n_running, st.n_queued);
            run_all(q);
        }
        sw_request_info before;
        sw_request_get_info(q, turn, &before);
        SW_CHECK_OK(sw_scheduler_continue(q, turn, turns[k], n[k], &o, &next));
        sw_request_release(q, turn);
        turn = next;
        run_all(q);
        sw_request_info in;
        sw_request_get_info(q, turn, &in);
        SW_CHECK(in.n_prompt == n[k] + (before.finish != SW_FINISH_EOG),
                 "turn %d evaluates only its %zu new tokens (%zu)", k + 1, n[k], in.n_prompt);
    }
    SW_CHECK(sw_scheduler_continue(q, other[0], turns[1], n[1], &o, &next) == SW_ERR_ARG,
             "a request not kept cannot be continued: %s", sw_last_error());
    int32_t many[300] = {0};
    for (int i = 0; i < 300; i++)
        many[i] = turns[0][1];
    SW_CHECK(sw_scheduler_continue(q, turn, many, 255, &o, &next) == SW_ERR_ARG,
             "a turn past the context refused: %s", sw_last_error());
    sw_request_release(q, other[0]);
    sw_request_release(q, other[1]);
    sw_request_release(q, turn);
    sw_scheduler_stats st;
    sw_scheduler_get_stats(q, &st);
    SW_CHECK(st.n_running == 0 && st.n_queued == 0, "nothing left");
    printf("  a conversation of 3 turns equals one session's\n");
    sw_scheduler_destroy(q);
    sw_engine_destroy(e);
}

static void test_bad_input(const sw_model *m) {
    sw_engine *e = launch(m, 1);
    sw_scheduler *q = NULL;
    sw_request *r = NULL;
    int32_t ids[300] = {2, 100, 200};
    if (e == NULL)
        return;
    sw_session *s = NULL;
    SW_CHECK_OK(sw_session_create(e, &s));
    SW_CHECK(sw_scheduler_create(e, m, &q) == SW_ERR_ARG && q == NULL,
             "a scheduler beside an open session refused: %s", sw_last_error());
    sw_session_destroy(s);
    SW_CHECK_OK(sw_scheduler_create(e, m, &q));
    sw_request_options o = sw_request_options_default();
    SW_CHECK(sw_scheduler_submit(q, ids, 0, &o, &r) == SW_ERR_ARG && r == NULL,
             "empty prompt refused");
    SW_CHECK(sw_scheduler_submit(q, ids, 300, &o, &r) == SW_ERR_ARG, "300 tokens in 256: %s",
             sw_last_error());
    int32_t bad[2] = {2, (int32_t)sw_engine_n_vocab(e)};
    SW_CHECK(sw_scheduler_submit(q, bad, 2, &o, &r) == SW_ERR_ARG, "id outside: %s",
             sw_last_error());
    const char *empty[] = {""};
    o.stop = empty;
    o.n_stop = 1;
    SW_CHECK(sw_scheduler_submit(q, ids, 3, &o, &r) == SW_ERR_ARG, "empty stop: %s",
             sw_last_error());
    const char *many[17];
    for (int i = 0; i < 17; i++)
        many[i] = "x";
    o.stop = many;
    o.n_stop = 17;
    SW_CHECK(sw_scheduler_submit(q, ids, 3, &o, &r) == SW_ERR_ARG, "17 stops: %s",
             sw_last_error());
    o = sw_request_options_default();
    o.sampling.top_p = 2;
    SW_CHECK(sw_scheduler_submit(q, ids, 3, &o, &r) == SW_ERR_ARG, "top_p 2: %s",
             sw_last_error());
    uint32_t n = 7;
    SW_CHECK_OK(sw_scheduler_step(q, &n));
    SW_CHECK(n == 0, "nothing to do: a step of 0 tokens");
    sw_scheduler_destroy(q);
    sw_engine_destroy(e);
}

static void expect_format(const sw_model *m, const sw_chat_message *msgs, size_t n,
                          unsigned flags, const char *want) {
    char buf[512];
    size_t len = 0;
    SW_CHECK_OK(sw_chat_format(m, msgs, n, flags, NULL, 0, &len));
    SW_CHECK(len == strlen(want), "length alone %zu, want %zu", len, strlen(want));
    SW_CHECK_OK(sw_chat_format(m, msgs, n, flags, buf, sizeof buf, &len));
    SW_CHECK(!strcmp(buf, want), "chat format:\n%s\nwant:\n%s", buf, want);
    char small[8];
    SW_CHECK_OK(sw_chat_format(m, msgs, n, flags, small, sizeof small, &len));
    SW_CHECK(len == strlen(want) && strlen(small) == 7 && !strncmp(small, want, 7),
             "cut to the buffer");
}

/* The markups of gemma-facts (Gemma 3's chat template; Gemma 4's). */
static void test_chat_format(const sw_model *g3, const sw_model *g4) {
    const sw_chat_message conv[] = {{"system", "Be brief.", 9},
                                    {"user", "Hi", 2},
                                    {"assistant", "Hello!", 6},
                                    {"user", "Bye", 3}};
    expect_format(g3, conv, 4, SW_CHAT_OPEN_REPLY,
                  "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
                  "<start_of_turn>model\nHello!<end_of_turn>\n"
                  "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    expect_format(g4, conv, 4, SW_CHAT_OPEN_REPLY,
                  "<|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n"
                  "<|turn>model\nHello!<turn|>\n<|turn>user\nBye<turn|>\n<|turn>model\n");
    expect_format(g3, &conv[3], 1, SW_CHAT_OPEN_REPLY | SW_CHAT_CLOSE_REPLY,
                  "<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n"
                  "<start_of_turn>model\n");
    expect_format(g3, conv, 1, 0, "<start_of_turn>user\nBe brief.<end_of_turn>\n");
    const sw_chat_message bad[] = {{"tool", "x", 1}};
    size_t len = 0;
    SW_CHECK(sw_chat_format(g3, bad, 1, 0, NULL, 0, &len) == SW_ERR_ARG, "role 'tool': %s",
             sw_last_error());
}

int main(void) {
    sw_model *g3 = NULL, *g4 = NULL;
    SW_CHECK_OK(sw_model_open(data_path("tiny/gemma3.gguf"), &g3));
    SW_CHECK_OK(sw_model_open(data_path("tiny/gemma4-kv.gguf"), &g4));
    if (g3 != NULL) {
        test_greedy(g3);
        test_conversation(g3);
        test_bad_input(g3);
    }
    if (g3 != NULL && g4 != NULL)
        test_chat_format(g3, g4);
    sw_model_close(g3);
    sw_model_close(g4);
    return sw_check_finish("test_scheduler");
}

/*
 * test_block_operands.c — block_for_each_mem (backend/operands.c) is the
 * one description of a block's memory that the sim, cuda and pjrt
 * backends derive from; this test holds it to what block_run_ops really
 * does. A recording backend takes the ops block_run_ops submits, walks
 * each with bop_for_each_mem, and checks, for every Gemma 1-4 layer shape
 * and every phase:
 *   - every op operand lies inside one block operand;
 *   - an op that reads a block operand's value from before the block
 *     needs that operand declared read (MEM_READ); one that writes needs
 *     it declared written (MEM_WRITE);
 *   - conversely every declared read is read before any write, every
 *     declared write is written, and every operand is touched, so nothing
 *     is declared that the block does not do;
 *   - a result is written; a weight operand is the op's weight.
 * Nothing is dereferenced: operands are distinct far-apart ranges of one
 * fake buffer.
 */
#include <string.h>

#include "backend/block.h"
#include "check.h"
#include "quant/types.h"
#include "util/error.h"

#define SPAN (1ull << 32) /* each operand's range starts at its own multiple */

typedef struct seen {
    mem_operand decl;      /* what the walker declared */
    bool declared, touched, written, read_entry;
} seen;

typedef struct recorder {
    seen at[BO_COUNT];
    const char *label;
    int n_errors;
} recorder;

static backend_buf *const FAKE = (backend_buf *)(uintptr_t)0x1000;

static sw_status declare(void *user, const mem_operand *o) {
    recorder *r = user;
    SW_CHECK(o->what >= 0 && o->what < BO_COUNT, "%s: operand id %d", r->label, o->what);
    if (o->what < 0 || o->what >= BO_COUNT)
        return SW_OK;
    seen *s = &r->at[o->what];
    SW_CHECK(!s->declared, "%s: operand %d declared twice", r->label, o->what);
    SW_CHECK(o->m->buf == FAKE && o->m->off == (uint64_t)o->what * SPAN,
             "%s: operand %d does not point at its field", r->label, o->what);
    SW_CHECK(o->bytes > 0 && o->bytes < SPAN, "%s: operand %d spans %llu bytes", r->label,
             o->what, (unsigned long long)o->bytes);
    SW_CHECK(!o->result || (o->access & MEM_WRITE), "%s: result %d not written", r->label,
             o->what);
    SW_CHECK((o->weight != NULL) == (o->what >= BO_WEIGHT), "%s: operand %d weight mark",
             r->label, o->what);
    s->decl = *o;
    s->declared = true;
    return SW_OK;
}

/* bop_for_each_mem's callback for each submitted op. */
static sw_status op_operand(void *user, const mem_operand *o) {
    recorder *r = user;
    const uint64_t what = o->m->off / SPAN, end = o->m->off + o->bytes;
    seen *s = what < BO_COUNT ? &r->at[what] : NULL;
    if (o->m->buf != FAKE || s == NULL || !s->declared ||
        end > s->decl.m->off + s->decl.bytes) {
        SW_CHECK(0, "%s: an op touches %llu bytes at %llu outside every declared operand",
                 r->label, (unsigned long long)o->bytes, (unsigned long long)o->m->off);
        r->n_errors++;
        return SW_OK;
    }
    s->touched = true;
    if ((o->access & MEM_READ) && !s->written) {
        SW_CHECK(s->decl.access & MEM_READ, "%s: operand %llu is read on entry but declared "
                 "write-only", r->label, (unsigned long long)what);
        s->read_entry = true;
    }
    if (o->access & MEM_WRITE) {
        SW_CHECK(s->decl.access & MEM_WRITE, "%s: operand %llu is written but declared "
                 "read-only", r->label, (unsigned long long)what);
        s->written = true;
    }
    SW_CHECK((o->weight != NULL) == (what >= BO_WEIGHT), "%s: operand %llu weight mark differs",
             r->label, (unsigned long long)what);
    return SW_OK;
}

static sw_status rec_submit(backend *b, const bop *op) {
    bop walked = *op;
    return bop_for_each_mem(&walked, op_operand, b->impl);
}

static const backend_vtable rec_vt = {.name = "recorder", .submit = rec_submit};

static bmem at(int what) {
    return (bmem){FAKE, (uint64_t)what * SPAN};
}

static btensor weight(int role, uint64_t ne0, uint64_t ne1) {
    return (btensor){.name = "w", .type = SW_TYPE_F32, .ne0 = ne0, .ne1 = ne1,
                     .n_bytes = ne0 * ne1 * 4, .mem = at(BO_WEIGHT + role)};
}

/* Every weight a layer of shape s can have, each in its own range. */
static void fill_weights(const block_shape *s, btensor *w) {
    const uint64_t D = s->n_embd, Q = (uint64_t)s->n_head * s->head_dim;
    const uint64_t KV = (uint64_t)s->n_head_kv * s->head_dim, E = s->n_expert ? s->n_expert : 1;
    const uint64_t FE = 8; /* an expert's n_ff */
    const uint64_t shapes[BW_COUNT][2] = {
        [BW_ATTN_NORM] = {D, 1}, [BW_Q] = {D, Q}, [BW_K] = {D, KV}, [BW_V] = {D, KV},
        [BW_O] = {Q, D}, [BW_Q_NORM] = {s->head_dim, 1}, [BW_K_NORM] = {s->head_dim, 1},
        [BW_POST_ATTN_NORM] = {D, 1}, [BW_FFN_NORM] = {D, 1}, [BW_GATE] = {D, s->n_ff},
        [BW_UP] = {D, s->n_ff}, [BW_DOWN] = {s->n_ff, D}, [BW_POST_FFW_NORM] = {D, 1},
        [BW_LAYER_SCALE] = {1, 1}, [BW_PLE_GATE] = {D, s->n_pl ? s->n_pl : 1},
        [BW_PLE_PROJ] = {s->n_pl ? s->n_pl : 1, D}, [BW_PLE_NORM] = {D, 1},
        [BW_FFN_NORM_2] = {D, 1}, [BW_POST_FFW_NORM_1] = {D, 1}, [BW_POST_FFW_NORM_2] = {D, 1},
        [BW_ROUTER] = {D, E}, [BW_ROUTER_SCALE] = {D, 1}, [BW_EXPERT_SCALE] = {E, 1},
        [BW_GATE_UP_EXPS] = {D, E * 2 * FE}, [BW_DOWN_EXPS] = {FE, E * D},
    };
    for (int r = 0; r < BW_COUNT; r++)
        w[r] = weight(r, shapes[r][0], shapes[r][1]);
}

/* apos: attention masks by positions of their own (a Gemma 4
 * assistant's). */
static void check_block_apos(const char *label, const block_shape *shape, block_phase phase,
                             float layer_scale, bool apos) {
    recorder rec = {.label = label};
    backend be = {.vt = &rec_vt, .impl = &rec};
    block_args a = {.shape = shape, .window = 4, .rope_base = 1e4f, .rope_scale = 1.0f,
                    .layer_scale = layer_scale, .n_tokens = 3, .phase = phase};
    fill_weights(shape, a.w);
    a.kv = (bkv){.k = at(BO_KV_K), .v = at(BO_KV_V), .type = SW_TYPE_F16,
                 .row_elems = shape->n_head_kv * shape->head_dim, .rows = 8, .n_seq = 2};
    block_acts *t = &a.act;
    bmem *fields[] = {&t->x, &t->h, &t->moe_out, &t->ple, &t->pos, &t->seq, &t->q, &t->att,
                      &t->k, &t->v, &t->gate, &t->up, &t->moe_r, &t->moe_scores,
                      &t->moe_ids, &t->moe_w, &t->moe_x, &t->moe_gu, &t->moe_yd};
    const int ids[] = {BO_X, BO_H, BO_MOE_OUT, BO_PLE, BO_POS, BO_SEQ, BO_Q, BO_ATT, BO_K,
                       BO_V, BO_GATE, BO_UP, BO_MOE_R, BO_MOE_SCORES, BO_MOE_IDS, BO_MOE_W,
                       BO_MOE_X, BO_MOE_GU, BO_MOE_YD};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        *fields[i] = at(ids[i]);
    if (apos)
        t->apos = at(BO_APOS);

    block_args walked = a;
    SW_CHECK_OK(block_for_each_mem(&walked, declare, &rec));
    SW_CHECK_OK(block_run_ops(&be, &a));
    for (int i = 0; i < BO_COUNT; i++) {
        const seen *s = &rec.at[i];
        if (!s->declared)
            continue;
        SW_CHECK(s->touched, "%s: operand %d declared, never touched", label, i);
        SW_CHECK(!(s->decl.access & MEM_READ) || s->read_entry,
                 "%s: operand %d declared read, never read before written", label, i);
        SW_CHECK(!(s->decl.access & MEM_WRITE) || s->written,
                 "%s: operand %d declared written, never written", label, i);
    }
}

static void check_block(const char *label, const block_shape *shape, block_phase phase,
                        float layer_scale) {
    check_block_apos(label, shape, phase, layer_scale, false);
}

int main(void) {
    const block_shape gemma1 = {.n_embd = 16, .n_ff = 32, .n_head = 4, .n_head_kv = 1,
                                .head_dim = 8, .norm_eps = 1e-6f, .query_scale = 0.35f};
    block_shape gemma2 = gemma1, gemma3 = gemma1, g4 = gemma1;
    gemma2.post_norms = true;
    gemma2.attn_softcap = 50.0f;
    gemma2.n_head_kv = 2;
    gemma3.post_norms = gemma3.qk_norm = true;
    g4.post_norms = g4.qk_norm = g4.v_norm = true;
    g4.query_scale = 1.0f;
    check_block("gemma 1", &gemma1, BLOCK_WHOLE, 0.0f);
    check_block("gemma 2", &gemma2, BLOCK_WHOLE, 0.0f);
    check_block("gemma 3", &gemma3, BLOCK_WHOLE, 0.0f);
    check_block("gemma 4 sliding", &g4, BLOCK_WHOLE, 0.5f);
    block_shape full = g4;
    full.k_eq_v = true;
    full.rope_pairs = 2;
    check_block("gemma 4 full, keys as values", &full, BLOCK_WHOLE, 0.5f);
    block_shape shared = g4;
    shared.kv_shared = true;
    check_block("gemma 4 shared KV", &shared, BLOCK_WHOLE, 0.0f);
    check_block_apos("gemma 4 assistant (shared KV, attention positions)", &shared, BLOCK_WHOLE,
                     0.5f, true);
    block_shape ple = g4;
    ple.n_pl = 4;
    check_block("gemma 4 per-layer input", &ple, BLOCK_WHOLE, 0.25f);
    shared.n_pl = 4;
    check_block("gemma 4 shared KV, per-layer input", &shared, BLOCK_WHOLE, 0.0f);
    block_shape moe = g4;
    moe.n_expert = 4;
    moe.n_expert_used = 2;
    const char *names[] = {"gemma 4 experts, whole", "gemma 4 experts, to the experts",
                           "gemma 4 experts, from the experts"};
    const block_phase phases[] = {BLOCK_WHOLE, BLOCK_TO_EXPERTS, BLOCK_FROM_EXPERTS};
    for (int i = 0; i < 3; i++)
        check_block(names[i], &moe, phases[i], 0.5f);
    moe.n_pl = 4;
    for (int i = 0; i < 3; i++)
        check_block(names[i], &moe, phases[i], 0.0f);
    return sw_check_finish("test_block_operands");
}

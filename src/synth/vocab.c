/*
 * vocab.c — a synthetic but valid SentencePiece-BPE vocabulary of any size,
 * laid out like Gemma's: control tokens first (ids 0-3 = <pad> <eos> <bos>
 * <unk>), the turn markers, 256 byte-fallback tokens, single characters,
 * then merged pieces, each the concatenation of two earlier pieces chosen
 * by a fixed generator (earlier pieces more often, at most 16 bytes,
 * unique). The vocabulary does not depend on the weight seed, so
 * tokenization is the same for every synthetic model of a vocabulary size.
 *
 * Scores decrease with id, so a SentencePiece merge (highest score first)
 * and a BPE merge list in piece order agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"
#include "util/error.h"

#define MAX_PIECE_BYTES 16
#define VOCAB_SEED 0x5eed5eedcafef00dull

static uint32_t hash_bytes(const char *s, size_t len) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

int32_t synth_vocab_find(const synth_vocab *v, const char *s, size_t len) {
    uint32_t mask = v->n_slot - 1;
    for (uint32_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
        uint32_t id1 = v->slot[i];
        if (id1 == 0)
            return -1;
        size_t plen;
        const char *p = synth_piece(v, id1 - 1, &plen);
        if (plen == len && !memcmp(p, s, len))
            return (int32_t)(id1 - 1);
    }
}

float synth_vocab_score(const synth_vocab *v, uint32_t id) {
    return v->type[id] == SYNTH_TOK_NORMAL ? -(float)id : 0.0f;
}

/* Appends piece s as the next id, unless it exists: returns 1 added, 0 a
 * duplicate. The caller guarantees room (text capacity, n < capacity). */
static int add_piece(synth_vocab *v, const char *s, size_t len, uint8_t type) {
    uint32_t mask = v->n_slot - 1, i = hash_bytes(s, len) & mask;
    for (; v->slot[i] != 0; i = (i + 1) & mask) {
        size_t plen;
        const char *p = synth_piece(v, v->slot[i] - 1, &plen);
        if (plen == len && !memcmp(p, s, len))
            return 0;
    }
    uint32_t id = v->n++;
    memcpy(v->text + v->off[id], s, len);
    v->off[id + 1] = v->off[id] + (uint32_t)len;
    v->type[id] = type;
    v->left[id] = v->right[id] = -1;
    v->slot[i] = id + 1;
    return 1;
}

static void add_fixed(synth_vocab *v, const char *s, uint8_t type) {
    add_piece(v, s, strlen(s), type);
}

static uint64_t next_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A normal piece, earlier ones more likely (the min of two draws). */
static uint32_t pick(const synth_vocab *v, uint64_t *state) {
    uint64_t r = next_rand(state), m = v->n - v->first_normal;
    uint64_t a = (r >> 32) % m, b = (r & 0xffffffffu) % m;
    return v->first_normal + (uint32_t)(a < b ? a : b);
}

static sw_status add_merged(synth_vocab *v, uint32_t n) {
    uint64_t state = VOCAB_SEED, tries = 0;
    char buf[2 * MAX_PIECE_BYTES];
    while (v->n < n) {
        if (++tries > (uint64_t)n * 64)
            return sw_errorf(SW_ERR_ARG, "synth: could not make %u unique pieces", n);
        uint32_t a = pick(v, &state), b = pick(v, &state);
        size_t la, lb;
        const char *pa = synth_piece(v, a, &la), *pb = synth_piece(v, b, &lb);
        if (la + lb > MAX_PIECE_BYTES)
            continue;
        memcpy(buf, pa, la);
        memcpy(buf + la, pb, lb);
        if (add_piece(v, buf, la + lb, SYNTH_TOK_NORMAL)) {
            v->left[v->n - 1] = (int32_t)a;
            v->right[v->n - 1] = (int32_t)b;
        }
    }
    return SW_OK;
}

static void add_base(synth_vocab *v, uint32_t sot, bool gemma4) {
    static const char *const head[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>",
                                       "[multimodal]"};
    char buf[32];
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        add_fixed(v, head[i], i == 3 ? SYNTH_TOK_UNKNOWN : SYNTH_TOK_CONTROL);
    for (uint32_t k = 0; v->n < sot; k++) {
        snprintf(buf, sizeof buf, "<unused%u>", k);
        add_fixed(v, buf, SYNTH_TOK_CONTROL);
    }
    v->sot = v->n;
    add_fixed(v, gemma4 ? "<|turn>" : "<start_of_turn>", SYNTH_TOK_CONTROL);
    v->eot = v->n;
    add_fixed(v, gemma4 ? "<turn|>" : "<end_of_turn>", SYNTH_TOK_CONTROL);
    for (unsigned b = 0; b < 256; b++) {
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        add_fixed(v, buf, SYNTH_TOK_BYTE);
    }
    v->first_normal = v->n;
    add_fixed(v, "\xe2\x96\x81", SYNTH_TOK_NORMAL); /* U+2581, SentencePiece's space */
    add_fixed(v, "\n", SYNTH_TOK_NORMAL);
    add_fixed(v, "\t", SYNTH_TOK_NORMAL);
    for (char c = '!'; c <= '~'; c++) {
        buf[0] = c;
        add_piece(v, buf, 1, SYNTH_TOK_NORMAL);
    }
    v->first_merged = v->n;
}

sw_status synth_vocab_build(uint32_t n, uint32_t sot, bool gemma4, synth_vocab *v) {
    memset(v, 0, sizeof *v);
    if (sot < 6 || n < sot + 2 + 256 + 97 + 1)
        return sw_errorf(SW_ERR_ARG, "synth: a vocabulary of %u tokens is too small", n);
    v->n_slot = 1;
    while (v->n_slot < 2 * n)
        v->n_slot *= 2;
    v->text = malloc((size_t)n * MAX_PIECE_BYTES);
    v->off = calloc((size_t)n + 1, sizeof *v->off);
    v->type = malloc(n);
    v->left = malloc((size_t)n * sizeof *v->left);
    v->right = malloc((size_t)n * sizeof *v->right);
    v->slot = calloc(v->n_slot, sizeof *v->slot);
    if (!v->text || !v->off || !v->type || !v->left || !v->right || !v->slot) {
        synth_vocab_free(v);
        return sw_errorf(SW_ERR_OOM_HOST, "synth: out of host memory for %u tokens", n);
    }
    v->gemma4 = gemma4;
    add_base(v, sot, gemma4);
    sw_status st = add_merged(v, n);
    if (st != SW_OK)
        synth_vocab_free(v);
    return st;
}

size_t synth_vocab_merges(const synth_vocab *v, uint32_t k,
                          void (*rule)(void *user, uint32_t a, uint32_t b), void *user) {
    size_t len, n = 1;
    const char *p = synth_piece(v, k, &len);
    if (rule != NULL)
        rule(user, (uint32_t)v->left[k], (uint32_t)v->right[k]);
    for (size_t cut = 1; cut < len; cut++) {
        int32_t a = synth_vocab_find(v, p, cut), b = synth_vocab_find(v, p + cut, len - cut);
        if (a < 0 || b < 0 || v->type[a] != SYNTH_TOK_NORMAL ||
            v->type[b] != SYNTH_TOK_NORMAL || a == v->left[k])
            continue;
        if (rule != NULL)
            rule(user, (uint32_t)a, (uint32_t)b);
        n++;
    }
    return n;
}

void synth_vocab_free(synth_vocab *v) {
    if (v == NULL)
        return;
    free(v->text);
    free(v->off);
    free(v->type);
    free(v->left);
    free(v->right);
    free(v->slot);
    memset(v, 0, sizeof *v);
}

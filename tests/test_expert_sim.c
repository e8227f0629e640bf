/*
 * test_expert_sim.c — the expert cache's model (plan/expert_sim.h):
 *   - LRU evicts the expert used longest ago, LFU-decay (decay 1: plain
 *     counts) the least used, on a sequence where the two differ;
 *   - decay < 1 lets a once-hot expert go: after a burst of expert 0 and
 *     a long run of 1 and 2 alternating with 3, LFU-decay keeps 1 and 2;
 *   - a step needing more experts than slots misses each, keeps the first;
 *   - stats: needed = hits + misses, routings and their hits, per step;
 *   - slots = experts: only first touches miss;
 *   - bad sizes are refused;
 *   - the engine's parts (begin, admit, end) are the step; prefetch and
 *     clear.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "plan/expert_sim.h"

static expert_cache *make(uint32_t n_expert, uint32_t slots, expert_policy p, double decay) {
    expert_cache *c = NULL;
    SW_CHECK_OK(expert_cache_create(1, n_expert, slots, p, decay, &c));
    return c;
}

static void step1(expert_cache *c, uint32_t e) {
    expert_cache_step(c, 0, &e, 1);
}

static void test_lru_vs_lfu(void) {
    /* 0, 0, 1, then 2 with two slots: LRU gives up 0 (used longest ago),
     * LFU gives up 1 (used once) */
    expert_cache *lru = make(8, 2, EXPERT_LRU, 1.0), *lfu = make(8, 2, EXPERT_LFU_DECAY, 1.0);
    if (lru == NULL || lfu == NULL)
        goto done;
    const uint32_t seq[] = {0, 0, 1, 2};
    for (int i = 0; i < 4; i++) {
        step1(lru, seq[i]);
        step1(lfu, seq[i]);
    }
    SW_CHECK(!expert_cache_holds(lru, 0, 0) && expert_cache_holds(lru, 0, 1) &&
                 expert_cache_holds(lru, 0, 2), "LRU should hold 1 and 2");
    SW_CHECK(expert_cache_holds(lfu, 0, 0) && !expert_cache_holds(lfu, 0, 1) &&
                 expert_cache_holds(lfu, 0, 2), "LFU should hold 0 and 2");
    expert_stats s;
    expert_cache_stats(lru, &s);
    SW_CHECK(s.steps == 4 && s.needed == 4 && s.hits == 1 && s.misses == 3 &&
                 s.routings == 4 && s.routing_hits == 1,
             "LRU stats: %llu steps, %llu needed, %llu hits, %llu misses",
             (unsigned long long)s.steps, (unsigned long long)s.needed,
             (unsigned long long)s.hits, (unsigned long long)s.misses);
done:
    expert_cache_destroy(lru);
    expert_cache_destroy(lfu);
}

static void test_decay(void) {
    /* expert 0 used 10 times, then 1, 3, 2, 3, 1, 3, 2, ... : with decay 0.5
     * the burst fades and 3 (every other step) and the most recent of 1/2
     * stay; without decay 0 would stay forever */
    expert_cache *d = make(8, 2, EXPERT_LFU_DECAY, 0.5), *plain = make(8, 2, EXPERT_LFU_DECAY, 1.0);
    if (d == NULL || plain == NULL)
        goto done;
    for (int i = 0; i < 10; i++) {
        step1(d, 0);
        step1(plain, 0);
    }
    const uint32_t tail[] = {1, 3, 2, 3, 1, 3, 2, 3, 1, 3, 2, 3};
    for (int i = 0; i < 12; i++) {
        step1(d, tail[i]);
        step1(plain, tail[i]);
    }
    SW_CHECK(!expert_cache_holds(d, 0, 0) && expert_cache_holds(d, 0, 3),
             "decay 0.5: the old burst should be gone and 3 held");
    SW_CHECK(expert_cache_holds(plain, 0, 0), "decay 1: the burst's expert stays");
done:
    expert_cache_destroy(d);
    expert_cache_destroy(plain);
}

static void test_overfull_and_full(void) {
    expert_cache *c = make(4, 1, EXPERT_LRU, 1.0);
    if (c != NULL) {
        const uint32_t two[] = {2, 1, 2};
        SW_CHECK(expert_cache_step(c, 0, two, 3) == 2, "two experts, one slot: two misses");
        SW_CHECK(expert_cache_holds(c, 0, 2) && !expert_cache_holds(c, 0, 1),
                 "the first needed is kept");
        expert_stats s;
        expert_cache_stats(c, &s);
        SW_CHECK(s.needed == 2 && s.routings == 3, "distinct 2, routings 3");
    }
    expert_cache_destroy(c);
    /* as many slots as experts: only first touches miss */
    expert_cache *all = NULL;
    SW_CHECK_OK(expert_cache_create(3, 4, 4, EXPERT_LRU, 1.0, &all));
    uint64_t rng = 7;
    uint32_t first = 0;
    uint8_t touched[3][4] = {{0}};
    for (int i = 0; all != NULL && i < 200; i++) {
        const uint32_t il = (uint32_t)(sw_test_rng_next(&rng) % 3);
        uint32_t ids[2] = {(uint32_t)(sw_test_rng_next(&rng) % 4),
                           (uint32_t)(sw_test_rng_next(&rng) % 4)};
        uint32_t want = 0;
        for (int j = 0; j < 2; j++)
            if (!touched[il][ids[j]]) {
                touched[il][ids[j]] = 1;
                want++;
            }
        first += want;
        SW_CHECK(expert_cache_step(all, il, ids, 2) == want, "step %d: only first touches miss",
                 i);
    }
    expert_stats s;
    if (all != NULL) {
        expert_cache_stats(all, &s);
        SW_CHECK(s.misses == first && s.hits + s.misses == s.needed, "full cache stats");
    }
    expert_cache_destroy(all);
}

static void test_refusals(void) {
    expert_cache *c = NULL;
    SW_CHECK(expert_cache_create(2, 8, 0, EXPERT_LRU, 1.0, &c) == SW_ERR_ARG && c == NULL,
             "0 slots");
    SW_CHECK(expert_cache_create(2, 8, 9, EXPERT_LRU, 1.0, &c) == SW_ERR_ARG, "9 slots of 8");
    SW_CHECK(expert_cache_create(2, 8, 4, EXPERT_LFU_DECAY, 0.0, &c) == SW_ERR_ARG, "decay 0");
    expert_policy p;
    SW_CHECK(expert_policy_parse("lru", &p) == SW_OK && p == EXPERT_LRU, "lru");
    SW_CHECK(expert_policy_parse("lfu-decay", &p) == SW_OK && p == EXPERT_LFU_DECAY, "lfu");
    SW_CHECK(expert_policy_parse("fifo", &p) == SW_ERR_ARG, "fifo refused");
}

/* The engine's parts (begin, admit per miss, end) are the step: the same
 * holdings and stats on a pseudo-random routing; admitted experts get
 * distinct slots; prefetch fills free slots, then evicts only unguessed
 * experts; clear empties and keeps the stats. */
static void test_parts(void) {
    expert_cache *a = make(16, 5, EXPERT_LFU_DECAY, 0.8), *b = make(16, 5, EXPERT_LFU_DECAY, 0.8);
    if (a == NULL || b == NULL)
        goto done;
    uint32_t r = 7;
    bool same = true, slots_ok = true;
    for (int step = 0; step < 200; step++) {
        uint32_t ids[6];
        for (int i = 0; i < 6; i++)
            ids[i] = (r = r * 1103515245u + 12345u) >> 16 & 15;
        expert_cache_step(a, 0, ids, 6);
        expert_cache_begin(b, 0, ids, 6);
        for (int i = 0; i < 6; i++)
            if (expert_cache_slot(b, 0, ids[i]) < 0)
                (void)expert_cache_admit(b, 0, ids[i]);
        expert_cache_end(b, 0);
        int used[5] = {0};
        for (uint32_t e = 0; e < 16; e++) {
            same = same && expert_cache_holds(a, 0, e) == expert_cache_holds(b, 0, e);
            const int32_t s = expert_cache_slot(b, 0, e);
            slots_ok = slots_ok && (s < 0) == !expert_cache_holds(b, 0, e) && s < 5 &&
                       (s < 0 || !used[s]++);
        }
    }
    expert_stats sa, sb;
    expert_cache_stats(a, &sa);
    expert_cache_stats(b, &sb);
    SW_CHECK(same && !memcmp(&sa, &sb, sizeof sa), "begin/admit/end differ from step");
    SW_CHECK(slots_ok, "each held expert has its own slot");
    expert_cache_clear(b);
    uint32_t n_held = 0;
    for (uint32_t e = 0; e < 16; e++)
        n_held += (uint32_t)expert_cache_holds(b, 0, e);
    expert_cache_stats(b, &sb);
    SW_CHECK(n_held == 0 && sb.steps == 200, "clear: %u held, %llu steps", n_held,
             (unsigned long long)sb.steps);
    /* prefetch: 3 of 4 guesses into free slots (max 3), then with the cache
     * full a guess evicts none of the other guesses */
    const uint32_t guess[4] = {1, 2, 3, 4}, more[5] = {1, 2, 3, 4, 9};
    uint32_t got[5];
    int32_t sl[5];
    SW_CHECK(expert_cache_prefetch(b, 0, guess, 4, 3, got, sl) == 3 && got[0] == 1 &&
                 got[2] == 3, "prefetch into free slots");
    SW_CHECK(expert_cache_prefetch(b, 0, more, 5, 5, got, sl) == 2, "two more fit");
    SW_CHECK(expert_cache_prefetch(b, 0, (const uint32_t[]){10}, 1, 1, got, sl) == 1 &&
                 expert_cache_holds(b, 0, 10), "a full cache evicts for a guess");
    uint32_t kept = 0;
    for (uint32_t e = 1; e <= 4; e++)
        kept += (uint32_t)expert_cache_holds(b, 0, e);
    SW_CHECK(kept + (uint32_t)expert_cache_holds(b, 0, 9) == 4, "one of the five went");
done:
    expert_cache_destroy(a);
    expert_cache_destroy(b);
}

int main(void) {
    test_parts();
    test_lru_vs_lfu();
    test_decay();
    test_overfull_and_full();
    test_refusals();
    return sw_check_finish("test_expert_sim");
}

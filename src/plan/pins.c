/*
 * pins.c — placements pinned by hand: --place SPEC and llama.cpp's -ngl N
 * (grammar in plan_api.h). Parsing only; whether pins can hold is
 * plan_build's question.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_api.h"
#include "util/error.h"

#define ITEM_MAX 64

static bool parse_place_word(const char *w, plan_place *out) {
    static const struct { const char *word; plan_place place; } words[] = {
        {"resident", PLACE_RESIDENT}, {"device", PLACE_RESIDENT},
        {"streamed", PLACE_STREAMED}, {"stream", PLACE_STREAMED},
        {"host", PLACE_HOST},         {"cpu", PLACE_HOST},
        {"auto", PLACE_AUTO},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(w, words[i].word)) {
            *out = words[i].place;
            return true;
        }
    return false;
}

/* A layer number: digits only, no sign, below 2^31. */
static bool parse_layer(const char *s, size_t len, uint32_t *out) {
    uint64_t v = 0;
    if (len == 0 || len > 9)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = (uint32_t)v;
    return true;
}

/* LAYERS into [*lo, *hi]. */
static sw_status parse_range(const char *item, const char *r, uint32_t n_layer, uint32_t *lo,
                             uint32_t *hi) {
    if (!strcmp(r, "all") || !strcmp(r, "*")) {
        *lo = 0;
        *hi = n_layer - 1;
        return SW_OK;
    }
    const char *dash = strchr(r, '-');
    bool ok = dash ? parse_layer(r, (size_t)(dash - r), lo) &&
                         (dash[1] == '\0' ? (*hi = n_layer - 1, true)
                                          : parse_layer(dash + 1, strlen(dash + 1), hi))
                   : parse_layer(r, strlen(r), lo) && (*hi = *lo, true);
    if (!ok)
        return sw_errorf(SW_ERR_ARG, "--place item '%s': '%s' is not a layer, a range N-M or "
                         "N-, or 'all'", item, r);
    if (*lo > *hi)
        return sw_errorf(SW_ERR_ARG, "--place item '%s': range %u-%u runs backwards", item,
                         *lo, *hi);
    if (*hi >= n_layer)
        return sw_errorf(SW_ERR_ARG, "--place item '%s': layer %u is beyond the model's %u "
                         "layers (0-%u)", item, *hi, n_layer, n_layer - 1);
    return SW_OK;
}

/* LAYERS=devN: a split over several devices keeps those layers on its
 * device N (split.h); the placement there stays the planner's. */
static sw_status apply_device(const char *item, const char *lhs, const char *num,
                              uint32_t n_layer, plan_pins *pins) {
    uint32_t dev = 0, lo = 0, hi = 0;
    if (!parse_layer(num, strlen(num), &dev) || dev >= PLAN_PIN_MAX_DEVICES)
        return sw_errorf(SW_ERR_ARG, "--place item '%s': a device is dev0 to dev%d", item,
                         PLAN_PIN_MAX_DEVICES - 1);
    if (!strcmp(lhs, "lm_head") || !strcmp(lhs, "output") || !strncmp(lhs, "experts:", 8))
        return sw_errorf(SW_ERR_ARG, "--place item '%s': only layers go to a device of a "
                         "split (the LM head is on the last)", item);
    SW_TRY(parse_range(item, lhs, n_layer, &lo, &hi));
    for (uint32_t il = lo; il <= hi; il++)
        pins->device[il] = (uint8_t)(dev + 1);
    return SW_OK;
}

static sw_status apply_item(const char *item, uint32_t n_layer, plan_pins *pins) {
    const char *eq = strchr(item, '=');
    char lhs[ITEM_MAX];
    plan_place place;
    if (eq == NULL || eq == item || eq[1] == '\0')
        return sw_errorf(SW_ERR_ARG, "--place item '%s' is not LAYERS=PLACE (e.g. "
                         "0-11=resident, 12-=host, lm_head=host)", item);
    snprintf(lhs, sizeof lhs, "%.*s", (int)(eq - item), item);
    const char *rhs = eq + 1;
    if (!strncmp(rhs, "dev", 3) && isdigit((unsigned char)rhs[3])) /* a split's: dev0, ... */
        return apply_device(item, lhs, rhs + 3, n_layer, pins);
    if (!parse_place_word(rhs, &place))
        return sw_errorf(SW_ERR_ARG, "--place item '%s': unknown placement '%s' (resident, "
                         "streamed, host, auto)", item, rhs);
    if (!strcmp(lhs, "lm_head") || !strcmp(lhs, "output")) {
        if (place == PLACE_STREAMED)
            return sw_errorf(SW_ERR_ARG, "--place item '%s': the LM head is resident or "
                             "host, not streamed", item);
        pins->lm_head = place;
        return SW_OK;
    }
    const bool experts = !strncmp(lhs, "experts:", 8);
    if (experts && place != PLACE_HOST && place != PLACE_AUTO)
        return sw_errorf(SW_ERR_ARG, "--place item '%s': experts are host or auto (a "
                         "device layer holds its experts unless they are on the host)", item);
    uint32_t lo = 0, hi = 0;
    sw_status st = parse_range(item, experts ? lhs + 8 : lhs, n_layer, &lo, &hi);
    if (st != SW_OK)
        return st;
    for (uint32_t il = lo; il <= hi; il++)
        *(experts ? &pins->experts[il] : &pins->layer[il]) = place;
    return SW_OK;
}

sw_status plan_parse_place(const char *spec, uint32_t n_layer, plan_pins *pins) {
    char item[ITEM_MAX];
    if (spec == NULL || pins == NULL)
        return sw_errorf(SW_ERR_ARG, "plan_parse_place: NULL argument");
    if (n_layer == 0 || n_layer > PLAN_MAX_LAYERS)
        return sw_errorf(SW_ERR_ARG, "plan_parse_place: %u layers is outside 1..%u", n_layer,
                         PLAN_MAX_LAYERS);
    memset(pins, 0, sizeof *pins);
    if (spec[0] == '\0')
        return sw_errorf(SW_ERR_ARG, "--place needs a spec such as 0-11=resident,12-=host");
    for (const char *p = spec;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return sw_errorf(SW_ERR_ARG, "--place '%s': %s item at offset %zu", spec,
                             len ? "overlong" : "empty", (size_t)(p - spec));
        memcpy(item, p, len);
        item[len] = '\0';
        for (size_t i = 0; i < len; i++)
            item[i] = (char)tolower((unsigned char)item[i]);
        sw_status st = apply_item(item, n_layer, pins);
        if (st != SW_OK)
            return st;
        if (p[len] == '\0')
            return SW_OK;
        p += len + 1;
    }
}

void plan_pins_apply_ncmoe(plan_pins *pins, uint32_t n_layer, uint32_t n) {
    for (uint32_t il = 0; il < n && il < n_layer && il < PLAN_MAX_LAYERS; il++)
        if (pins->experts[il] == PLACE_AUTO)
            pins->experts[il] = PLACE_HOST;
}

void plan_pins_apply_ngl(plan_pins *pins, uint32_t n_layer, uint32_t ngl) {
    if (n_layer > PLAN_MAX_LAYERS)
        n_layer = PLAN_MAX_LAYERS;
    for (uint32_t il = 0; il < ngl && il < n_layer; il++)
        if (pins->layer[il] == PLACE_AUTO)
            pins->layer[il] = PLACE_RESIDENT;
}

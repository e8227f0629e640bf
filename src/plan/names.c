/*
 * names.c — the words plans are printed and parsed in: placements, tiers,
 * KV types (and their tensor types), and layer ranges ("0-3,7"). Every
 * other file of plan/ may use these; they use nothing of plan/, so naming
 * ties no circle between the search, its explanations and the printers.
 */
#include <stdio.h>
#include <string.h>

#include "plan/plan_internal.h"
#include "quant/types.h"
#include "util/error.h"

const char *plan_place_name(plan_place place) {
    switch (place) {
    case PLACE_AUTO: return "auto";
    case PLACE_RESIDENT: return "resident";
    case PLACE_STREAMED: return "streamed";
    case PLACE_HOST: return "host";
    }
    return "?";
}

const char *plan_tier_name(plan_tier tier) {
    static const char *const names[TIER_COUNT] = {"device", "pinned", "host", "disk"};
    return tier < TIER_COUNT ? names[tier] : "?";
}

const char *plan_kv_type_name(plan_kv_type t) {
    return t == PLAN_KV_F32 ? "f32" : t == PLAN_KV_F16 ? "f16" : t == PLAN_KV_BF16 ? "bf16" : "?";
}

uint32_t plan_kv_tensor_type(plan_kv_type t) {
    return t == PLAN_KV_F16 ? SW_TYPE_F16 : t == PLAN_KV_BF16 ? SW_TYPE_BF16 : SW_TYPE_F32;
}

sw_status plan_parse_kv_type(const char *s, plan_kv_type *out) {
    const plan_kv_type all[3] = {PLAN_KV_F32, PLAN_KV_F16, PLAN_KV_BF16};
    for (int i = 0; s != NULL && i < 3; i++)
        if (!strcmp(s, plan_kv_type_name(all[i]))) {
            *out = all[i];
            return SW_OK;
        }
    return sw_errorf(SW_ERR_ARG, "KV type '%s' is not one of f32, f16, bf16", s ? s : "");
}

void plan_format_ranges(const plan_place *place, uint32_t n_layer, plan_place p, char *buf,
                        size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t il = 0; il < n_layer && len + 1 < cap; il++) {
        if (place[il] != p || (il > 0 && place[il - 1] == p))
            continue;
        uint32_t end = il;
        while (end + 1 < n_layer && place[end + 1] == p)
            end++;
        int n = end == il ? snprintf(buf + len, cap - len, "%s%u", len ? "," : "", il)
                          : snprintf(buf + len, cap - len, "%s%u-%u", len ? "," : "", il, end);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
}

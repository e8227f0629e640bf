/*
 * model_compare.c — see model_compare.h.
 */
#include "model_compare.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/engine_internal.h"
#include "golden.h"

int32_t mc_argmax(const float *x, uint32_t n) {
    int32_t b = 0;
    for (uint32_t i = 1; i < n; i++)
        b = x[i] > x[b] ? (int32_t)i : b;
    return b;
}

float *mc_forced(sw_engine *e, const int32_t *ids, uint32_t n, uint32_t V) {
    sw_session *s = NULL;
    float *out = malloc((size_t)n * V * sizeof(float));
    SW_CHECK_OK(sw_session_create(e, &s));
    if (s == NULL || out == NULL || sw_session_eval(s, ids, n, out, 1) != SW_OK) {
        SW_CHECK(false, "teacher-forced eval failed: %s", sw_last_error());
        free(out);
        out = NULL;
    }
    sw_session_destroy(s);
    return out;
}

void mc_greedy(sw_engine *e, const int32_t *ids, uint32_t n, uint32_t V, int n_greedy,
               int32_t *out, float *logits) {
    sw_session *s = NULL;
    float *row = malloc((size_t)V * sizeof(float));
    SW_CHECK_OK(sw_session_create(e, &s));
    sw_status st = s && row ? sw_session_eval(s, ids, n, row, 0) : SW_ERR_OOM_HOST;
    for (int i = 0; st == SW_OK && i < n_greedy; i++) {
        memcpy(logits + (size_t)i * V, row, (size_t)V * sizeof(float));
        out[i] = mc_argmax(row, V);
        st = sw_session_eval(s, &out[i], 1, row, 0);
    }
    SW_CHECK_OK(st);
    sw_session_destroy(s);
    free(row);
}

void mc_prompts_from_golden(const golden_file *g, uint32_t max_len, mc_prompts *p) {
    const golden_entry *np = golden_find(g, "n_prompts");
    int n_prompts = np ? *(const int32_t *)np->data : 0;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < n_prompts && p->n < MC_MAX_PROMPTS; i++) {
        char key[32];
        snprintf(key, sizeof key, "p%d.ids", i);
        const golden_entry *ids = golden_find(g, key);
        SW_CHECK(ids != NULL, "golden entry %s missing", key);
        if (ids == NULL)
            continue;
        p->ids[p->n] = ids->data;
        p->len[p->n++] = (uint32_t)ids->dims[0] > max_len ? max_len : (uint32_t)ids->dims[0];
    }
    SW_CHECK(p->n > 0, "golden file lists no prompts");
}

void mc_compare_forced(const mc_prompts *p, sw_engine *ref, sw_engine *dev, uint32_t V,
                       const char *what, double tol) {
    uint32_t positions = 0, same = 0;
    double worst = 0;
    for (int i = 0; i < p->n; i++) {
        float *a = mc_forced(ref, p->ids[i], p->len[i], V);
        float *b = mc_forced(dev, p->ids[i], p->len[i], V);
        for (uint32_t t = 0; a && b && t < p->len[i]; t++) {
            const float *ra = a + (size_t)t * V, *rb = b + (size_t)t * V;
            double mx = 0, d = 0;
            for (uint32_t v = 0; v < V; v++) {
                mx = fmax(mx, fabs(ra[v]));
                d = fmax(d, fabs((double)ra[v] - rb[v]));
            }
            worst = fmax(worst, d / (mx > 0 ? mx : 1));
            positions++;
            same += mc_argmax(ra, V) == mc_argmax(rb, V);
        }
        free(a);
        free(b);
    }
    SW_CHECK(positions > 0 && same == positions, "%s: teacher-forced argmax agrees at %u of %u "
             "positions", what, same, positions);
    SW_CHECK(worst <= tol, "%s: logits differ by %.3g of the row's max |logit| (limit %.0e)",
             what, worst, tol);
    printf("  %-26s argmax agrees at %u/%u positions, max |dlogit| %.2e x max|logit| "
           "(limit %.0e)\n", what, same, positions, worst, tol);
}

void mc_check_peak(sw_engine *e, const char *name, uint64_t granule) {
    sw_plan_summary sum;
    backend_stats bs;
    if (e->device == NULL || sw_plan_get_summary(sw_engine_plan(e), &sum) != SW_OK)
        return;
    e->device->vt->get_stats(e->device, &bs);
    SW_CHECK(bs.peak_bytes <= sum.device_bytes, "%s: device peak %llu > plan %llu", name,
             (unsigned long long)bs.peak_bytes, (unsigned long long)sum.device_bytes);
    if (granule == 0)
        return;
    SW_CHECK(bs.driver_peak_bytes <= sum.device_bytes + bs.n_allocs * granule,
             "%s: the driver saw %llu bytes taken, plan %llu + %llu buffers' granularity", name,
             (unsigned long long)bs.driver_peak_bytes, (unsigned long long)sum.device_bytes,
             (unsigned long long)bs.n_allocs);
    printf("  %-16s device peak %.1f MiB accounted, %.1f MiB by cudaMemGetInfo, plan %.1f "
           "MiB\n", name, (double)bs.peak_bytes / 1048576.0,
           (double)bs.driver_peak_bytes / 1048576.0, (double)sum.device_bytes / 1048576.0);
}

/*
 * bench_print.c — `spillway bench`'s output: llama-bench's markdown table
 * (same columns, same units: MiB, millions of parameters, t/s mean ± stddev)
 * with a line per tg test on its decode bound, or one JSON array. stdout
 * only; errors are the caller's.
 */
#include "cli/bench.h"

void bench_print_header(void) {
    printf("| %-30s | %10s | %10s | %-10s | %7s | %15s | %20s |\n", "model", "size", "params",
           "backend", "threads", "test", "t/s");
    printf("| ------------------------------ | ---------: | ---------: | ---------- | ------: "
           "| --------------: | -------------------: |\n");
}

void bench_print_row(const bench_model *bm, const bench_result *t) {
    char size[32], params[32], test[32], ts[48];
    snprintf(size, sizeof size, "%.2f MiB", (double)bm->size_bytes / 1048576.0);
    snprintf(params, sizeof params, "%.2f M", (double)bm->n_params / 1e6);
    snprintf(test, sizeof test, "%s%ld", t->n_gen ? "tg" : "pp", t->n_gen ? t->n_gen : t->n_prompt);
    snprintf(ts, sizeof ts, "%.2f ± %.2f", t->mean, t->stddev);
    /* "±" is two bytes but one column: pad one more. */
    printf("| %-30.30s | %10s | %10s | %-10s | %7ld | %15s | %21s |\n", bm->file, size, params,
           "cpu", t->threads, test, ts);
    fflush(stdout);
}

static double bound_of(const bench_result *t) {
    return t->bytes_per_token ? t->read_Bps / (double)t->bytes_per_token : 0.0;
}

void bench_print_bounds(const bench_result *res, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const bench_result *t = &res[i];
        if (t->n_gen == 0)
            continue;
        printf("tg%ld -t %ld: %.2f MB of weights per token, read %.2f GB/s -> bound %.1f t/s "
               "(reached %.0f%%)\n", t->n_gen, t->threads, (double)t->bytes_per_token / 1e6,
               t->read_Bps / 1e9, bound_of(t), 100.0 * t->mean / bound_of(t));
    }
}

void bench_print_json(const bench_model *bm, const bench_result *res, size_t n, long reps) {
    fputs("[\n", stdout);
    for (size_t i = 0; i < n; i++) {
        const bench_result *t = &res[i];
        fputs("  {\"model\": ", stdout);
        json_put_string(stdout, bm->file);
        printf(", \"model_size\": %llu, \"model_n_params\": %llu, \"backend\": \"cpu\", "
               "\"threads\": %ld, \"n_prompt\": %ld, \"n_gen\": %ld, \"n_batch\": %u, "
               "\"test\": \"%s%ld\", \"repetitions\": %ld, \"tokens_per_s\": %.4f, "
               "\"stddev\": %.4f, \"samples\": [", (unsigned long long)bm->size_bytes,
               (unsigned long long)bm->n_params, t->threads, t->n_prompt, t->n_gen, t->n_batch,
               t->n_gen ? "tg" : "pp", t->n_gen ? t->n_gen : t->n_prompt, reps, t->mean,
               t->stddev);
        for (long r = 0; r < reps; r++)
            printf("%s%.4f", r ? ", " : "", t->samples[r]);
        putchar(']');
        if (t->n_gen)
            printf(", \"bytes_per_token\": %llu, \"read_bandwidth_Bps\": %.0f, "
                   "\"bound_tokens_per_s\": %.4f", (unsigned long long)t->bytes_per_token,
                   t->read_Bps, bound_of(t));
        printf("}%s\n", i + 1 < n ? "," : "");
    }
    fputs("]\n", stdout);
}

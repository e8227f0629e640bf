/*
 * info.c — `spillway info [-m FILE] [--json] [--devices]`: what a model file
 * holds (summary, metadata, tensor table, totals by type), or which devices
 * this build sees. Reads metadata only; never touches tensor data.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_arg.h"
#include "format/json_write.h"

#define META_JSON_CAP 65536
#define META_MAX_ITEMS 8
#define N_TYPES 64

typedef struct type_total {
    const char *name;
    uint64_t n_tensors, n_elements, n_bytes;
} type_total;

static void usage(FILE *out) {
    fputs("usage: spillway info [-m FILE] [--json] [--devices]\n"
          "  -m FILE     model file (default: the fetched Gemma 3 270M)\n"
          "  --json      machine-readable output\n"
          "  --devices   list accelerators instead of describing a model\n",
          out);
}


static void tally_types(const sw_model *m, type_total *totals, size_t *n_totals) {
    *n_totals = 0;
    for (size_t i = 0; i < sw_model_tensor_count(m); i++) {
        sw_tensor_info t;
        sw_model_tensor_at(m, i, &t);
        size_t k = 0;
        while (k < *n_totals && strcmp(totals[k].name, t.type_name) != 0)
            k++;
        if (k == *n_totals) {
            if (*n_totals == N_TYPES)
                continue;
            totals[k] = (type_total){t.type_name, 0, 0, 0};
            (*n_totals)++;
        }
        totals[k].n_tensors++;
        totals[k].n_elements += t.n_elements;
        totals[k].n_bytes += t.n_bytes;
    }
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* "4096 x 262144", padded for the table. */
static void print_shape(const sw_tensor_info *t) {
    char buf[96];
    size_t len = 0;
    for (uint32_t d = 0; d < t->n_dims; d++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%" PRIu64, d ? " x " : "",
                                t->ne[d]);
    printf("%-18s", buf);
}

static void print_text(const sw_model *m, const sw_model_summary *s, char *meta_buf) {
    if (s->container_version != 0)
        printf("model      %s (%.1f MiB, GGUF v%u)\n", s->path, mib(s->file_bytes),
               s->container_version);
    else /* a Hugging Face folder: metadata below is translated from config.json */
        printf("model      %s (%.1f MiB, Hugging Face folder, %s)\n", s->path,
               mib(s->file_bytes), s->container);
    printf("name       %s\n", s->name[0] ? s->name : "(not stated)");
    printf("arch       %s: %u layers, n_embd %u, n_ff %u, heads %u (kv %u), head dim %u,"
           " train ctx %u, sliding window %u\n",
           s->architecture[0] ? s->architecture : "(not stated)", s->n_layer, s->n_embd,
           s->n_ff, s->n_head, s->n_head_kv, s->n_embd_head, s->n_ctx_train,
           s->sliding_window);
    printf("file type  %s\n", sw_file_type_name(s->file_type));
    printf("params     %.1f M in %" PRIu64 " tensors (%.1f MiB of weights)\n",
           (double)s->n_params / 1e6, s->n_tensors, mib(s->tensor_bytes));
    printf("tokenizer  %s, %" PRIu64 " tokens\n",
           s->tokenizer_model[0] ? s->tokenizer_model : "(none)", s->n_vocab);

    printf("\nmetadata (%" PRIu64 " keys)\n", s->n_meta);
    for (size_t i = 0; i < sw_model_meta_count(m); i++) {
        sw_meta_info mi;
        sw_model_meta_at(m, i, &mi);
        sw_model_meta_json(m, i, META_MAX_ITEMS, meta_buf, 160);
        if (mi.elem_type_name[0])
            printf("  %-40s %s[%s] x%" PRIu64 "  %s\n", mi.key, mi.type_name,
                   mi.elem_type_name, mi.n_items, meta_buf);
        else
            printf("  %-40s %-8s %s\n", mi.key, mi.type_name, meta_buf);
    }

    printf("\ntensors (ne[0] first: ne[0] is the contiguous dimension)\n");
    printf("  %-36s %-7s %-18s %12s %12s\n", "name", "type", "shape", "bytes", "offset");
    for (size_t i = 0; i < sw_model_tensor_count(m); i++) {
        sw_tensor_info t;
        sw_model_tensor_at(m, i, &t);
        printf("  %-36s %-7s ", t.name, t.type_name);
        print_shape(&t);
        printf(" %12" PRIu64 " %#12" PRIx64 "\n", t.n_bytes, t.file_offset);
    }

    type_total totals[N_TYPES];
    size_t n_totals;
    tally_types(m, totals, &n_totals);
    printf("\ntotals by type\n");
    for (size_t k = 0; k < n_totals; k++)
        printf("  %-7s %4" PRIu64 " tensors %14" PRIu64 " params %10.2f MiB\n",
               totals[k].name, totals[k].n_tensors, totals[k].n_elements,
               mib(totals[k].n_bytes));
}

/* ---- JSON ---------------------------------------------------------------- */

static void print_json_meta(jsonw *j, const sw_model *m, char *meta_buf) {
    jw_key(j, "metadata");
    jw_arr(j);
    for (size_t i = 0; i < sw_model_meta_count(m); i++) {
        sw_meta_info mi;
        sw_model_meta_at(m, i, &mi);
        sw_model_meta_json(m, i, META_MAX_ITEMS, meta_buf, META_JSON_CAP);
        jw_obj(j);
        jw_key_str(j, "key", mi.key);
        jw_key_str(j, "type", mi.type_name);
        if (mi.elem_type_name[0]) {
            jw_key_str(j, "elem_type", mi.elem_type_name);
            jw_key_uint(j, "n_items", mi.n_items);
        }
        jw_key(j, "value");
        jw_raw(j, meta_buf); /* already JSON: the library rendered it */
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

static void print_json_tensors(jsonw *j, const sw_model *m) {
    jw_key(j, "tensors");
    jw_arr(j);
    for (size_t i = 0; i < sw_model_tensor_count(m); i++) {
        sw_tensor_info t;
        sw_model_tensor_at(m, i, &t);
        jw_obj(j);
        jw_key_str(j, "name", t.name);
        jw_key_str(j, "type", t.type_name);
        jw_key_uint(j, "type_id", t.type);
        jw_key(j, "shape");
        jw_arr(j);
        for (uint32_t d = 0; d < t.n_dims; d++)
            jw_uint(j, t.ne[d]);
        jw_arr_end(j);
        jw_key_uint(j, "n_elements", t.n_elements);
        jw_key_uint(j, "bytes", t.n_bytes);
        jw_key_uint(j, "offset", t.file_offset);
        jw_obj_end(j);
    }
    jw_arr_end(j);
    type_total totals[N_TYPES];
    size_t n_totals;
    tally_types(m, totals, &n_totals);
    jw_key(j, "totals_by_type");
    jw_arr(j);
    for (size_t k = 0; k < n_totals; k++) {
        jw_obj(j);
        jw_key_str(j, "type", totals[k].name);
        jw_key_uint(j, "n_tensors", totals[k].n_tensors);
        jw_key_uint(j, "n_elements", totals[k].n_elements);
        jw_key_uint(j, "bytes", totals[k].n_bytes);
        jw_obj_end(j);
    }
    jw_arr_end(j);
}

static void print_json(const sw_model *m, const sw_model_summary *s, char *meta_buf) {
    jsonw j;
    jw_init_file(&j, stdout, JW_COMPACT);
    jw_obj(&j);
    jw_key_str(&j, "path", s->path);
    jw_key_str(&j, "container", s->container);
    jw_key_uint(&j, "version", s->container_version);
    jw_key_uint(&j, "file_bytes", s->file_bytes);
    jw_key_str(&j, "architecture", s->architecture);
    jw_key_str(&j, "name", s->name);
    jw_key_str(&j, "file_type", sw_file_type_name(s->file_type));
    jw_key_uint(&j, "n_params", s->n_params);
    jw_key_uint(&j, "tensor_bytes", s->tensor_bytes);
    jw_key(&j, "hparams");
    jw_obj(&j);
    jw_key_uint(&j, "n_layer", s->n_layer);
    jw_key_uint(&j, "n_embd", s->n_embd);
    jw_key_uint(&j, "n_ff", s->n_ff);
    jw_key_uint(&j, "n_head", s->n_head);
    jw_key_uint(&j, "n_head_kv", s->n_head_kv);
    jw_key_uint(&j, "n_embd_head", s->n_embd_head);
    jw_key_uint(&j, "n_ctx_train", s->n_ctx_train);
    jw_key_uint(&j, "sliding_window", s->sliding_window);
    jw_obj_end(&j);
    jw_key(&j, "tokenizer");
    jw_obj(&j);
    jw_key_str(&j, "model", s->tokenizer_model);
    jw_key_uint(&j, "n_vocab", s->n_vocab);
    jw_obj_end(&j);
    print_json_meta(&j, m, meta_buf);
    print_json_tensors(&j, m);
    jw_obj_end(&j);
    jw_finish(&j);
}

int cmd_info(int argc, char **argv) {
    const char *model_path = NULL;
    bool json = false, devices = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (++i >= argc) {
                cli_error("%s needs a file name", argv[i - 1]);
                return CLI_EXIT_USAGE;
            }
            model_path = argv[i];
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--devices")) {
            devices = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return CLI_EXIT_OK;
        } else {
            cli_error("info: unknown option '%s' (see spillway info --help)", argv[i]);
            return CLI_EXIT_USAGE;
        }
    }
    if (devices)
        return cli_print_devices(json);

    sw_model *m = NULL;
    int rc = cli_open_model(model_path, &m);
    if (rc != CLI_EXIT_OK)
        return rc;
    char *meta_buf = malloc(META_JSON_CAP);
    if (meta_buf == NULL) {
        sw_model_close(m);
        cli_error("out of host memory");
        return CLI_EXIT_OOM_HOST;
    }
    sw_model_summary s;
    sw_model_get_summary(m, &s);
    if (json)
        print_json(m, &s, meta_buf);
    else
        print_text(m, &s, meta_buf);
    free(meta_buf);
    sw_model_close(m);
    return CLI_EXIT_OK;
}

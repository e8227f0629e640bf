/*
 * hlo.c — the StableHLO text writer (hlo.h). Every op is printed in the
 * generic form; the function signature and return use func's own syntax.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/pjrt/hlo.h"
#include "util/error.h"

hlo_type hlo_t1(const char *elt, int64_t d0) {
    return (hlo_type){.elt = elt, .rank = 1, .dim = {d0}};
}
hlo_type hlo_t2(const char *elt, int64_t d0, int64_t d1) {
    return (hlo_type){.elt = elt, .rank = 2, .dim = {d0, d1}};
}
hlo_type hlo_t3(const char *elt, int64_t d0, int64_t d1, int64_t d2) {
    return (hlo_type){.elt = elt, .rank = 3, .dim = {d0, d1, d2}};
}
hlo_type hlo_t4(const char *elt, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return (hlo_type){.elt = elt, .rank = 4, .dim = {d0, d1, d2, d3}};
}
hlo_type hlo_scalar(const char *elt) { return (hlo_type){.elt = elt, .rank = 0}; }
hlo_type hlo_with_elt(hlo_type t, const char *elt) {
    t.elt = elt;
    return t;
}
int64_t hlo_elems(hlo_type t) {
    int64_t n = 1;
    for (int i = 0; i < t.rank; i++)
        n *= t.dim[i];
    return n;
}

/* Appends to sb; a failure is sticky in *status. */
static void vput(hlo_sbuf *sb, sw_status *status, const char *fmt, va_list ap0) {
    if (*status != SW_OK)
        return;
    for (;;) {
        va_list ap;
        va_copy(ap, ap0);
        int n = sb->s ? vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap) : 0;
        va_end(ap);
        if (n < 0) {
            *status = sw_errorf(SW_ERR_ARG, "internal: program text formatting failed");
            return;
        }
        if (sb->s != NULL && (size_t)n < sb->cap - sb->len) {
            sb->len += (size_t)n;
            return;
        }
        size_t cap = sb->cap * 2 + (size_t)n + 4096;
        char *t = realloc(sb->s, cap);
        if (t == NULL) {
            *status = sw_errorf(SW_ERR_OOM_HOST, "out of host memory writing a program");
            return;
        }
        sb->s = t;
        sb->cap = cap;
    }
}

static void put(hlo *h, const char *fmt, ...) SW_PRINTF(2, 3);
static void put(hlo *h, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vput(&h->body, &h->status, fmt, ap);
    va_end(ap);
}

static void put_full(hlo *h, const char *fmt, ...) SW_PRINTF(2, 3);
static void put_full(hlo *h, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vput(&h->full, &h->status, fmt, ap);
    va_end(ap);
}

/* "tensor<2x3xf32>" into buf. */
static const char *type_str(char *buf, size_t cap, hlo_type t) {
    size_t len = (size_t)snprintf(buf, cap, "tensor<");
    for (int i = 0; i < t.rank && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%lldx", (long long)t.dim[i]);
    if (len < cap)
        snprintf(buf + len, cap - len, "%s>", t.elt);
    return buf;
}

static void put_type(hlo *h, hlo_type t) {
    char buf[128];
    put(h, "%s", type_str(buf, sizeof buf, t));
}

static void put_value(hlo *h, int v) {
    if (v < h->n_args)
        put(h, "%%arg%d", v);
    else
        put(h, "%%v%d", v);
}

hlo_type hlo_type_of(const hlo *h, int v) {
    return v >= 0 && v < h->n_values ? h->types[v] : hlo_scalar("f32");
}

sw_status hlo_begin(hlo *h, int n_args, const uint64_t *arg_bytes) {
    h->body.len = h->full.len = 0;
    h->text = NULL;
    h->status = SW_OK;
    if (n_args > HLO_MAX_ARGS)
        return h->status = sw_errorf(SW_ERR_ARG, "internal: %d program arguments", n_args);
    h->n_args = h->n_values = n_args;
    for (int i = 0; i < n_args; i++) {
        h->types[i] = hlo_t1("ui8", (int64_t)arg_bytes[i]);
        h->alias[i] = -1;
    }
    put(h, "%s", "");   /* allocates the body on first use */
    return h->status;
}

void hlo_alias(hlo *h, int arg, int out) {
    if (arg >= 0 && arg < h->n_args)
        h->alias[arg] = out;
}

/* The signature depends on the results, so the body is written first and
 * the whole program is then the header followed by the body. */
sw_status hlo_finish(hlo *h, const int *outs, int n) {
    char ty[128];
    put(h, "    return ");
    for (int i = 0; i < n; i++) {
        put(h, "%s", i ? ", " : "");
        put_value(h, outs[i]);
    }
    put(h, " : ");
    for (int i = 0; i < n; i++)
        put(h, "%s%s", i ? ", " : "", type_str(ty, sizeof ty, hlo_type_of(h, outs[i])));
    put(h, "\n  }\n}\n");
    put_full(h, "module @spillway {\n  func.func public @main(");
    for (int i = 0; i < h->n_args; i++) {
        put_full(h, "%s%%arg%d: %s", i ? ", " : "", i, type_str(ty, sizeof ty, h->types[i]));
        if (h->alias[i] >= 0)
            put_full(h, " {tf.aliasing_output = %d : i32}", h->alias[i]);
    }
    put_full(h, ") -> (");
    for (int i = 0; i < n; i++)
        put_full(h, "%s%s", i ? ", " : "", type_str(ty, sizeof ty, hlo_type_of(h, outs[i])));
    put_full(h, ") {\n%s", h->body.s ? h->body.s : "");
    if (h->status == SW_OK)
        h->text = h->full.s;
    return h->status;
}

void hlo_free(hlo *h) {
    free(h->body.s);
    free(h->full.s);
    memset(&h->body, 0, sizeof h->body);
    memset(&h->full, 0, sizeof h->full);
    h->text = NULL;
}

static int new_value(hlo *h, hlo_type t) {
    if (h->status != SW_OK)
        return -1;
    if (h->n_values >= HLO_MAX_VALUES) {
        h->status = sw_errorf(SW_ERR_ARG, "internal: program has too many values");
        return -1;
    }
    h->types[h->n_values] = t;
    return h->n_values++;
}

int hlo_op(hlo *h, const char *op, const char *attrs, hlo_type out, int n_in, const int *ins) {
    for (int i = 0; i < n_in; i++)
        if (ins[i] < 0 || ins[i] >= h->n_values)
            return -1;
    int v = new_value(h, out);
    if (v < 0)
        return -1;
    put(h, "    ");
    put_value(h, v);
    put(h, " = \"stablehlo.%s\"(", op);
    for (int i = 0; i < n_in; i++) {
        put(h, i ? ", " : "");
        put_value(h, ins[i]);
    }
    put(h, ")%s%s : (", attrs[0] ? " " : "", attrs);
    for (int i = 0; i < n_in; i++) {
        put(h, i ? ", " : "");
        put_type(h, h->types[ins[i]]);
    }
    put(h, ") -> ");
    put_type(h, out);
    put(h, "\n");
    return v;
}

/* "a, b, c" into buf. */
static const char *i64_list(char *buf, size_t cap, const int64_t *v, int n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)v[i]);
    return buf;
}

/* "array<i64: a, b, c>" into buf. */
static const char *i64_array(char *buf, size_t cap, const int64_t *v, int n) {
    char list[112];
    snprintf(buf, cap, "array<i64%s%s>", n ? ": " : "", i64_list(list, sizeof list, v, n));
    return buf;
}

static bool is_float(const char *elt) {
    return !strcmp(elt, "f32") || !strcmp(elt, "bf16") || !strcmp(elt, "f16");
}

int hlo_const(hlo *h, double v, hlo_type t) {
    char attrs[224], ty[128];
    type_str(ty, sizeof ty, t);
    if (is_float(t.elt) && isinf(v)) {   /* MLIR spells infinities as bit patterns */
        bool f32 = !strcmp(t.elt, "f32"), bf16 = !strcmp(t.elt, "bf16");
        unsigned bits = f32 ? (v < 0 ? 0xFF800000u : 0x7F800000u)
                            : bf16 ? (v < 0 ? 0xFF80u : 0x7F80u) : (v < 0 ? 0xFC00u : 0x7C00u);
        snprintf(attrs, sizeof attrs, "{value = dense<0x%X> : %s}", bits, ty);
    } else if (is_float(t.elt))
        snprintf(attrs, sizeof attrs, "{value = dense<%.9e> : %s}", v, ty);
    else if (!strcmp(t.elt, "i1"))
        snprintf(attrs, sizeof attrs, "{value = dense<%s> : %s}", v != 0 ? "true" : "false", ty);
    else
        snprintf(attrs, sizeof attrs, "{value = dense<%lld> : %s}", (long long)v, ty);
    return hlo_op(h, "constant", attrs, t, 0, NULL);
}

int hlo_unary(hlo *h, const char *op, int a) {
    return hlo_op(h, op, "", hlo_type_of(h, a), 1, &a);
}

int hlo_binary(hlo *h, const char *op, int a, int b) {
    int ins[2] = {a, b};
    return hlo_op(h, op, "", hlo_type_of(h, a), 2, ins);
}

int hlo_convert(hlo *h, int a, const char *elt) {
    hlo_type t = hlo_type_of(h, a);
    if (!strcmp(t.elt, elt))
        return a;
    return hlo_op(h, "convert", "", hlo_with_elt(t, elt), 1, &a);
}

int hlo_bitcast(hlo *h, int a, hlo_type t) {
    return hlo_op(h, "bitcast_convert", "", t, 1, &a);
}

int hlo_reshape(hlo *h, int a, hlo_type t) {
    hlo_type at = hlo_type_of(h, a);
    if (at.rank == t.rank && !memcmp(at.dim, t.dim, sizeof(int64_t) * (size_t)t.rank))
        return a;
    return hlo_op(h, "reshape", "", t, 1, &a);
}

int hlo_broadcast(hlo *h, int a, hlo_type t, const int64_t *dims, int n_dims) {
    char arr[128], attrs[160];
    snprintf(attrs, sizeof attrs, "{broadcast_dimensions = %s}",
             i64_array(arr, sizeof arr, dims, n_dims));
    return hlo_op(h, "broadcast_in_dim", attrs, t, 1, &a);
}

int hlo_splat(hlo *h, int a, hlo_type t) {
    hlo_type at = hlo_type_of(h, a);
    int64_t dims[HLO_MAX_RANK] = {0};
    if (at.rank == t.rank)
        return a;
    for (int i = 0; i < at.rank; i++)
        dims[i] = i;
    return hlo_broadcast(h, a, t, dims, at.rank);
}

int hlo_transpose(hlo *h, int a, const int64_t *perm) {
    hlo_type at = hlo_type_of(h, a), t = at;
    char arr[128], attrs[160];
    for (int i = 0; i < at.rank; i++)
        t.dim[i] = at.dim[perm[i]];
    snprintf(attrs, sizeof attrs, "{permutation = %s}", i64_array(arr, sizeof arr, perm, at.rank));
    return hlo_op(h, "transpose", attrs, t, 1, &a);
}

int hlo_slice(hlo *h, int a, const int64_t *start, const int64_t *limit) {
    hlo_type t = hlo_type_of(h, a);
    int64_t ones[HLO_MAX_RANK] = {0};
    char s[128], l[128], o[128], attrs[448];
    for (int i = 0; i < t.rank; i++) {
        ones[i] = 1;
        t.dim[i] = limit[i] - start[i];
    }
    snprintf(attrs, sizeof attrs, "{start_indices = %s, limit_indices = %s, strides = %s}",
             i64_array(s, sizeof s, start, t.rank), i64_array(l, sizeof l, limit, t.rank),
             i64_array(o, sizeof o, ones, t.rank));
    return hlo_op(h, "slice", attrs, t, 1, &a);
}

int hlo_iota(hlo *h, hlo_type t, int dim) {
    char attrs[64];
    snprintf(attrs, sizeof attrs, "{iota_dimension = %d : i64}", dim);
    return hlo_op(h, "iota", attrs, t, 0, NULL);
}

int hlo_compare(hlo *h, int a, int b, const char *dir, const char *kind) {
    char attrs[160];
    int ins[2] = {a, b};
    snprintf(attrs, sizeof attrs, "{comparison_direction = #stablehlo<comparison_direction %s>, "
             "compare_type = #stablehlo<comparison_type %s>}", dir, kind);
    return hlo_op(h, "compare", attrs, hlo_with_elt(hlo_type_of(h, a), "i1"), 2, ins);
}

int hlo_select(hlo *h, int pred, int a, int b) {
    int ins[3] = {pred, a, b};
    return hlo_op(h, "select", "", hlo_type_of(h, a), 3, ins);
}

/* A reduce/scatter body: two scalars of elt in, `op` of them (or the
 * second, for "second") out. Written as the op's region. */
static void put_body(hlo *h, const char *elt, const char *op) {
    int id = h->n_values;   /* unique names per body */
    put(h, "({\n    ^bb0(%%p%d: tensor<%s>, %%q%d: tensor<%s>):\n", id, elt, id, elt);
    if (!strcmp(op, "second")) {
        put(h, "      \"stablehlo.return\"(%%q%d) : (tensor<%s>) -> ()\n    })", id, elt);
        return;
    }
    put(h, "      %%r%d = \"stablehlo.%s\"(%%p%d, %%q%d) : (tensor<%s>, tensor<%s>) -> "
        "tensor<%s>\n", id, op, id, id, elt, elt, elt);
    put(h, "      \"stablehlo.return\"(%%r%d) : (tensor<%s>) -> ()\n    })", id, elt);
}

int hlo_reduce(hlo *h, int a, int dim, const char *op, double init) {
    hlo_type at = hlo_type_of(h, a), t = {.elt = at.elt, .rank = at.rank - 1};
    int z = hlo_const(h, init, hlo_scalar(at.elt));
    for (int i = 0, j = 0; i < at.rank; i++)
        if (i != dim)
            t.dim[j++] = at.dim[i];
    int v = new_value(h, t);
    if (v < 0 || z < 0)
        return -1;
    put(h, "    ");
    put_value(h, v);
    put(h, " = \"stablehlo.reduce\"(");
    put_value(h, a);
    put(h, ", ");
    put_value(h, z);
    put(h, ") ");
    put_body(h, at.elt, op);
    put(h, " {dimensions = array<i64: %d>} : (", dim);
    put_type(h, at);
    put(h, ", tensor<%s>) -> ", at.elt);
    put_type(h, t);
    put(h, "\n");
    return v;
}

/* HIGHEST precision: f32 products in f32 (a GPU would otherwise take
 * TF32, 10-bit mantissas), so every plugin computes what the cpu does. */
int hlo_dot(hlo *h, int a, int b, const int64_t *lb, const int64_t *rb, int n_batch,
            int64_t lc, int64_t rc, hlo_type out) {
    char l[96], r[96], attrs[512];
    int ins[2] = {a, b};
    snprintf(attrs, sizeof attrs, "{dot_dimension_numbers = #stablehlo.dot<"
             "lhs_batching_dimensions = [%s], rhs_batching_dimensions = [%s], "
             "lhs_contracting_dimensions = [%lld], rhs_contracting_dimensions = [%lld]>, "
             "precision_config = [#stablehlo<precision HIGHEST>, "
             "#stablehlo<precision HIGHEST>]}",
             i64_list(l, sizeof l, lb, n_batch), i64_list(r, sizeof r, rb, n_batch),
             (long long)lc, (long long)rc);
    return hlo_op(h, "dot_general", attrs, out, 2, ins);
}

int hlo_take_rows(hlo *h, int a, int idx) {
    hlo_type at = hlo_type_of(h, a), it = hlo_type_of(h, idx);
    char attrs[320];
    int64_t n = it.dim[0];
    int idx2 = hlo_reshape(h, idx, hlo_t2("i32", n, 1));
    int ins[2] = {a, idx2};
    snprintf(attrs, sizeof attrs, "{dimension_numbers = #stablehlo.gather<offset_dims = [1], "
             "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
             "slice_sizes = array<i64: 1, %lld>, indices_are_sorted = false}",
             (long long)at.dim[1]);
    return hlo_op(h, "gather", attrs, hlo_t2(at.elt, n, at.dim[1]), 2, ins);
}

int hlo_put_rows(hlo *h, int a, int idx, int upd) {
    hlo_type at = hlo_type_of(h, a), it = hlo_type_of(h, idx);
    int idx2 = hlo_reshape(h, idx, hlo_t2("i32", it.dim[0], 1));
    int v = new_value(h, at);
    if (v < 0 || idx2 < 0 || upd < 0)
        return -1;
    put(h, "    ");
    put_value(h, v);
    put(h, " = \"stablehlo.scatter\"(");
    put_value(h, a);
    put(h, ", ");
    put_value(h, idx2);
    put(h, ", ");
    put_value(h, upd);
    put(h, ") ");
    put_body(h, at.elt, "second");
    put(h, " {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
        "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = "
        "1>, indices_are_sorted = false, unique_indices = true} : (");
    put_type(h, at);
    put(h, ", ");
    put_type(h, hlo_type_of(h, idx2));
    put(h, ", ");
    put_type(h, hlo_type_of(h, upd));
    put(h, ") -> ");
    put_type(h, at);
    put(h, "\n");
    return v;
}

int hlo_const_f32s(hlo *h, const float *v, int64_t n) {
    size_t cap = (size_t)n * 18 + 64;
    char *attrs = malloc(cap);
    if (attrs == NULL) {
        h->status = sw_errorf(SW_ERR_OOM_HOST, "out of host memory writing a program");
        return -1;
    }
    size_t len = (size_t)snprintf(attrs, cap, "{value = dense<[");
    for (int64_t i = 0; i < n; i++)
        len += (size_t)snprintf(attrs + len, cap - len, "%s%.9e", i ? ", " : "", (double)v[i]);
    snprintf(attrs + len, cap - len, "]> : tensor<%lldxf32>}", (long long)n);
    int r = hlo_op(h, "constant", attrs, hlo_t1("f32", n), 0, NULL);
    free(attrs);
    return r;
}

int hlo_concat(hlo *h, int a, int b, int dim) {
    hlo_type t = hlo_type_of(h, a);
    char attrs[48];
    int ins[2] = {a, b};
    t.dim[dim] += hlo_type_of(h, b).dim[dim];
    snprintf(attrs, sizeof attrs, "{dimension = %d : i64}", dim);
    return hlo_op(h, "concatenate", attrs, t, 2, ins);
}

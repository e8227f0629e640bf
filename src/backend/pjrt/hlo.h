/*
 * hlo.h — writing StableHLO programs as MLIR text, one SSA value at a
 * time, in the generic operation form ("stablehlo.add"(%a, %b) : (...) ->
 * ...) so that one printer serves every op. Each value remembers its type;
 * shapes are int64 arrays. A program has one function, @main, whose
 * arguments are the flat ui8 byte arrays the backend keeps (pjrt_exec.h),
 * and whose results are ui8 arrays too.
 *
 * Errors (text too long for the buffer, too many values) are sticky in
 * h->status and reported by hlo_finish(); helpers return value -1 then.
 */
#ifndef SW_BACKEND_PJRT_HLO_H
#define SW_BACKEND_PJRT_HLO_H

#include <stdbool.h>
#include <stdint.h>

#include "spillway.h"

#define HLO_MAX_RANK 5
#define HLO_MAX_VALUES 4096
#define HLO_MAX_ARGS 32

typedef struct hlo_type {
    const char *elt;              /* "f32", "bf16", "f16", "i32", "ui8", "i1" (static) */
    int rank;
    int64_t dim[HLO_MAX_RANK];
} hlo_type;

/* A growable string. */
typedef struct hlo_sbuf {
    char *s;
    size_t len, cap;
} hlo_sbuf;

/* One program being written. Reusable: hlo_begin keeps the buffers of the
 * previous program (no allocation per call once they are large enough). */
typedef struct hlo {
    const char *text;             /* after hlo_finish: the program (in `full`) */
    hlo_sbuf body, full;
    hlo_type types[HLO_MAX_VALUES];
    int n_values, n_args;
    int alias[HLO_MAX_ARGS];      /* output index an argument donates to, -1 none */
    int region_depth;             /* > 0 while inside a reduce/scatter body */
    sw_status status;
} hlo;

/* Types. */
hlo_type hlo_t1(const char *elt, int64_t d0);
hlo_type hlo_t2(const char *elt, int64_t d0, int64_t d1);
hlo_type hlo_t3(const char *elt, int64_t d0, int64_t d1, int64_t d2);
hlo_type hlo_t4(const char *elt, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
hlo_type hlo_scalar(const char *elt);
hlo_type hlo_with_elt(hlo_type t, const char *elt);
int64_t hlo_elems(hlo_type t);

/* Starts a program with n_args ui8 arguments of arg_bytes[i] bytes. */
sw_status hlo_begin(hlo *h, int n_args, const uint64_t *arg_bytes);
/* Argument i donates its buffer to output `out` (same size). */
void hlo_alias(hlo *h, int arg, int out);
/* Ends @main returning values outs[0..n) (ui8 arrays); the text is then
 * h->text (owned by h, valid until the next hlo_begin or hlo_free).
 * Returns h->status. */
sw_status hlo_finish(hlo *h, const int *outs, int n);
void hlo_free(hlo *h);

/* The value of argument i (arguments are values 0..n_args-1). */
static inline int hlo_arg(int i) { return i; }
hlo_type hlo_type_of(const hlo *h, int v);

/* One op: %new = "stablehlo.<op>"(ins...) {attrs} : (types) -> out.
 * attrs may be "" (no attribute dictionary). */
int hlo_op(hlo *h, const char *op, const char *attrs, hlo_type out, int n_in, const int *ins);

/* Shorthands for the ops the programs use. */
int hlo_const(hlo *h, double v, hlo_type t);           /* splat constant */
int hlo_unary(hlo *h, const char *op, int a);           /* same type out */
int hlo_binary(hlo *h, const char *op, int a, int b);   /* same type out */
int hlo_convert(hlo *h, int a, const char *elt);
int hlo_bitcast(hlo *h, int a, hlo_type t);
int hlo_reshape(hlo *h, int a, hlo_type t);
int hlo_broadcast(hlo *h, int a, hlo_type t, const int64_t *dims, int n_dims);
/* broadcast a scalar (rank 0) value, or one of t's shape, to t */
int hlo_splat(hlo *h, int a, hlo_type t);
int hlo_transpose(hlo *h, int a, const int64_t *perm);
int hlo_slice(hlo *h, int a, const int64_t *start, const int64_t *limit);
int hlo_iota(hlo *h, hlo_type t, int dim);
/* compare: dir "LT", "LE", "EQ", "GE", "GT", "NE"; kind "SIGNED" or "FLOAT" */
int hlo_compare(hlo *h, int a, int b, const char *dir, const char *kind);
int hlo_select(hlo *h, int pred, int a, int b);
/* reduce over one dimension with "add" or "maximum", init a constant */
int hlo_reduce(hlo *h, int a, int dim, const char *op, double init);
/* dot_general with optional batch dims (n_batch may be 0) */
int hlo_dot(hlo *h, int a, int b, const int64_t *lb, const int64_t *rb, int n_batch,
            int64_t lc, int64_t rc, hlo_type out);
/* a (n) f32 constant of the given values */
int hlo_const_f32s(hlo *h, const float *v, int64_t n);
/* a and b joined along dim */
int hlo_concat(hlo *h, int a, int b, int dim);
/* out[t] = rows idx[t] of a 2-D operand; idx is a (T) i32 value */
int hlo_take_rows(hlo *h, int a, int idx);
/* a 2-D operand with rows idx[t] replaced by upd[t] (unique idx) */
int hlo_put_rows(hlo *h, int a, int idx, int upd);

#endif

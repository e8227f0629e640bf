/*
 * pjrt_prog_parts.h — what the op programs (pjrt_programs.c) and the block
 * programs (pjrt_block_prog.c) both build with: a signature's inputs and
 * outputs, the checks on the weights they read, and the program's values
 * read from its byte-array arguments. Internal to the PJRT backend.
 */
#ifndef SW_BACKEND_PJRT_PROG_PARTS_H
#define SW_BACKEND_PJRT_PROG_PARTS_H

#include "backend/pjrt/pjrt_programs.h"

/* Appends an input (rows: per token, for padding a batch; MEM_ROWS_NONE
 * otherwise) or an output that may reuse input `donate`'s buffer (-1). */
void prog_in(prog_sig *s, bmem m, uint64_t bytes, prog_rows rows);
void prog_out(prog_sig *s, bmem m, uint64_t bytes, int donate, prog_rows rows);

/* SW_ERR_UNSUPPORTED for a weight type PJRT does not compute in. */
sw_status prog_check_weight(const btensor *w);
/* SW_ERR_ARG unless gate_up and down are n_expert experts of one shape
 * (gate_up: E x 2F rows of D; down: E x D rows of F), of a PJRT type,
 * routed k at a time (1..64). */
sw_status prog_check_experts(const btensor *gate_up, const btensor *down, uint32_t n_expert,
                             uint32_t k);
/* The walkers' callback (backend.h's mem_operand_fn; user: the prog_sig
 * being built): an operand read is an input, one whose value after the
 * call is a result is an output, donating its input when it is an
 * updated cache. */
sw_status prog_sig_add(void *user, const mem_operand *o);

/* Values of argument i: a (rows, cols) f32 activation, n int32, a cache
 * half as (n_seq * rows, row_elems) of its type, n f32 (a norm's weight). */
int prog_act(hlo *h, int i, int64_t rows, int64_t cols);
int prog_ints(hlo *h, int i, int64_t n);
int prog_cache(hlo *h, int i, const bkv *kv);
int prog_norm_w(hlo *h, int i, int64_t n);

/* Ends the program on its n results res (stored as bytes), donating an
 * input's buffer where it holds exactly the result's bytes. */
sw_status prog_finish(hlo *h, const uint64_t *in_bytes, const prog_sig *s, int *res, int n);

#endif

/*
 * pjrt_programs.h — each backend op, and a whole transformer block (or the
 * part of it before or after its experts), as one StableHLO program: which
 * byte ranges it reads and writes (the program's arguments and results, in
 * order), and its text given how many bytes each argument's buffer really
 * holds (a buffer may hold more than the op reads: the program slices).
 * The text is the compile cache's key, so one program serves every call
 * with the same shapes: per block kind (global or sliding window, and
 * Gemma 4's per-layer shapes) and token count.
 */
#ifndef SW_BACKEND_PJRT_PROGRAMS_H
#define SW_BACKEND_PJRT_PROGRAMS_H

#include "backend/backend.h"
#include "backend/block.h"
#include "backend/pjrt/hlo.h"

#define PROG_MAX_IN 32
#define PROG_MAX_OUT 4

/* What an argument or result holds per token of the batch (padding a
 * batch to its bucket pads those): backend.h's mem_rows. */
typedef mem_rows prog_rows;

typedef struct prog_io {
    bmem mem;
    uint64_t bytes;
    prog_rows rows;
} prog_io;

typedef struct prog_sig {
    prog_io in[PROG_MAX_IN];
    int n_in;
    prog_io out[PROG_MAX_OUT];
    int n_out;
    int donate[PROG_MAX_OUT];   /* input whose buffer output i may reuse, -1 none */
} prog_sig;

/* The ranges op reads and writes, from bop_for_each_mem. Errors: SW_ERR_UNSUPPORTED (a weight
 * type PJRT does not compute in: the planner converts those to BF16). */
sw_status prog_op_sig(const bop *op, prog_sig *s);
/* Its text; in_bytes[i] is what input i's buffer holds. */
sw_status prog_op_text(hlo *h, const bop *op, const uint64_t *in_bytes, const prog_sig *s);

/* A block's phase (block.h) as one program, its inputs and results
 * those block_for_each_mem gives (read: an input; a result: an output;
 * the caches the layer writes donated), in its order. Errors:
 * SW_ERR_UNSUPPORTED (weight types), SW_ERR_ARG (inconsistent experts,
 * keys as values without the value norm). */
sw_status prog_block_sig(const block_args *a, prog_sig *s);
sw_status prog_block_text(hlo *h, const block_args *a, const uint64_t *in_bytes,
                          const prog_sig *s);

/* The n_arr per-token arrays io (of a batch of n tokens) padded to Tb:
 * arguments the byte arrays of in_bytes; results f32 rows with zero rows,
 * positions -1 (masked, never cached), sequence ids 0. */
sw_status prog_pad_text(hlo *h, const prog_io *io, const uint64_t *in_bytes, int n_arr,
                        uint32_t n, uint32_t Tb);
/* The first keep_bytes of a byte array. */
sw_status prog_unpad_text(hlo *h, uint64_t in_bytes, uint64_t keep_bytes);

#endif

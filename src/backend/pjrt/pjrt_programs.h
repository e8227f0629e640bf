/*
 * pjrt_programs.h — each backend op, and a whole transformer block, as one
 * StableHLO program: which byte ranges it reads and writes (the program's
 * arguments and results, in order), and its text given how many bytes each
 * argument's buffer really holds (a buffer may hold more than the op
 * reads: the program slices). The text is the compile cache's key, so one
 * program serves every call with the same shapes: per block kind (global
 * or sliding window) and token count.
 */
#ifndef SW_BACKEND_PJRT_PROGRAMS_H
#define SW_BACKEND_PJRT_PROGRAMS_H

#include "backend/backend.h"
#include "backend/block.h"
#include "backend/pjrt/hlo.h"

#define PROG_MAX_IN 24
#define PROG_MAX_OUT 4

typedef struct prog_io {
    bmem mem;
    uint64_t bytes;
} prog_io;

typedef struct prog_sig {
    prog_io in[PROG_MAX_IN];
    int n_in;
    prog_io out[PROG_MAX_OUT];
    int n_out;
    int donate[PROG_MAX_OUT];   /* input whose buffer output i may reuse, -1 none */
} prog_sig;

/* The ranges op reads and writes. Errors: SW_ERR_UNSUPPORTED (a weight
 * type PJRT does not compute in: the planner converts those to BF16). */
sw_status prog_op_sig(const bop *op, prog_sig *s);
/* Its text; in_bytes[i] is what input i's buffer holds. */
sw_status prog_op_text(hlo *h, const bop *op, const uint64_t *in_bytes, const prog_sig *s);

sw_status prog_block_sig(const block_args *a, prog_sig *s);
sw_status prog_block_text(hlo *h, const block_args *a, const uint64_t *in_bytes,
                          const prog_sig *s);

/* A batch of n tokens padded to Tb: inputs x (n, n_embd) f32, pos, seq
 * (n) i32 as byte arrays of in_bytes; results x with zero rows, pos -1
 * (masked, never cached), seq 0. */
sw_status prog_pad_text(hlo *h, const uint64_t *in_bytes, uint32_t n, uint32_t Tb,
                        uint32_t n_embd);
/* The first keep_bytes of a byte array. */
sw_status prog_unpad_text(hlo *h, uint64_t in_bytes, uint64_t keep_bytes);

#endif

/*
 * vmath_consts.h — the constants of the f32 tanh (and the exp and GELU
 * built on it) that the cpu kernels (cpu/vmath.h) and the CUDA kernels
 * (cuda/kmath.h) both evaluate, operation for operation, so both give the
 * same bits; it lives above both so neither includes the other's headers.
 * P (tanh(y)/y - 1 = u*P(u), u = y^2, |y| < 0.625) and E (exp(r), |r| <=
 * ln2/2) are the f32 roundings of near-minimax fits made by
 * tools/fit_vmath.py; the rest are exact facts (ln 2 split so n*LN2_HI is
 * exact for n < 2^14). Rerun the script to check: it prints these lines and
 * the worst ulp of a float32 replay (1.27 over 200000 points).
 */
#ifndef SW_BACKEND_VMATH_CONSTS_H
#define SW_BACKEND_VMATH_CONSTS_H

#define VM_P0 -0.3333333f
#define VM_P1 0.13333206f
#define VM_P2 -0.053946763f
#define VM_P3 0.0217007f
#define VM_P4 -0.008177395f
#define VM_P5 0.0021429588f

#define VM_E0 1.0f
#define VM_E1 1.0f
#define VM_E2 0.4999999f
#define VM_E3 0.1666642f
#define VM_E4 0.041668225f
#define VM_E5 0.008374816f
#define VM_E6 0.0013836842f

#define VM_LOG2E 1.44269504f
#define VM_LN2_HI 0.693359375f     /* 355/512 */
#define VM_LN2_LO -2.12194440e-4f  /* ln 2 - LN2_HI */
#define VM_MAGIC 12582912.0f       /* 1.5 * 2^23: adding it rounds to an integer */
#define VM_MAGIC_BITS 0x4B400000u  /* its bits: + n in the low mantissa */
#define VM_SIGN_BIT 0x80000000u
#define VM_TANH_SMALL 0.625f       /* below: the odd polynomial */
#define VM_TANH_CLAMP 10.0f        /* above: 1 - 2/(e^20 + 1) rounds to 1 */

/* PyTorch's gelu(approximate='tanh') constants */
#define VM_GELU_BETA 0.7978845608028654f /* sqrt(2/pi) */
#define VM_GELU_KAPPA 0.044715f

#endif

/*
 * cpu_test_util.h — helpers shared by the CPU kernel tests (see
 * cpu_test_util.c).
 */
#ifndef SW_TESTS_CPU_TEST_UTIL_H
#define SW_TESTS_CPU_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern uint64_t rng_state;
uint64_t rng_next(void);
/* Uniform in [lo, hi). */
float rng_float(float lo, float hi);
void fill_float(float *x, size_t n, float lo, float hi);
/* malloc that exits the test on failure */
void *xmalloc(size_t n);
/* |got - ref| <= atol + rtol*|ref| everywhere; records one check. */
void check_close(const char *what, const float *got, const double *ref, size_t n, double atol,
                 double rtol);
bool bits_equal(const float *a, const float *b, size_t n, size_t *first);
/* got == want bit for bit; records one check. */
void check_bits(const char *what, const float *got, const float *want, size_t n);
/* The canonical f32 dot of qdot.h. */
float canonical_dot(const float *w, const float *x, size_t n);

/* Every tensor type the kernels take. */
extern const uint32_t all_types[];
extern const int N_TYPES_VALUE;
#define N_TYPES N_TYPES_VALUE

void put_f16(uint8_t *p, float v);
/* n_rows rows of ne0 elements of `type`, random bytes with finite small
 * block scales; returns malloc'd bytes. */
uint8_t *random_weights(uint32_t type, uint64_t ne0, uint64_t n_rows, uint64_t *n_bytes);

/* What cpu_matmul gives for one row and token: the portable integer dot
 * of idot.h over x quantized (types with an integer kernel), else the
 * canonical f32 dot of the dequantized row. */
float expected_dot(uint32_t type, const uint8_t *row, const float *deq_row, const float *x,
                   uint64_t ne0);

#endif

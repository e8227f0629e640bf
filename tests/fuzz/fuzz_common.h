/*
 * fuzz_common.h — what the libFuzzer harnesses here share: their entry
 * points (fuzz_replay.c calls them the same way outside libFuzzer) and
 * FUZZ_REQUIRE, an invariant that must hold for every input: a trap,
 * which libFuzzer (and the replay under CTest) reports with the input.
 */
#ifndef SW_TESTS_FUZZ_COMMON_H
#define SW_TESTS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond)                                                    \
    do {                                                                      \
        if (!(cond))                                                          \
            __builtin_trap();                                                 \
    } while (0)

#endif

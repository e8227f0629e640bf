# gguf.cmake — tests of src/format/gguf*.c: valid files, hostile files, the
# real default model, the CLI on bad input, and the fuzz harness.
set(SW_GGUF_BUILD ${CMAKE_CURRENT_SOURCE_DIR}/gguf_build.c)

sw_add_c_test(test_gguf ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf.c ${SW_GGUF_BUILD})
sw_add_c_test(test_gguf_bad ${CMAKE_CURRENT_SOURCE_DIR}/test_gguf_bad.c ${SW_GGUF_BUILD})

# The real Gemma 3 270M (fails, saying to run `spillway fetch`, when absent).
add_test(NAME test_gguf_model COMMAND test_gguf --model)
set_tests_properties(test_gguf_model PROPERTIES LABELS "model")

# `spillway info -m BAD` must fail with one line on stderr and no signal.
add_test(NAME cli_bad_input
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_bad_input.sh $<TARGET_FILE:spillway_cli>)

# Seed corpus generator (tests/fuzz/corpus was written by it).
add_executable(gguf_make_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/make_corpus.c ${SW_GGUF_BUILD})
target_include_directories(gguf_make_corpus PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gguf_make_corpus PRIVATE spillway)

# The harness without libFuzzer: replays the corpus on every build.
add_executable(fuzz_gguf_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_gguf.c
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_replay.c)
target_include_directories(fuzz_gguf_replay PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(fuzz_gguf_replay PRIVATE spillway)
add_test(NAME fuzz_gguf_corpus
         COMMAND fuzz_gguf_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)

# libFuzzer target (tools/fuzz.sh). The reader's sources are compiled into
# it directly so they carry the fuzzer's coverage instrumentation; the rest
# of the library stays uninstrumented.
if(SPILLWAY_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SPILLWAY_FUZZ needs clang: configure with CC=clang")
  endif()
  add_executable(fuzz_gguf ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_gguf.c
                 ${CMAKE_SOURCE_DIR}/src/format/gguf.c
                 ${CMAKE_SOURCE_DIR}/src/format/gguf_parse.c
                 ${CMAKE_SOURCE_DIR}/src/quant/types.c
                 ${CMAKE_SOURCE_DIR}/src/util/error.c)
  target_include_directories(fuzz_gguf PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_gguf PRIVATE spillway)
endif()

# Gemma 4 files with one value patched (expert counts, KV sharing with no
# owner, per-layer tables of the wrong shape): refused by name.
add_executable(test_gemma4_bad ${CMAKE_CURRENT_SOURCE_DIR}/test_gemma4_bad.c
               ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_gemma4_bad PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_gemma4_bad PRIVATE spillway)
add_test(NAME test_gemma4_bad COMMAND test_gemma4_bad ${SW_TEST_DATA}/tiny)

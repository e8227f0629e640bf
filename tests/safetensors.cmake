# safetensors.cmake — tests of src/format/safetensors*.c: valid and hostile
# files built in memory, the tiny Hugging Face checkpoints against the
# reference table, and the fuzz harness (corpus replay; libFuzzer target).
set(SW_ST_BUILD ${CMAKE_CURRENT_SOURCE_DIR}/safetensors_build.c)

sw_add_c_test(test_safetensors ${CMAKE_CURRENT_SOURCE_DIR}/test_safetensors.c ${SW_ST_BUILD})

# Seed corpus generator (tests/fuzz/corpus_safetensors was written by it).
add_executable(st_make_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/make_corpus_safetensors.c
               ${SW_ST_BUILD})
target_include_directories(st_make_corpus PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})

# The harness without libFuzzer: replays the corpus on every build.
add_executable(fuzz_safetensors_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_safetensors.c
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_replay.c)
target_include_directories(fuzz_safetensors_replay PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(fuzz_safetensors_replay PRIVATE spillway)
add_test(NAME fuzz_safetensors_corpus
         COMMAND fuzz_safetensors_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_safetensors)

# libFuzzer target (tools/fuzz.sh). The reader's sources (and json_util)
# are compiled into it directly so they carry the fuzzer's coverage
# instrumentation; json-c and the rest of the library stay uninstrumented.
if(SPILLWAY_FUZZ)
  add_executable(fuzz_safetensors ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_safetensors.c
                 ${CMAKE_SOURCE_DIR}/src/format/safetensors.c
                 ${CMAKE_SOURCE_DIR}/src/format/safetensors_parse.c
                 ${CMAKE_SOURCE_DIR}/src/format/json_util.c
                 ${CMAKE_SOURCE_DIR}/src/util/error.c)
  target_include_directories(fuzz_safetensors PRIVATE ${CMAKE_SOURCE_DIR}/src
                             ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(fuzz_safetensors PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_safetensors PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_safetensors PRIVATE spillway)
endif()

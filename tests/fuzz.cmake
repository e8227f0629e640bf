# fuzz.cmake — the harnesses of the untrusted readers beyond the model files
# (tests/fuzz/; gguf.cmake and safetensors.cmake have the GGUF and
# safetensors ones):
#
#   fuzz_tokenizer_json  tokenizer.json (+ tokenizer_config.json, config.json)
#   fuzz_config_json     config.json of every Gemma generation → model_config
#   fuzz_codec           the encoder and decoder on arbitrary bytes (Gemma 3's
#                        real tokenizer.json, Gemma 4's tiny GGUF)
#   fuzz_serve_api       `spillway serve` request bodies, in-process
#
# Each is built twice: as NAME_replay, which replays its seed corpus
# (tests/fuzz/corpus_NAME, written by tests/fuzz/make_corpus_json.py; every
# finding is kept there) as a CTest test on every build, and with
# SPILLWAY_FUZZ as the libFuzzer target NAME that tools/fuzz.sh runs. The
# libFuzzer target compiles the sources under test into itself so that
# they carry the fuzzer's coverage instrumentation.

set(SW_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
# Where tokenizer_hf.cmake unpacks the real Gemma 3 tokenizer.json.
set(SW_FUZZ_GEMMA3_DIR ${CMAKE_CURRENT_BINARY_DIR}/hf_tokenizer/gemma3-270m)
find_program(SW_XZ xz)

# sw_fuzz_harness(NAME [SOURCES extra...] [INSTRUMENT sources...])
function(sw_fuzz_harness name)
  cmake_parse_arguments(F "" "" "SOURCES;INSTRUMENT" ${ARGN})
  set(defs SW_FUZZ_DATA_DIR="${SW_TEST_DATA}" SW_FUZZ_GEMMA3_DIR="${SW_FUZZ_GEMMA3_DIR}"
      SW_FUZZ_GEMMA4_FILE="${SW_TEST_DATA}/tiny/gemma4-ple.gguf")
  add_executable(${name}_replay ${SW_FUZZ_DIR}/${name}.c ${SW_FUZZ_DIR}/fuzz_replay.c
                 ${F_SOURCES})
  target_include_directories(${name}_replay PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(${name}_replay PRIVATE ${defs})
  target_link_libraries(${name}_replay PRIVATE spillway)
  string(REPLACE "fuzz_" "" corpus ${name})
  add_test(NAME ${name}_corpus COMMAND ${name}_replay ${SW_FUZZ_DIR}/corpus_${corpus})
  set_tests_properties(${name}_corpus PROPERTIES TIMEOUT 300)
  if(SPILLWAY_FUZZ)
    list(TRANSFORM F_INSTRUMENT PREPEND ${CMAKE_SOURCE_DIR}/src/)
    add_executable(${name} ${SW_FUZZ_DIR}/${name}.c ${F_SOURCES} ${F_INSTRUMENT})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src
                               ${CMAKE_SOURCE_DIR}/include)
    target_compile_definitions(${name} PRIVATE ${defs})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE spillway)
  endif()
endfunction()

set(SW_FUZZ_TOKENIZER tokenizer/hf_vocab.c tokenizer/hf_merges.c tokenizer/hf_pipeline.c
    tokenizer/vocab.c tokenizer/partition.c tokenizer/spm.c tokenizer/encode.c
    tokenizer/decode.c format/json_util.c)

sw_fuzz_harness(fuzz_tokenizer_json INSTRUMENT ${SW_FUZZ_TOKENIZER})
sw_fuzz_harness(fuzz_config_json
                INSTRUMENT format/hf_config.c format/hf_config_gemma4.c format/gguf_mem.c
                           model/config.c model/config_gemma4.c format/json_util.c)
sw_fuzz_harness(fuzz_codec
                INSTRUMENT tokenizer/vocab.c tokenizer/partition.c tokenizer/spm.c
                           tokenizer/encode.c tokenizer/decode.c)
sw_fuzz_harness(fuzz_serve_api
                SOURCES ${CMAKE_SOURCE_DIR}/src/serve/api.c ${CMAKE_SOURCE_DIR}/src/serve/logprobs.c
                        ${CMAKE_SOURCE_DIR}/src/serve/tool_prompt.c
                        ${CMAKE_SOURCE_DIR}/src/serve/tool_parse.c
                        ${CMAKE_SOURCE_DIR}/src/serve/tool_reply.c
                        ${CMAKE_SOURCE_DIR}/src/serve/response_format.c
                        ${CMAKE_SOURCE_DIR}/src/serve/gateway_metrics.c
                INSTRUMENT sched/chat.c tokenizer/partition.c tokenizer/spm.c
                           tokenizer/encode.c format/json_util.c util/utf8.c)

# fuzz_codec reads the unpacked Gemma 3 tokenizer.json (tokenizer_hf.cmake).
if(SW_XZ)
  add_dependencies(fuzz_codec_replay sw_hf_tokenizer_data)
  if(SPILLWAY_FUZZ)
    add_dependencies(fuzz_codec sw_hf_tokenizer_data)
  endif()
endif()

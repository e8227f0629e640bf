# tokenizer.cmake — the Gemma tokenizer (src/tokenizer/) and `spillway tokenize`.
#
# test_tokenizer         tiny hand-made vocabularies and GGUFs; no model needed.
# test_tokenizer_golden  the default model's vocabulary against llama.cpp's ids
#                        (tests/data/tokenizer_golden.bin); fails, with a hint
#                        to run `spillway fetch`, when the model is missing.
sw_add_c_test(test_tokenizer ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer.c
              ${CMAKE_CURRENT_SOURCE_DIR}/gguf_build.c)

sw_add_c_test(test_tokenizer_golden ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer_golden.c
              ${CMAKE_CURRENT_SOURCE_DIR}/tok_golden_reader.c)
set_tests_properties(test_tokenizer_golden PROPERTIES LABELS "model" TIMEOUT 300)

# The CLI on the default model: ids as JSON, and a clear error for a missing
# prompt file (exit status 3 = I/O).
add_test(NAME tokenize_cli_json
         COMMAND spillway_cli tokenize -p "Hello world" --json)
set_tests_properties(tokenize_cli_json PROPERTIES LABELS "model"
                     PASS_REGULAR_EXPRESSION "^\\[2,9259,1902\\]")
add_test(NAME tokenize_cli_missing_file
         COMMAND spillway_cli tokenize -f ${CMAKE_CURRENT_BINARY_DIR}/no-such-prompt.txt)
set_tests_properties(tokenize_cli_missing_file PROPERTIES WILL_FAIL TRUE)
add_test(NAME tokenize_cli_missing_file_message
         COMMAND spillway_cli tokenize -f ${CMAKE_CURRENT_BINARY_DIR}/no-such-prompt.txt)
set_tests_properties(tokenize_cli_missing_file_message PROPERTIES
                     PASS_REGULAR_EXPRESSION "cannot open prompt file .*no-such-prompt.txt")

# Gemma 4's vocabulary (BPE by merge rules) on the tiny GGUF against the
# ids transformers gives (tools/golden/make_gemma4_tokenizer_golden.py).
add_executable(test_tokenizer_gemma4 ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer_gemma4.c
               ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_tokenizer_gemma4 PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_tokenizer_gemma4 PRIVATE spillway)
add_test(NAME test_tokenizer_gemma4
         COMMAND test_tokenizer_gemma4 ${SW_TEST_DATA}/tiny/gemma4-ple.gguf
                 ${SW_TEST_DATA}/tokenizer/gemma4_tiny.json)
set_tests_properties(test_tokenizer_gemma4 PROPERTIES TIMEOUT 60)
add_test(NAME test_tokenizer_gemma4_hf
         COMMAND test_tokenizer_gemma4 ${SW_TEST_DATA}/tiny/gemma4-ple-hf
                 ${SW_TEST_DATA}/tokenizer/gemma4_tiny.json)
set_tests_properties(test_tokenizer_gemma4_hf PROPERTIES TIMEOUT 60)

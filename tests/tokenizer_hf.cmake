# tokenizer_hf.cmake — tokenizers read from Hugging Face tokenizer.json files
# (src/tokenizer/hf_*.c).
#
# test_tokenizer_hf        the tiny Gemma 1/2/3 folders against their GGUFs,
#                          and hand-made good and hostile tokenizer.json files;
#                          no model needed.
# test_tokenizer_hf_model  the default model's tokenizer.json (written by
#                          tools/golden/make_hf_tokenizers.py, committed
#                          xz-compressed: 33 MB raw) against llama.cpp's ids in
#                          tests/data/tokenizer_golden.bin and the GGUF's
#                          vocabulary; fails, saying to run `spillway fetch`,
#                          without the model. The build unpacks the file into
#                          the build folder with xz (xz-utils).
sw_add_c_test(test_tokenizer_hf ${CMAKE_CURRENT_SOURCE_DIR}/test_tokenizer_hf.c
              ${CMAKE_CURRENT_SOURCE_DIR}/tok_golden_reader.c)
set_tests_properties(test_tokenizer_hf PROPERTIES TIMEOUT 300)

set(SW_HF_TOK_SRC ${SW_TEST_DATA}/hf_tokenizer)
set(SW_HF_TOK_DIR ${CMAKE_CURRENT_BINARY_DIR}/hf_tokenizer/gemma3-270m)
find_program(SW_XZ xz)
if(SW_XZ)
  add_custom_command(
    OUTPUT ${SW_HF_TOK_DIR}/tokenizer.json ${SW_HF_TOK_DIR}/tokenizer_config.json
    COMMAND ${CMAKE_COMMAND} -E make_directory ${SW_HF_TOK_DIR}
    COMMAND ${CMAKE_COMMAND} -E copy ${SW_HF_TOK_SRC}/gemma3-270m-tokenizer.json.xz
            ${SW_HF_TOK_DIR}/tokenizer.json.xz
    COMMAND ${SW_XZ} -d -f ${SW_HF_TOK_DIR}/tokenizer.json.xz
    COMMAND ${CMAKE_COMMAND} -E copy ${SW_HF_TOK_SRC}/tokenizer_config.json
            ${SW_HF_TOK_DIR}/tokenizer_config.json
    DEPENDS ${SW_HF_TOK_SRC}/gemma3-270m-tokenizer.json.xz
            ${SW_HF_TOK_SRC}/tokenizer_config.json
    COMMENT "Unpacking the Gemma 3 270M tokenizer.json for test_tokenizer_hf_model"
    VERBATIM)
  add_custom_target(sw_hf_tokenizer_data ALL
                    DEPENDS ${SW_HF_TOK_DIR}/tokenizer.json ${SW_HF_TOK_DIR}/tokenizer_config.json)
else()
  message(WARNING "xz not found: test_tokenizer_hf_model will fail (install xz-utils)")
endif()

add_test(NAME test_tokenizer_hf_model COMMAND test_tokenizer_hf --model ${SW_HF_TOK_DIR})
set_tests_properties(test_tokenizer_hf_model PROPERTIES LABELS "model" TIMEOUT 600
                     ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")

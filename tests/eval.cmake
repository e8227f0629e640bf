# eval.cmake — perplexity and KL divergence (sw_perplexity, src/eval/):
# the figures against a computation in double on the tiny Gemma 3, its
# llama.cpp-format base files, the streamed sim plan, bad bases; the CLI
# on the default model; and, where llama.cpp's llama-perplexity has been
# built (../shared/peer), each tool reading the other's base.
sw_add_c_test(test_perplexity ${CMAKE_CURRENT_SOURCE_DIR}/test_perplexity.c
              ${CMAKE_CURRENT_SOURCE_DIR}/precision_util.c)
set_tests_properties(test_perplexity PROPERTIES TIMEOUT 300)

# The CLI: on the tiny Gemma 3 (F32, so --weights q8_0 is the run judged;
# also under the sanitizers) and on the default model (its own Q4_K_M with
# 8-bit activations against --cpu-dots f32).
add_test(NAME perplexity_cli_tiny
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perplexity_cli_test.sh
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf
                 ${CMAKE_SOURCE_DIR}/README.md 64 --weights q8_0)
set_tests_properties(perplexity_cli_tiny PROPERTIES TIMEOUT 120)
add_test(NAME perplexity_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perplexity_cli_test.sh
                 $<TARGET_FILE:spillway_cli> "" ${CMAKE_SOURCE_DIR}/README.md 128)
set_tests_properties(perplexity_cli PROPERTIES LABELS "model" TIMEOUT 300)
# Each tool reads the other's base; skipped (77) without a built peer.
add_test(NAME perplexity_peer
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perplexity_peer_test.sh
                 $<TARGET_FILE:spillway_cli> ${CMAKE_SOURCE_DIR}/README.md)
set_tests_properties(perplexity_peer PROPERTIES LABELS "model;slow" TIMEOUT 300
                     SKIP_RETURN_CODE 77)

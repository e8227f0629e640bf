# precision.cmake — the precision levers of issue 4: the f32 -> F16/BF16/
# Q8_0 quantizers against the gguf package (byte-exact) and the Q4_K round
# trip; --kv-type f16/bf16 and --weights bf16/f16/q8_0 on the tiny models
# (near the transformers golden, bit-identical across plans on the sim,
# the plan's byte accounting) and on the default model (label "model");
# the CLI flags and the planner's --kv-type/--weights suggestions.
sw_add_c_test(test_quantize ${CMAKE_CURRENT_SOURCE_DIR}/test_quantize.c)

# Tiny models: levers against the golden, plan sweeps on the sim (seconds).
sw_add_c_test(test_precision ${CMAKE_CURRENT_SOURCE_DIR}/test_precision.c
              ${CMAKE_CURRENT_SOURCE_DIR}/precision_util.c ${CMAKE_CURRENT_SOURCE_DIR}/golden.c)
set_tests_properties(test_precision PROPERTIES TIMEOUT 300)

# The default model (needs `spillway fetch`): KV types against f32 KV and
# the golden, f16-KV plans bit-identical on the sim, --weights on a
# quantized file.
sw_add_c_test(test_precision_model ${CMAKE_CURRENT_SOURCE_DIR}/test_precision_model.c
              ${CMAKE_CURRENT_SOURCE_DIR}/precision_util.c ${CMAKE_CURRENT_SOURCE_DIR}/golden.c)
# ~10 s of CPU, but minutes under the sanitizers: "slow" keeps it out of
# that stage (test_precision covers the same code on the tiny models).
set_tests_properties(test_precision_model PROPERTIES LABELS "model;slow" TIMEOUT 600)

# The flags end to end, and the planner's precision suggestions run as given.
add_test(NAME precision_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/precision_cli_test.sh
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf
                 ${SW_TEST_DATA}/tiny/gemma4-moe.gguf)
set_tests_properties(precision_cli PROPERTIES TIMEOUT 120)

# Tests of src/quant: golden dequantization (always) and every tensor of the
# default model against gguf's digests (needs the model: `spillway fetch`).
sw_add_c_test(test_quant ${CMAKE_CURRENT_SOURCE_DIR}/test_quant.c)
sw_add_c_test(test_model_dequant ${CMAKE_CURRENT_SOURCE_DIR}/test_model_dequant.c)
set_tests_properties(test_model_dequant PROPERTIES LABELS "model;slow" TIMEOUT 600)

# hf_model.cmake — Hugging Face folders: tiny transformers checkpoints
# against their GGUF twins and against transformers' golden logits.
sw_add_c_test(test_hf_model ${CMAKE_CURRENT_SOURCE_DIR}/test_hf_model.c)
foreach(arch gemma1 gemma2 gemma3 gemma4-ple gemma4-kv gemma4-moe)
  add_test(NAME forward_${arch}_hf
           COMMAND test_forward_golden ${SW_TEST_DATA}/golden/${arch}.swgold
                   ${SW_TEST_DATA}/tiny/${arch}-hf 7)
endforeach()
# The same weights as transformers writes them sharded (gemma2) and inside
# the multimodal Gemma 3 class (text model under model.language_model.).
add_test(NAME forward_gemma2_hf_sharded
         COMMAND test_forward_golden ${SW_TEST_DATA}/golden/gemma2.swgold
                 ${SW_TEST_DATA}/tiny/gemma2-hf-sharded 7)
add_test(NAME forward_gemma3_mm_hf
         COMMAND test_forward_golden ${SW_TEST_DATA}/golden/gemma3.swgold
                 ${SW_TEST_DATA}/tiny/gemma3-mm-hf 7)

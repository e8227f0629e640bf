# forward.cmake — the CPU forward pass against transformers' golden outputs:
# tiny random Gemma 1/2/3/4 models (committed) and the real default model
# (Gemma 4: per-layer inputs with KV sharing; keys as values with
# proportional RoPE; experts beside the dense MLP).
# N_BATCH (last argument) is chosen smaller than the prompts and, for the
# sliding-window models, so chunks straddle the window (ring indexing).
add_executable(test_forward_golden ${CMAKE_CURRENT_SOURCE_DIR}/test_forward_golden.c
               ${CMAKE_CURRENT_SOURCE_DIR}/golden.c ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_forward_golden PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_forward_golden PRIVATE spillway)
foreach(arch gemma1 gemma2 gemma3 gemma4-ple gemma4-kv gemma4-moe)
  add_test(NAME forward_${arch}
           COMMAND test_forward_golden ${SW_TEST_DATA}/golden/${arch}.swgold
                   ${SW_TEST_DATA}/tiny/${arch}.gguf 7)
endforeach()
if(EXISTS ${SW_TEST_DATA}/golden/gemma3-270m-q4km.swgold)
  add_test(NAME forward_gemma3_270m
           COMMAND test_forward_golden ${SW_TEST_DATA}/golden/gemma3-270m-q4km.swgold
                   --default-model 32)
  set_tests_properties(forward_gemma3_270m PROPERTIES LABELS "model;slow" TIMEOUT 900)
endif()

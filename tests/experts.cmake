# experts.cmake — issue 38's expert cache model and routing trace:
# test_expert_sim holds the policies (LRU, LFU-decay) to hand-worked
# sequences; expert_trace_cli writes a trace on the tiny Gemma 4 MoE (the
# same on cpu and sim) and replays it with `spillway bench --expert-trace`;
# test_expert_cache and expert_cache_cli hold the cache in the engine.
sw_add_c_test(test_expert_sim ${CMAKE_CURRENT_SOURCE_DIR}/test_expert_sim.c)
add_test(NAME expert_trace_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/expert_trace_test.sh
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA})
set_tests_properties(expert_trace_cli PROPERTIES TIMEOUT 300)
# The cache in the engine (issue 38 items 1, 2, 5): every cache size,
# policy and miss rule on the sim gives the cpu backend's bits on the tiny
# MoE; the report's counters add up; the plan shows the cache.
add_executable(test_expert_cache ${CMAKE_CURRENT_SOURCE_DIR}/test_expert_cache.c
               ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_expert_cache PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_expert_cache PRIVATE spillway)
add_test(NAME test_expert_cache COMMAND test_expert_cache ${SW_TEST_DATA}/tiny/gemma4-moe.gguf)
set_tests_properties(test_expert_cache PROPERTIES TIMEOUT 300)
add_test(NAME expert_cache_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/expert_cache_test.sh
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA})
set_tests_properties(expert_cache_cli PROPERTIES TIMEOUT 300)
if(SW_HAVE_CUDA)
  # the cache on a GPU (the device check; skipped without a device)
  add_test(NAME cuda_expert_cache
           COMMAND test_expert_cache ${SW_TEST_DATA}/tiny/gemma4-moe.gguf --cuda)
  set_tests_properties(cuda_expert_cache PROPERTIES LABELS "cuda" SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endif()

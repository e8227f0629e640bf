# experts.cmake — issue 38's expert cache model and routing trace:
# test_expert_sim holds the policies (LRU, LFU-decay) to hand-worked
# sequences; expert_trace_cli writes a trace on the tiny Gemma 4 MoE (the
# same on cpu and sim) and replays it with `spillway bench --expert-trace`.
sw_add_c_test(test_expert_sim ${CMAKE_CURRENT_SOURCE_DIR}/test_expert_sim.c)
add_test(NAME expert_trace_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/expert_trace_test.sh
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA})
set_tests_properties(expert_trace_cli PROPERTIES TIMEOUT 300)

# plan_exec.cmake — plan-exact execution on the simulated device (default
# model): budget sweep with bit-identical logits, fault injection.
sw_add_c_test(test_plan_exec ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_exec.c)
set_tests_properties(test_plan_exec PROPERTIES LABELS "model" TIMEOUT 900)
sw_add_c_test(test_sim_timing ${CMAKE_CURRENT_SOURCE_DIR}/test_sim_timing.c)
set_tests_properties(test_sim_timing PROPERTIES LABELS "model;slow" TIMEOUT 300 RUN_SERIAL TRUE)

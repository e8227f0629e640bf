# plan_exec.cmake — plan-exact execution on the simulated device (default
# model): budget sweep with bit-identical logits, fault injection.
sw_add_c_test(test_plan_exec ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_exec.c)
set_tests_properties(test_plan_exec PROPERTIES LABELS "model" TIMEOUT 900)
# A split over 2-4 simulated devices against the cpu backend (issue 39).
sw_add_c_test(test_split_exec ${CMAKE_CURRENT_SOURCE_DIR}/test_split_exec.c)
set_tests_properties(test_split_exec PROPERTIES LABELS "model" TIMEOUT 600)
# The same through the public API alone (tiny Gemma 3; seconds).
sw_add_c_test(test_split_api ${CMAKE_CURRENT_SOURCE_DIR}/test_split_api.c)
if(SW_HAVE_PJRT) # several of XLA's CPU devices against one (release stage only)
  add_test(NAME split_exec_pjrt COMMAND test_split_exec pjrt)
  set_tests_properties(split_exec_pjrt PROPERTIES LABELS "model;pjrt;slow" TIMEOUT 900
                       ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")
endif()
sw_add_c_test(test_sim_timing ${CMAKE_CURRENT_SOURCE_DIR}/test_sim_timing.c)
set_tests_properties(test_sim_timing PROPERTIES LABELS "model;slow" TIMEOUT 300 RUN_SERIAL TRUE)
add_executable(test_plan_identity ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_identity.c
               ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_plan_identity PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_plan_identity PRIVATE spillway)
# Every plan on the sim, and batches of sessions, bit-identical to the cpu
# backend: tiny Gemma 1/2/3/4 (seconds; Gemma 4's per-layer inputs on the
# host or the device, KV-shared layers beside their caches' owners), and
# the default model (label slow).
foreach(arch gemma1 gemma2 gemma3 gemma4-ple gemma4-kv gemma4-moe)
  add_test(NAME plan_identity_${arch}
           COMMAND test_plan_identity ${SW_TEST_DATA}/tiny/${arch}.gguf)
  set_tests_properties(plan_identity_${arch} PROPERTIES TIMEOUT 300)
endforeach()
add_test(NAME plan_identity_default_model COMMAND test_plan_identity --default-model)
set_tests_properties(plan_identity_default_model PROPERTIES LABELS "model;slow" TIMEOUT 900)
# The ring on an asynchronous device: the old refill logic is caught by the
# sim's race check, the new passes bit-identically; failed passes recover.
sw_add_c_test(test_ring_race ${CMAKE_CURRENT_SOURCE_DIR}/test_ring_race.c)
set_tests_properties(test_ring_race PROPERTIES TIMEOUT 300)

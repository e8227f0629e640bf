# plan.cmake — the planner: parsers, catalog sizes, plan invariants over
# budget sweeps (tests/test_plan*.c), and `spillway plan --json` compared
# byte for byte with the reviewed snapshots in tests/data/plan/ (regenerate
# with tools/golden/make_plan_golden.sh after a deliberate planner change).
add_executable(test_plan ${CMAKE_CURRENT_SOURCE_DIR}/test_plan.c
               ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_build.c ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_plan PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_plan PRIVATE spillway)
add_test(NAME test_plan COMMAND test_plan)
set_tests_properties(test_plan PROPERTIES ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}" TIMEOUT 120)

# Catalog models need no file; the default-model snapshots need `spillway fetch`.
add_test(NAME plan_golden_catalog
         COMMAND bash ${CMAKE_SOURCE_DIR}/tools/golden/make_plan_golden.sh --check catalog
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/plan)
set_tests_properties(plan_golden_catalog PROPERTIES TIMEOUT 120)
add_test(NAME plan_golden_model
         COMMAND bash ${CMAKE_SOURCE_DIR}/tools/golden/make_plan_golden.sh --check model
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/plan)
set_tests_properties(plan_golden_model PROPERTIES TIMEOUT 120 LABELS "model" SKIP_RETURN_CODE 77)
add_test(NAME plan_cli_exit_codes
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/plan_cli_test.sh $<TARGET_FILE:spillway_cli>)
set_tests_properties(plan_cli_exit_codes PROPERTIES TIMEOUT 120)
# Gemma 4's per-layer shapes, KV sharing, per-layer embeddings and experts
# in the config and the planner (catalog models: no file).
add_executable(test_plan_gemma4 ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_gemma4.c
               ${CMAKE_CURRENT_SOURCE_DIR}/check.c)
target_include_directories(test_plan_gemma4 PRIVATE ${CMAKE_SOURCE_DIR}/src
                           ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_plan_gemma4 PRIVATE spillway)
add_test(NAME test_plan_gemma4 COMMAND test_plan_gemma4)
set_tests_properties(test_plan_gemma4 PROPERTIES TIMEOUT 60)
# One plan over several devices (plan/split.h) on catalog models.
sw_add_c_test(test_plan_split ${CMAKE_CURRENT_SOURCE_DIR}/test_plan_split.c)
# The cost model of speculative decoding (plan/spec.c) on catalog plans.
sw_add_c_test(test_spec_cost ${CMAKE_CURRENT_SOURCE_DIR}/test_spec_cost.c)

# cli.cmake — end-to-end checks of the `spillway` program on the default
# model (needs `spillway fetch` first, as the README's test command does).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME info_matches_gguf
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/info_test.py
                 $<TARGET_FILE:spillway_cli>)
set_tests_properties(info_matches_gguf PROPERTIES LABELS "model" TIMEOUT 120)
add_test(NAME cli_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_run_test.sh
                              $<TARGET_FILE:spillway_cli>)
set_tests_properties(cli_run PROPERTIES LABELS "model;slow" TIMEOUT 600)
# verify: a 40 MiB simulated device (layers split between device and host)
# must agree with the all-host plan on its four prompts.
add_test(NAME cli_verify_sim
         COMMAND $<TARGET_FILE:spillway_cli> verify --backend sim --device-mem 40M -t 2)
set_tests_properties(cli_verify_sim PROPERTIES LABELS "model;slow" TIMEOUT 600
                     PASS_REGULAR_EXPRESSION "verify: outputs agree")
# `spillway plan` and `spillway run` with the same flags: the same plan.
add_test(NAME plan_run_same_plan
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/plan_run_test.sh $<TARGET_FILE:spillway_cli>)
set_tests_properties(plan_run_same_plan PROPERTIES LABELS "model" TIMEOUT 300)
# `spillway batch`: greedy texts equal `spillway run`'s for every -np and plan,
# input order, bad lines skipped: the tiny Gemma 3 (quick, also under the
# sanitizers) and the default model (label slow).
add_test(NAME batch_cli_tiny
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/batch_cli_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(batch_cli_tiny PROPERTIES TIMEOUT 300)
add_test(NAME batch_cli
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/batch_cli_test.py
                 $<TARGET_FILE:spillway_cli>)
set_tests_properties(batch_cli PROPERTIES LABELS "model;slow" TIMEOUT 900)

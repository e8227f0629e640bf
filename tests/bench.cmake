# bench.cmake — `spillway bench`: its JSON (llama-bench's figures and the
# decode bound) on the default model, and its usage errors.
add_test(NAME bench_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench_cli_test.sh $<TARGET_FILE:spillway_cli>)
set_tests_properties(bench_cli PROPERTIES LABELS "model" TIMEOUT 300)

# The f32 path's decode rows (qdot.h's cpu_qrows_fn) against its per-row
# dot and the portable reference, on every kernel set the CPU runs.
sw_add_c_test(test_qrows ${CMAKE_CURRENT_SOURCE_DIR}/test_qrows.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_qrows PROPERTIES LABELS "cpu" TIMEOUT 60)

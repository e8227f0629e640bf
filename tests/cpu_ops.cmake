# Tests of src/backend/cpu: kernels against double references, bitwise
# determinism (threads, batch, ISA), attention masks and the thread pool.
sw_add_c_test(test_cpu_ops ${CMAKE_CURRENT_SOURCE_DIR}/test_cpu_ops.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_cpu_ops PROPERTIES LABELS "cpu" TIMEOUT 300)
sw_add_c_test(test_idot ${CMAKE_CURRENT_SOURCE_DIR}/test_idot.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_idot PROPERTIES LABELS "cpu" TIMEOUT 120)
sw_add_c_test(test_vmath ${CMAKE_CURRENT_SOURCE_DIR}/test_vmath.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_vmath PROPERTIES LABELS "cpu" TIMEOUT 60)
sw_add_c_test(test_bdot ${CMAKE_CURRENT_SOURCE_DIR}/test_bdot.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_bdot PROPERTIES LABELS "cpu" TIMEOUT 60)
sw_add_c_test(test_mm_again ${CMAKE_CURRENT_SOURCE_DIR}/test_mm_again.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_mm_again PROPERTIES LABELS "cpu" TIMEOUT 60)
sw_add_c_test(test_moe ${CMAKE_CURRENT_SOURCE_DIR}/test_moe.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_moe PROPERTIES LABELS "cpu" TIMEOUT 60)
sw_add_c_test(test_attn_block ${CMAKE_CURRENT_SOURCE_DIR}/test_attn_block.c)
set_tests_properties(test_attn_block PROPERTIES LABELS "cpu" TIMEOUT 120)

# Tests of src/backend/cpu: kernels against double references, bitwise
# determinism (threads, batch, ISA), attention masks and the thread pool.
sw_add_c_test(test_cpu_ops ${CMAKE_CURRENT_SOURCE_DIR}/test_cpu_ops.c)
set_tests_properties(test_cpu_ops PROPERTIES LABELS "cpu" TIMEOUT 300)

# backend.cmake — the backend interface on the cpu and sim backends: op and
# block conformance against the CPU kernels, sim memory accounting, OOM and
# fault injection (test_backend); the sim's queues, events, pacing, overlap
# and race check (test_sim_queues).
set(SW_BACKEND_UTIL ${CMAKE_CURRENT_SOURCE_DIR}/backend_util.c)
sw_add_c_test(test_backend ${CMAKE_CURRENT_SOURCE_DIR}/test_backend.c ${SW_BACKEND_UTIL}
              ${CMAKE_CURRENT_SOURCE_DIR}/backend_cases.c)
set_tests_properties(test_backend PROPERTIES LABELS "backend" TIMEOUT 120)
sw_add_c_test(test_sim_queues ${CMAKE_CURRENT_SOURCE_DIR}/test_sim_queues.c ${SW_BACKEND_UTIL})
set_tests_properties(test_sim_queues PROPERTIES LABELS "backend" TIMEOUT 180)
# The one description of a block's memory (backend/operands.c) against the
# ops block_run_ops submits, for every Gemma 1-4 layer shape and phase.
sw_add_c_test(test_block_operands ${CMAKE_CURRENT_SOURCE_DIR}/test_block_operands.c)
set_tests_properties(test_block_operands PROPERTIES LABELS "backend")

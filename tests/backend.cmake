# backend.cmake — the backend interface on the cpu and sim backends: op
# conformance against the CPU kernels, sim memory accounting, OOM and fault
# injection, copy order, events, link throttling and copy/compute overlap.
sw_add_c_test(test_backend ${CMAKE_CURRENT_SOURCE_DIR}/test_backend.c)
set_tests_properties(test_backend PROPERTIES LABELS "backend" TIMEOUT 120)

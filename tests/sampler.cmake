# Tests of src/engine/sampler.c: argument checks, greedy, the seeded
# generator, the top-k / top-p / min-p filters and the sampled distribution
# (chi-square against softmax at a fixed seed). Takes about a second.
sw_add_c_test(test_sampler ${CMAKE_CURRENT_SOURCE_DIR}/test_sampler.c)
set_tests_properties(test_sampler PROPERTIES TIMEOUT 60)

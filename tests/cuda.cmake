# cuda.cmake — the CUDA backend. test_cuda_math runs in every build: the
# kernels' per-element math (backend/cuda/{hd,qblock,kmath}.h) compiled by
# the host compiler against the portable reference. test_cuda needs a GPU:
# built with the backend, it reports "skipped" (exit 77) where no device is
# visible, and runs under the label "cuda" (bench/device_check.sh runs it).
sw_add_c_test(test_cuda_math ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda_math.c
              ${CMAKE_CURRENT_SOURCE_DIR}/backend_util.c)
set_tests_properties(test_cuda_math PROPERTIES LABELS "cuda;cpu" TIMEOUT 120)
# the decode path's integer dots (backend/cuda/q8dot.h) against the cpu's
sw_add_c_test(test_cuda_q8 ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda_q8.c
              ${CMAKE_CURRENT_SOURCE_DIR}/cpu_test_util.c)
set_tests_properties(test_cuda_q8 PROPERTIES LABELS "cuda;cpu" TIMEOUT 120)
if(SW_HAVE_CUDA)
  sw_add_c_test(test_cuda_ops ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda_ops.c
                ${CMAKE_CURRENT_SOURCE_DIR}/backend_util.c ${CMAKE_CURRENT_SOURCE_DIR}/backend_cases.c)
  set_tests_properties(test_cuda_ops PROPERTIES LABELS "cuda" SKIP_RETURN_CODE 77 TIMEOUT 300)
  add_executable(test_cuda ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/check.c ${CMAKE_CURRENT_SOURCE_DIR}/golden.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/model_compare.c)
  target_include_directories(test_cuda PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_cuda PRIVATE spillway)
  # Gemma 4's tiny models: per-op blocks, partial RoPE, the experts' kernels
  foreach(arch gemma1 gemma2 gemma3 gemma4-ple gemma4-kv gemma4-moe)
    add_test(NAME cuda_${arch}
             COMMAND test_cuda ${SW_TEST_DATA}/golden/${arch}.swgold
                     ${SW_TEST_DATA}/tiny/${arch}.gguf)
    set_tests_properties(cuda_${arch} PROPERTIES LABELS "cuda" SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
  add_test(NAME cuda_default_model
           COMMAND test_cuda ${SW_TEST_DATA}/golden/gemma3-270m-q4km.swgold --default-model)
  set_tests_properties(cuda_default_model PROPERTIES LABELS "cuda;model;slow"
                       SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()

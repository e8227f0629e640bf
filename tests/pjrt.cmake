# pjrt.cmake — the PJRT backend on XLA's CPU plugin against the cpu backend:
# teacher-forced argmax and logits on the golden prompts, and resident,
# streamed, mixed and per-op plans giving one greedy continuation (tiny
# Gemma 1/2/3 in seconds; the default model is labelled slow). Built only
# when the PJRT backend is (cmake/pjrt.cmake found pjrt_c_api.h); the
# plugin comes from `spillway fetch pjrt-cpu`.
if(SW_HAVE_PJRT)
  add_executable(test_pjrt ${CMAKE_CURRENT_SOURCE_DIR}/test_pjrt.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/check.c ${CMAKE_CURRENT_SOURCE_DIR}/golden.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/model_compare.c)
  target_include_directories(test_pjrt PRIVATE ${CMAKE_SOURCE_DIR}/src
                             ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(test_pjrt PRIVATE spillway)
  foreach(arch gemma1 gemma2 gemma3)
    add_test(NAME pjrt_${arch}
             COMMAND test_pjrt ${SW_TEST_DATA}/golden/${arch}.swgold
                     ${SW_TEST_DATA}/tiny/${arch}.gguf)
    # gemma3 (sliding window, ring, qk-norm) also runs under the sanitizers;
    # gemma1/2 only in the release stage (label slow), to keep that stage short.
    if(arch STREQUAL "gemma3")
      set_tests_properties(pjrt_${arch} PROPERTIES LABELS "pjrt" TIMEOUT 600)
    else()
      set_tests_properties(pjrt_${arch} PROPERTIES LABELS "pjrt;slow" TIMEOUT 600)
    endif()
  endforeach()
  # Gemma 4's tiny models through block programs and per-op ones (value
  # norm, partial RoPE, KV sharing, per-layer inputs, experts, and blocks
  # split around experts the host computes). They are 5-10x more sensitive to
  # rounding than the tiny Gemma 3 (the cpu backend's f32 vs transformers:
  # 8e-6 / 1.7e-5 of the row's max |logit| against Gemma 3's 1.6e-6; its q8
  # path 8.1e-3 against 1.4e-3), and XLA's CPU math deviates from ours in
  # proportion (Gemma 3: 2.1e-4; ple, kv, moe: 1.25e-3, 5.5e-4, 1.80e-3
  # measured): the limit scales with them, argmax agreement stays exact.
  # All three run in the release stage only (label slow), as gemma1/2: each
  # takes 3-4 minutes under ASan (moe 4.2, the sanitizer stage's longest
  # test), mostly in XLA's compiler, and the suite must stay under 30
  # minutes on a slow CI machine; under the sanitizers pjrt_gemma3 and
  # pjrt_report_json keep the backend's own code (blocks, transfers,
  # buffers) covered, though not the split blocks of the experts' programs.
  foreach(m gemma4-ple gemma4-kv gemma4-moe)
    add_test(NAME pjrt_${m}
             COMMAND test_pjrt ${SW_TEST_DATA}/golden/${m}.swgold
                     ${SW_TEST_DATA}/tiny/${m}.gguf 4e-3)
    set_tests_properties(pjrt_${m} PROPERTIES LABELS "pjrt;slow" TIMEOUT 600)
  endforeach()
  add_test(NAME pjrt_default_model
           COMMAND test_pjrt ${SW_TEST_DATA}/golden/gemma3-270m-q4km.swgold --default-model)
  set_tests_properties(pjrt_default_model PROPERTIES LABELS "pjrt;model;slow" TIMEOUT 1200)
  # A streamed plan's --report-json on PJRT: bytes moved, copy time hidden
  # and stalled, device peak within the plan (default model).
  add_test(NAME pjrt_report_json
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pjrt_report_test.sh
                   $<TARGET_FILE:spillway_cli>)
  set_tests_properties(pjrt_report_json PROPERTIES LABELS "pjrt;model" TIMEOUT 600)
  # batch --replicas 2 over the plugin's devices (replica i on device i):
  # run's greedy texts (tiny Gemma 3; release stage only).
  add_test(NAME replicas_pjrt
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/replicas_pjrt_test.sh
                   $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
  set_tests_properties(replicas_pjrt PROPERTIES LABELS "pjrt;slow" TIMEOUT 600)
endif()

# spec.cmake — speculative decoding (issue 36) held exact.
# test_spec: n-gram drafts and greedy verification as units, rejection
# sampling's output distribution on synthetic rows, and through the
# scheduler on the tiny Gemma 3 (n-gram drafts; the tiny Gemma 2 as draft
# model) the sampled tokens of 2,000 seeds distributed as without drafts
# (about 30 s on two cores; under the sanitizers 500 seeds, about 35 s).
sw_add_c_test(test_spec ${CMAKE_CURRENT_SOURCE_DIR}/test_spec.c)
set_tests_properties(test_spec PROPERTIES TIMEOUT 600)
# `spillway run` with drafts: greedy output byte-identical to the output
# without. Tiny models (every architecture, sliding windows, shared KV, on
# cpu, sim and streamed sim) take ~50 s, ~3 min under the sanitizers, where
# test_spec already runs the same library paths: release stage only (label
# slow); the refused flags are quick and run in both. The default model
# runs per backend (label slow).
add_test(NAME spec_cli_tiny
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/spec_cli_test.sh tiny
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA})
set_tests_properties(spec_cli_tiny PROPERTIES LABELS "slow" TIMEOUT 900)
add_test(NAME spec_cli_refuse
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/spec_cli_test.sh refuse
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA})
set_tests_properties(spec_cli_refuse PROPERTIES TIMEOUT 120)
foreach(backend cpu sim streamed)
  add_test(NAME spec_cli_${backend}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/spec_cli_test.sh default
                   $<TARGET_FILE:spillway_cli> ${backend})
  set_tests_properties(spec_cli_${backend} PROPERTIES LABELS "model;slow" TIMEOUT 1800
                       ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")
endforeach()
if(SW_HAVE_PJRT)
  add_test(NAME spec_cli_pjrt
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/spec_cli_test.sh default
                   $<TARGET_FILE:spillway_cli> pjrt)
  set_tests_properties(spec_cli_pjrt PROPERTIES LABELS "pjrt;model;slow" TIMEOUT 1800
                       ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")
endif()
# test_assist: a Gemma 4 assistant (MTP drafter) on the tiny pairs of
# tools/golden/make_tiny_assistant.py: its logits against transformers'
# on the target's states, and assisted greedy generation (output, verify
# rounds and drafts accepted as transformers') on cpu and the simulated
# device (resident and streamed), and (test_assist_pjrt) on XLA's CPU
# plugin; refusals of mismatched pairs.
sw_add_c_test(test_assist ${CMAKE_CURRENT_SOURCE_DIR}/test_assist.c
              ${CMAKE_CURRENT_SOURCE_DIR}/golden.c)
set_tests_properties(test_assist PROPERTIES TIMEOUT 300)
if(SW_HAVE_PJRT)
  add_test(NAME test_assist_pjrt COMMAND test_assist pjrt)
  set_tests_properties(test_assist_pjrt PROPERTIES LABELS "pjrt" TIMEOUT 600
                       ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")
endif()
# test_logprobs: a request's logprobs equal perplexity's per-token NLL of the
# same sequence, with the alternatives in order, the same with drafts.
sw_add_c_test(test_logprobs ${CMAKE_CURRENT_SOURCE_DIR}/test_logprobs.c)

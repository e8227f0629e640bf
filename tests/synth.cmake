# synth.cmake — `spillway synth`: its parts (generator, vocabulary, GGUF and
# safetensors writers, errors), whole synthetic models of every architecture
# and type read back and run, and the command line's exit statuses.
sw_add_c_test(test_synth ${CMAKE_CURRENT_SOURCE_DIR}/test_synth.c)
set_tests_properties(test_synth PROPERTIES LABELS "synth" TIMEOUT 120)
sw_add_c_test(test_synth_models ${CMAKE_CURRENT_SOURCE_DIR}/test_synth_models.c)
set_tests_properties(test_synth_models PROPERTIES LABELS "synth" TIMEOUT 300)
add_test(NAME synth_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_synth.sh $<TARGET_FILE:spillway_cli>)
set_tests_properties(synth_cli PROPERTIES LABELS "synth" TIMEOUT 120)

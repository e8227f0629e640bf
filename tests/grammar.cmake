# Structured output (src/grammar, include/spillway_grammar.h): JSON schemas
# compiled to grammars, the matcher byte by byte over a suite of schemas,
# refusals naming the unsupported keyword, token masks equal to brute force
# on the tiny Gemma 3's vocabulary, and scheduler requests that end
# complete. A few seconds; the server's end-to-end test (the real `openai`
# client, outputs validated against their schemas) is serve_json_schema.
sw_add_c_test(test_grammar ${CMAKE_CURRENT_SOURCE_DIR}/test_grammar.c)
set_tests_properties(test_grammar PROPERTIES TIMEOUT 120)
# `spillway serve` with response_format through the real `openai` client:
# json_schema (five agent-like schemas, greedy and sampled, streamed, on
# /v1/completions too, the client's pydantic parse()) and json_object; every
# output parses and validates; unsupported keywords are 400s naming them.
# The tiny Gemma 3 (quick; bounded strings) and the default model (slow).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME serve_json_schema_tiny
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/serve_json_schema_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(serve_json_schema_tiny PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
add_test(NAME serve_json_schema
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/serve_json_schema_test.py
                 $<TARGET_FILE:spillway_cli> default)
set_tests_properties(serve_json_schema PROPERTIES LABELS "model;slow" TIMEOUT 600
                     SKIP_RETURN_CODE 77)
# `spillway run` and `chat` with --json-schema FILE on the tiny Gemma 3:
# outputs parse and keep the schema's keys and bounds; an unsupported
# keyword exits 2 naming it; commands without the flag refuse it.
add_test(NAME cli_json_schema_tiny
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli_json_schema_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(cli_json_schema_tiny PROPERTIES TIMEOUT 300)

# tools.cmake — Gemma 4 tool calls in `spillway serve` (src/serve/tools.h):
#   test_tools         the parser (every split of its inputs), the stream's
#                      deltas against the whole reply, the prompt writer's
#                      markup and 400s on the tiny Gemma 3 and 4 models
#   serve_tools_tiny   over HTTP and through the real `openai` client on the
#                      tiny Gemma 4: tools accepted, a forced call round-trips
#                      streamed and not, "tool" messages fed back; Gemma 3's 400
# The server's JSON side (api.c and what it calls): src/serve without the
# HTTP files (libmicrohttpd) and the web page.
file(GLOB SW_TOOLS_SERVE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/serve/*.c)
list(FILTER SW_TOOLS_SERVE_SOURCES EXCLUDE REGEX "/(http|listen|webui)\\.c$")
sw_add_c_test(test_tools test_tools.c ${SW_TOOLS_SERVE_SOURCES})
add_test(NAME serve_tools_tiny
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/serve_tools_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma4-kv.gguf
                 ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(serve_tools_tiny PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

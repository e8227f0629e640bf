# cli.cmake — end-to-end checks of the `spillway` program on the default
# model (needs `spillway fetch` first, as the README's test command does).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME info_matches_gguf
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/info_test.py
                 $<TARGET_FILE:spillway_cli>)
set_tests_properties(info_matches_gguf PROPERTIES LABELS "model" TIMEOUT 120)

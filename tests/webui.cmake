# Issue 41: serve's web page (src/serve/webui/, built into the binary).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# Over plain HTTP: "/" and its files with their Content-Types, ETag (304),
# Cache-Control and a CSP, no key needed for the page; GET /v1/plan equal to
# `plan --json` for the same flags; --no-webui gives 404 (sanitizers too).
add_test(NAME webui_http
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/webui_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf)
set_tests_properties(webui_http PROPERTIES TIMEOUT 120)
# In headless Chromium through Selenium: the key asked for, the plan's bars
# against `plan --json` (count, places, colours), a chat streamed in and
# stopped, live counters; writes webui.png here. Skipped (77, with the
# reason) without chromium, chromium-driver or selenium, unless
# SW_TEST_REQUIRE_BROWSER is set (.ci/run). "slow": the release stage runs
# it; the sanitizers see the same C through webui_http.
add_test(NAME webui_browser
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/webui_browser_test.py
                 $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(webui_browser PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                     LABELS "browser;slow")

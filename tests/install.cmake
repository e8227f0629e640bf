# install.cmake — the installed library and its two ways in (pkg-config,
# find_package), used by examples/generate.c as an outside program would.
add_test(NAME install_pkgconfig
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${CMAKE_BINARY_DIR}
                 ${CMAKE_SOURCE_DIR} $<TARGET_FILE:spillway_cli> ${SW_TEST_DATA}/tiny/gemma3.gguf
                 $<$<BOOL:${SPILLWAY_SANITIZE}>:--sanitize>)
set_tests_properties(install_pkgconfig PROPERTIES LABELS "install" TIMEOUT 300)
sw_add_c_test(test_public_api ${CMAKE_CURRENT_SOURCE_DIR}/test_public_api.c)
set_tests_properties(test_public_api PROPERTIES LABELS "install" TIMEOUT 60)
# The library's scheduler and chat template through the public header, on
# the tiny Gemma 3 (and Gemma 4's markup): texts equal one session alone.
sw_add_c_test(test_scheduler ${CMAKE_CURRENT_SOURCE_DIR}/test_scheduler.c)
set_tests_properties(test_scheduler PROPERTIES LABELS "install" TIMEOUT 120)

# fetch.cmake — tests for SHA-256 and `spillway fetch`.
sw_add_c_test(test_sha256 ${CMAKE_CURRENT_SOURCE_DIR}/test_sha256.c)

# End to end, offline (--from): needs the real model in the user's cache,
# i.e. run `spillway fetch` once before ctest. About 0.8 GB of temp space.
add_test(NAME fetch_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fetch_test.sh $<TARGET_FILE:spillway_cli>)
set_tests_properties(fetch_cli PROPERTIES TIMEOUT 600 LABELS "model;slow")

# `spillway fetch pjrt-*`, downloading nothing. installed: with the user's
# cache holding pjrt-cpu (CI fetches it first; skipped otherwise), fetch is
# a fast no-op and an unknown target lists the targets. offline: the install
# path against a stand-in for pip, in a private cache folder.
foreach(mode installed offline)
  add_test(NAME fetch_pjrt_${mode}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fetch_pjrt_test.sh ${mode}
                   $<TARGET_FILE:spillway_cli>)
  set_tests_properties(fetch_pjrt_${mode} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
endforeach()

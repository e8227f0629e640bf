# Device discovery (sw_devices_query). SW_TEST_EXPECT_CUDA tells the test
# which answer the library should give: CUDA compiled in or not.
if(SW_HAVE_CUDA)
  set(SW_DEVICES_EXPECT_CUDA 1)
else()
  set(SW_DEVICES_EXPECT_CUDA 0)
endif()

sw_add_c_test(test_devices ${CMAKE_CURRENT_SOURCE_DIR}/test_devices.c)
target_compile_definitions(test_devices PRIVATE SW_TEST_EXPECT_CUDA=${SW_DEVICES_EXPECT_CUDA})

# CUDA reads CUDA_VISIBLE_DEVICES once per process: a separate run.
add_test(NAME test_devices_hidden COMMAND test_devices --hide-all)
set_tests_properties(test_devices_hidden PROPERTIES ENVIRONMENT "SW_TEST_DATA=${SW_TEST_DATA}")

# registry.c without SW_HAVE_CUDA, in every build.
sw_add_c_test(test_devices_nocuda ${CMAKE_CURRENT_SOURCE_DIR}/test_devices.c
              ${CMAKE_CURRENT_SOURCE_DIR}/devices_registry_nocuda.c)
target_compile_definitions(test_devices_nocuda PRIVATE SW_TEST_EXPECT_CUDA=0)

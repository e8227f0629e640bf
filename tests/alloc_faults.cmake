# alloc_faults.cmake — host allocation faults: the Nth host allocation
# fails, for every N a run reaches from opening a model to generating
# tokens (cpu and sim, GGUF and Hugging Face folders). The test links
# libspillway.a through the counting shim of alloc_fault.c (the linker's
# --wrap; GNU ld and lld have it); run in the sanitizer build it is also
# the leak check of every failure path.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  sw_add_c_test(test_alloc_faults ${CMAKE_CURRENT_SOURCE_DIR}/test_alloc_faults.c
                ${CMAKE_CURRENT_SOURCE_DIR}/alloc_fault.c)
  target_link_options(test_alloc_faults PRIVATE
    "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc"
    "LINKER:--wrap=posix_memalign,--wrap=strdup,--wrap=strndup,--wrap=mmap")
  target_link_libraries(test_alloc_faults PRIVATE ${CMAKE_DL_LIBS})
  set_tests_properties(test_alloc_faults PROPERTIES TIMEOUT 300)
endif()

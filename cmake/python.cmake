# python.cmake — libspillway.so for the Python package: the static
# library's objects linked as a shared library (as cmake/install.cmake does
# for C programs), installed into the package folder `spillway/` of the
# wheel scikit-build-core assembles, where python/spillway/_lib.py loads it.
add_library(spillway_python SHARED $<TARGET_OBJECTS:spillway>)
set_target_properties(spillway_python PROPERTIES OUTPUT_NAME spillway
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/libspillway.map)
target_link_options(spillway_python PRIVATE
                    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/libspillway.map
                    -Wl,--no-undefined)
target_link_libraries(spillway_python PRIVATE Threads::Threads m json-c::json-c
                      ${CMAKE_DL_LIBS})
if(SW_HAVE_CUDA)
  target_link_libraries(spillway_python PRIVATE CUDA::cudart_static)
endif()
install(TARGETS spillway_python LIBRARY DESTINATION spillway)

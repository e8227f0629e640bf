# install.cmake — libspillway.so beside the static library, and what a
# program needs to build against an installed Spillway: the header, a
# pkg-config file (spillway.pc) and a CMake package (find_package(spillway)
# gives spillway::spillway, the shared library).
include(GNUInstallDirs)

# The static library's own objects (CUDA and PJRT ones included), linked
# again as a shared library; the version script is a second fence behind
# SW_API and hidden visibility: only sw_* leaves the library.
add_library(spillway_shared SHARED $<TARGET_OBJECTS:spillway>)
set_target_properties(spillway_shared PROPERTIES OUTPUT_NAME spillway EXPORT_NAME spillway
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/libspillway.map)
target_include_directories(spillway_shared PUBLIC
                           $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_options(spillway_shared PRIVATE
                    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/libspillway.map)
if(NOT SPILLWAY_SANITIZE) # a sanitizer's runtime comes with the program
  target_link_options(spillway_shared PRIVATE -Wl,--no-undefined)
endif()
target_link_libraries(spillway_shared PRIVATE Threads::Threads m json-c::json-c
                      ${CMAKE_DL_LIBS})
if(SW_HAVE_CUDA)
  target_link_libraries(spillway_shared PRIVATE CUDA::cudart_static)
endif()

install(TARGETS spillway_shared EXPORT spillwayTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS spillway ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS spillway_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
install(FILES ${CMAKE_SOURCE_DIR}/include/spillway.h ${CMAKE_SOURCE_DIR}/include/spillway_grammar.h
              ${CMAKE_SOURCE_DIR}/include/spillway_experts.h
              ${CMAKE_SOURCE_DIR}/include/spillway_doctor.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT spillwayTargets NAMESPACE spillway::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spillway)

include(CMakePackageConfigHelpers)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/spillwayConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/spillwayConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spillway)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/spillwayConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/spillwayConfig.cmake
              ${CMAKE_BINARY_DIR}/spillwayConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/spillway)

# Relocatable: the prefix is found from where the .pc file lies, so
# `cmake --install --prefix ANY` needs no reconfigure.
file(RELATIVE_PATH SW_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(${CMAKE_SOURCE_DIR}/cmake/spillway.pc.in ${CMAKE_BINARY_DIR}/spillway.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/spillway.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# PJRT backend switch. The backend talks to XLA's plugins through
# pjrt_c_api.h, which is not in the repository: it comes from an installed
# package (`spillway fetch pjrt-cpu` installs xla-cpu-pjrt, which ships it,
# into the cache folder), or from -DSPILLWAY_PJRT_INCLUDE=DIR.
# AUTO builds the backend when the header is found; ON requires it.
set(SPILLWAY_PJRT AUTO CACHE STRING "Build the PJRT backend: AUTO, ON or OFF")
set_property(CACHE SPILLWAY_PJRT PROPERTY STRINGS AUTO ON OFF)
set(SW_HAVE_PJRT OFF)
if(NOT SPILLWAY_PJRT STREQUAL "OFF")
  set(_sw_cache "$ENV{XDG_CACHE_HOME}")
  if(NOT _sw_cache)
    set(_sw_cache "$ENV{HOME}/.cache")
  endif()
  find_path(SPILLWAY_PJRT_INCLUDE pjrt_c_api.h
            HINTS "${_sw_cache}/spillway/pjrt-cpu/xla_plugins/xla_cpu_pjrt/include"
            NO_DEFAULT_PATH)
  if(SPILLWAY_PJRT_INCLUDE)
    set(SW_HAVE_PJRT ON)
  elseif(SPILLWAY_PJRT STREQUAL "ON")
    message(FATAL_ERROR "SPILLWAY_PJRT=ON but pjrt_c_api.h was not found: run "
                        "'spillway fetch pjrt-cpu' or pass -DSPILLWAY_PJRT_INCLUDE=DIR")
  else()
    message(STATUS "Spillway: pjrt_c_api.h not found, building without the PJRT backend "
                   "('spillway fetch pjrt-cpu' installs it)")
  endif()
endif()

if(SW_HAVE_PJRT)
  file(GLOB SW_PJRT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/pjrt/*.c)
  target_sources(spillway PRIVATE ${SW_PJRT_SOURCES})
  # The header is third-party: included as a system header, so our warning
  # flags judge our code only; and only by the sources that include it, so
  # that finding it (CI fetches the plugin after a first build) rebuilds
  # those and not the whole library with its CUDA kernels.
  set_property(SOURCE ${SW_PJRT_SOURCES} APPEND
               PROPERTY COMPILE_OPTIONS -isystem "${SPILLWAY_PJRT_INCLUDE}")
  set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/backend/registry.c APPEND
               PROPERTY COMPILE_DEFINITIONS SW_HAVE_PJRT=1)
  target_link_libraries(spillway PUBLIC ${CMAKE_DL_LIBS})
  message(STATUS "Spillway: PJRT backend enabled (${SPILLWAY_PJRT_INCLUDE})")
endif()

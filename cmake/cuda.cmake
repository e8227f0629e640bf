# CUDA backend switch. AUTO builds it when nvcc is found; ON requires it;
# OFF leaves it out. All .cu files live in src/backend/cuda/.
set(SW_HAVE_CUDA OFF)
if(NOT SPILLWAY_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(SW_HAVE_CUDA ON)
  elseif(SPILLWAY_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPILLWAY_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "install the CUDA toolkit or use -DSPILLWAY_CUDA=OFF")
  else()
    message(STATUS "Spillway: nvcc not found, building without the CUDA backend")
  endif()
endif()

if(SW_HAVE_CUDA)
  # Before enable_language(CUDA), which would otherwise pick nvcc's own
  # default (75 for CUDA 13) and define the variable.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Hopper (H100/H200) is the target; also Ampere/Ada for users' cards.
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  # `spillway` was created before CUDA was enabled, so its CUDA properties
  # were not initialised from the variables above.
  set_target_properties(spillway PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
                                            CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  # Asserts stay on in .cu host code too (see the C flags in CMakeLists.txt).
  string(REPLACE "-DNDEBUG" "" CMAKE_CUDA_FLAGS_RELWITHDEBINFO "${CMAKE_CUDA_FLAGS_RELWITHDEBINFO}")
  target_compile_options(spillway PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
  file(GLOB SW_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/cuda/*.cu)
  target_sources(spillway PRIVATE ${SW_CUDA_SOURCES})
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/backend/registry.c
                              PROPERTIES COMPILE_DEFINITIONS SW_HAVE_CUDA=1)
  find_package(CUDAToolkit REQUIRED)
  # Static runtime: the binary runs (and reports "no driver") on machines
  # without CUDA installed.
  target_link_libraries(spillway PUBLIC CUDA::cudart_static)
  message(STATUS "Spillway: CUDA backend enabled (${CMAKE_CUDA_COMPILER_VERSION})")
endif()

# doctor.cmake — `spillway doctor --quick`: report, JSON, cache file, and
# the no-device and unwritable-cache paths. Needs no model (a private
# XDG_CACHE_HOME makes doctor measure the disk with a temp file).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME doctor_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_doctor.sh $<TARGET_FILE:spillway_cli>
                 ${Python3_EXECUTABLE})
set_tests_properties(doctor_cli PROPERTIES TIMEOUT 60)

# `spillway doctor --backend pjrt` (pjrt_doctor_test.sh). With the PJRT
# backend built, every failure class against real files (a text file, libm,
# the CUDA plugin without a GPU, the CPU plugin, a held libtpu lock file, a
# fake plugin compiled from the header); the CPU and CUDA plugins must be
# installed ('spillway fetch pjrt-cpu', 'spillway fetch pjrt-cuda'). Without
# the backend, that doctor says so.
if(SW_HAVE_PJRT)
  add_test(NAME doctor_pjrt
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pjrt_doctor_test.sh
                   $<TARGET_FILE:spillway_cli> pjrt ${CMAKE_C_COMPILER} ${SPILLWAY_PJRT_INCLUDE})
else()
  add_test(NAME doctor_pjrt
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pjrt_doctor_test.sh
                   $<TARGET_FILE:spillway_cli> nopjrt)
endif()
set_tests_properties(doctor_pjrt PROPERTIES TIMEOUT 120
                     ENVIRONMENT "PYTHON=${Python3_EXECUTABLE}")

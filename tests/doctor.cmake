# doctor.cmake — `spillway doctor --quick`: report, JSON, cache file, and
# the no-device and unwritable-cache paths. Needs no model (a private
# XDG_CACHE_HOME makes doctor measure the disk with a temp file).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME doctor_cli
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_doctor.sh $<TARGET_FILE:spillway_cli>
                 ${Python3_EXECUTABLE})
set_tests_properties(doctor_cli PROPERTIES TIMEOUT 60)

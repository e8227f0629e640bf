# layers.cmake — includes under src/ point downward only (util, then
# quant/format, backend/tokenizer/model, plan/synth, engine, runtime, cli)
# and the folder include graph has no cycle; the levels are a table at the
# top of tools/check_layers.py.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME layering
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/check_layers.py
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(layering PROPERTIES TIMEOUT 60)

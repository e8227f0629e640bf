# Golden-file reader (tests/golden.c) and the committed forward-pass golden
# files in tests/data/golden/ (made by tools/golden/make_forward_golden.py).
sw_add_c_test(test_golden_reader
  ${CMAKE_CURRENT_SOURCE_DIR}/test_golden_reader.c
  ${CMAKE_CURRENT_SOURCE_DIR}/golden.c)

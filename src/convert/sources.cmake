# Conversion between image sets and the inspection of sets: what `feeder convert` and `feeder
# inspect` do, as library calls returning values, so the command line, Python and the benchmarks
# depend on the library only. Part of feeder_core (no LibTorch).
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/convert.cpp
  ${CMAKE_CURRENT_LIST_DIR}/convert_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/inspect.cpp
)

# Sources of the Parquet reader and writer, part of feeder_core (no LibTorch).
include(${CMAKE_CURRENT_LIST_DIR}/reader_sources.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/writer_sources.cmake)

# Opening a dataset (above the format readers and image sources), part of feeder_core.
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/open_dataset.cpp
)

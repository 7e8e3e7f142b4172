# Sources of the format readers, part of feeder_core (no LibTorch).
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/idx.cpp
  ${CMAKE_CURRENT_LIST_DIR}/csv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dataset_files.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dataset_kind.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sharded.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sharded_source.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/shard_index.cpp
)

# Sources of the loader and its parts, part of feeder_core (no LibTorch).
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/loader_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/loader_state.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch.cpp
  ${CMAKE_CURRENT_LIST_DIR}/buffer_pool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch_sequencer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batch_assembly.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/block_schedule.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/block_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/block_stream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/shuffle_advice.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/page_advice.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/convert.cpp
)

# Parquet encoders and writer sources.
# Included from src/CMakeLists.txt with feeder_core defined.
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/encoder/plain_encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoder/rle_bit_packed_encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoder/dictionary_encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/writer.cpp
)

# Encoded images: JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp), each a Debian library; tar
# shards read with libarchive.
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/image_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/png_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/webp_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/crop.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resample.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resized_crop.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoded_source.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoded_rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/png_encoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/max_side.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_folder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_stage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tar_shards.cpp
  ${CMAKE_CURRENT_LIST_DIR}/encoded_summary.cpp
)
pkg_check_modules(FEEDER_IMAGE_CODECS REQUIRED IMPORTED_TARGET libjpeg libpng libwebp libarchive)
target_link_libraries(feeder_core PRIVATE PkgConfig::FEEDER_IMAGE_CODECS)

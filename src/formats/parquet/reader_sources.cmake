# Parquet metadata, codecs, decoders and reader sources.
# Included from src/CMakeLists.txt with feeder_core defined.
find_package(PkgConfig REQUIRED)
pkg_check_modules(FEEDER_THRIFT REQUIRED IMPORTED_TARGET thrift)
pkg_check_modules(FEEDER_CODECS REQUIRED IMPORTED_TARGET libzstd liblz4 libbrotlidec libbrotlienc snappy)
find_program(FEEDER_THRIFT_COMPILER thrift REQUIRED)

# The footer and page-header structs are generated from the IDL at build time, so the IDL is the
# only description of the format in the tree.
set(FEEDER_PARQUET_IDL ${PROJECT_SOURCE_DIR}/third_party/parquet-format/parquet.thrift)
set(FEEDER_PARQUET_GEN_DIR ${PROJECT_BINARY_DIR}/generated/parquet_format)
add_custom_command(
  OUTPUT ${FEEDER_PARQUET_GEN_DIR}/parquet_types.cpp ${FEEDER_PARQUET_GEN_DIR}/parquet_types.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${FEEDER_PARQUET_GEN_DIR}
  COMMAND ${FEEDER_THRIFT_COMPILER} --gen cpp:moveable_types,no_skeleton,no_ostream_operators
          -out ${FEEDER_PARQUET_GEN_DIR} ${FEEDER_PARQUET_IDL}
  DEPENDS ${FEEDER_PARQUET_IDL}
  COMMENT "Generating Parquet metadata structs from parquet.thrift"
  VERBATIM)
add_custom_target(feeder_parquet_format_gen DEPENDS ${FEEDER_PARQUET_GEN_DIR}/parquet_types.h)
add_dependencies(feeder_core feeder_parquet_format_gen)
# Generated code is not ours to warn about.
set_source_files_properties(${FEEDER_PARQUET_GEN_DIR}/parquet_types.cpp PROPERTIES COMPILE_OPTIONS "-w")

target_sources(feeder_core PRIVATE
  ${FEEDER_PARQUET_GEN_DIR}/parquet_types.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/thrift.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metadata.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec.cpp
)
# Thrift stays inside feeder_core: no public header includes the generated structs.
target_include_directories(feeder_core PRIVATE ${FEEDER_PARQUET_GEN_DIR})
target_link_libraries(feeder_core PRIVATE PkgConfig::FEEDER_THRIFT PkgConfig::FEEDER_CODECS)
# For code that reads footers through src/formats/parquet/detail/thrift.h (the writer's tests):
# the generated headers and Thrift's, on request.
add_library(feeder_parquet_thrift INTERFACE)
target_include_directories(feeder_parquet_thrift INTERFACE ${FEEDER_PARQUET_GEN_DIR})
target_link_libraries(feeder_parquet_thrift INTERFACE PkgConfig::FEEDER_THRIFT)
add_dependencies(feeder_parquet_thrift feeder_parquet_format_gen)
target_sources(feeder_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/detail/chunk_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/column_values.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/footer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/image_columns.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/image_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/sequence_columns.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detail/value_columns.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder/rle_bit_packed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder/plain.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder/dictionary.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder/delta_binary_packed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decoder/byte_stream_split.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/image_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/column_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/row_group_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/class_labels.cpp
)

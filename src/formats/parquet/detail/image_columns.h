#pragma once

// Internal: which columns of a flat Parquet file hold an image set (label, pixels or one image
// column) and its shape, decided from the footer alone. Shared by read_parquet_images (whole file)
// and ParquetRowGroupReader (one row group at a time), so both pick the same columns.

#include <cstdint>
#include <string>
#include <vector>

#include "feeder/formats/parquet/metadata.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/store/image_store.h"

namespace feeder::parquet::detail {

struct ImageColumns {
  int64_t label_idx = -1;          // -1: the file has no label column (an unlabeled set)
  std::vector<int64_t> pixel_idx;  // numeric pixel columns in pixel order; or
  int64_t image_idx = -1;          // one FIXED_LEN_BYTE_ARRAY column of whole images; or
  int64_t encoded_idx = -1;        // one BYTE_ARRAY column of encoded images (JPEG, PNG, WebP files)
  ImageShape shape;                // {0, 0, 0} for encoded images, each of its own size
  std::vector<int64_t> value_idx;  // ParquetImageOptions::value_columns, in their order
};

// True for the columns whose values can become pixels or labels: INT32, INT64, FLOAT or DOUBLE,
// without a logical type or with an integer one (INT(n,s), UINT_n, INT_n).
bool is_number_column(const ColumnSchema& column);

// Picks the columns as ParquetImageOptions describes and resolves the shape. `name` prefixes the
// DataErrors (nested schema, missing or mistyped columns, no pixels, a shape that does not fit).
ImageColumns resolve_image_columns(const FileMetadata& meta, const std::string& name, const ParquetImageOptions& options);

// Throws DataError ("<context>: N images of P pixels exceed the limit ...") when `num_rows` decoded
// images would exceed max_decoded_bytes.
void check_decoded_size(int64_t num_rows, const ImageShape& shape, int64_t max_decoded_bytes, const std::string& context);

// What the columns are, for comparing files of one set and for messages:
// "label INT64, 784 pixel columns pixel1..pixel784 INT32 INT(8,false)", "no label, image FIXED_LEN_BYTE_ARRAY(784)".
std::string describe_image_columns(const FileMetadata& meta, const ImageColumns& columns);

}  // namespace feeder::parquet::detail

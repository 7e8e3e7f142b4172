#pragma once

// Internal: one row group's column chunks decoded into the image store's layout. read_parquet_images
// (whole files, several threads over the columns) and ParquetRowGroupReader (one row group read
// with pread) both decode through these functions, so pixels, labels and their errors are the same.
//
// Values: pixel columns may be INT32, INT64, FLOAT or DOUBLE; a value becomes a pixel when it is an
// integer in 0..255. Labels take any integral value that fits int64. Anything else throws
// DataError "<file>: column '<name>'[ row group <g>] row <r>: <what>", where the row group is named
// when the file has several and r counts from the start of the row group, e.g.
//   part-00003.parquet: column 'pixel12' row group 2 row 517: value 300 out of range 0..255
//   t.parquet: column 'pixel3' row 4: value 2.5 is not an integer
//   t.parquet: column 'pixel3' row 4: value NaN is not a number
//   t.parquet: column 'label' row 9: value 1e+19 out of range for an int64 label
//   t.parquet: column 'pixel3' row 0: null pixel value (pixel columns must not have nulls)
//   t.parquet: column 'label' row 2: null label

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "formats/parquet/detail/chunk_reader.h"

namespace feeder::parquet::detail {

// Decodes one pixel column chunk into out[0, where.num_rows), one byte per row.
void decode_pixel_chunk(const ChunkLocation& where, uint8_t* out, PageBuffer& buffer);

// Rows [begin, end) of a chunk, counted from its first row, and where the first of them goes.
struct RowSelection {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t out = 0;
};

// Decodes only the rows of `selected` (sorted and disjoint) of one pixel column chunk, row r of a
// selection s to out[s.out + r - s.begin]. Every page is still decompressed, but the values of
// rows outside the selections are passed over a run at a time and never checked: a few rows of a
// page far larger than them (DuckDB writes one page per column of a row group) cost little more
// than the page's decompression.
void decode_pixel_chunk_rows(const ChunkLocation& where, std::span<const RowSelection> selected, uint8_t* out,
                             PageBuffer& buffer);

// Decodes one label column chunk into out[0, where.num_rows).
void decode_label_chunk(const ChunkLocation& where, int64_t* out, PageBuffer& buffer);

// Copies one FIXED_LEN_BYTE_ARRAY chunk of whole images into images (num_rows, image_bytes).
// PLAIN pages (what feeder and most writers produce) are copied straight; other encodings go
// through the generic decoders.
void decode_image_chunk(const ChunkLocation& where, uint8_t* images, int64_t image_bytes, PageBuffer& buffer);

// Copies one BYTE_ARRAY chunk of encoded images (an image file's bytes per row) back to back into
// bytes[0, capacity), row r ending at ends[r]; returns the bytes written. A null image, or more
// than `capacity` bytes, throw DataError naming the row.
int64_t decode_encoded_chunk(const ChunkLocation& where, uint8_t* bytes, int64_t capacity, int64_t* ends,
                             PageBuffer& buffer);

// Pixel columns decoded together into one tile (decode_pixel_columns).
inline constexpr int64_t kTileColumns = 32;
// Parts of a row group (decode_pixel_column_rows) decode fewer columns at once when the rows they
// span are many, so that the tile stays within this.
inline constexpr int64_t kMaxTileBytes = int64_t{256} << 10;
inline int64_t tile_columns(int64_t rows) { return std::clamp<int64_t>(kMaxTileBytes / std::max<int64_t>(rows, 1), 1, kTileColumns); }

// Buffers one thread reuses across row groups.
struct PixelScratch {
  std::vector<uint8_t> tile;  // (columns of one group, rows) uint8, column-major
  PageBuffer pages;
};

// Decodes pixel columns pixel_idx[begin, end) of one row group of `rows` rows into `images`, the
// group's first image of a (rows, num_pixels) row-major block: pixel column k goes to byte k of
// every image. `locate(column_idx)` gives the chunk of that column in the row group.
void decode_pixel_columns(const std::function<ChunkLocation(int64_t column_idx)>& locate,
                          std::span<const int64_t> pixel_idx, int64_t begin, int64_t end, int64_t rows,
                          int64_t num_pixels, uint8_t* images, PixelScratch& scratch);

// Rows [begin, end) of a row group and where their images go ((end - begin), num_pixels).
struct ImageRows {
  int64_t begin = 0;
  int64_t end = 0;
  uint8_t* images = nullptr;
};

// decode_pixel_columns for some rows of a row group: `decode_column(column_idx, out)` fills one
// byte per row of `rows`, the rows of each part after those of the parts before it (out has as
// many bytes as `rows` have rows); each part is then transposed into its images.
void decode_pixel_column_rows(const std::function<void(int64_t column_idx, uint8_t* out)>& decode_column,
                              std::span<const int64_t> pixel_idx, std::span<const ImageRows> rows, int64_t num_pixels,
                              PixelScratch& scratch);

}  // namespace feeder::parquet::detail

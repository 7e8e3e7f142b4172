// The image path: column chunks decoded in parallel straight into the ImageStore.

#include <algorithm>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/util/parallel_for.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/column_values.h"
#include "formats/parquet/detail/image_columns.h"
#include "formats/parquet/detail/image_decode.h"

namespace feeder::parquet {

namespace {

void read_labels(const ParquetFile& file, int64_t label_idx, bool verify_checksums, ImageStore& store) {
  detail::PageBuffer buffer;
  int64_t first_row = 0;
  for (int64_t rg = 0; rg < static_cast<int64_t>(file.metadata().row_groups.size()); ++rg) {
    const detail::ChunkLocation where = detail::make_location(file, rg, label_idx, verify_checksums);
    detail::decode_label_chunk(where, store.labels().data() + first_row, buffer);
    first_row += where.num_rows;
  }
}

void read_image_column(const ParquetFile& file, int64_t image_idx, bool verify_checksums, ImageStore& store) {
  detail::PageBuffer buffer;
  int64_t first_row = 0;
  for (int64_t rg = 0; rg < static_cast<int64_t>(file.metadata().row_groups.size()); ++rg) {
    const detail::ChunkLocation where = detail::make_location(file, rg, image_idx, verify_checksums);
    detail::decode_image_chunk(where, store.image(first_row), store.image_bytes(), buffer);
    first_row += where.num_rows;
  }
}

// Pixel columns are split into contiguous ranges, one per thread (one parallel_for item each, in
// column order, so the error reported is the one of the leftmost failing range). Contiguous ranges
// rather than interleaved groups keep two threads off the same cache lines of the store.
void read_pixel_columns(const ParquetFile& file, const std::vector<int64_t>& pixel_idx, bool verify_checksums,
                        int num_threads, ImageStore& store) {
  const FileMetadata& meta = file.metadata();
  const int64_t num_columns = static_cast<int64_t>(pixel_idx.size());
  const int64_t num_ranges = std::min<int64_t>(num_threads, num_columns);
  parallel_for(num_ranges, static_cast<int>(num_ranges), [&](int64_t range_idx) {
    const int64_t begin = num_columns * range_idx / num_ranges;
    const int64_t end = num_columns * (range_idx + 1) / num_ranges;
    detail::PixelScratch scratch;
    int64_t first_row = 0;
    for (int64_t rg = 0; rg < static_cast<int64_t>(meta.row_groups.size()); ++rg) {
      const int64_t rows = meta.row_groups[static_cast<size_t>(rg)].num_rows;
      detail::decode_pixel_columns(
          [&](int64_t column_idx) { return detail::make_location(file, rg, column_idx, verify_checksums); }, pixel_idx,
          begin, end, rows, store.image_bytes(), store.image(first_row), scratch);
      first_row += rows;
    }
  });
}

}  // namespace

ImageStore read_parquet_images(const std::filesystem::path& path, const ParquetImageOptions& options) {
  ReaderOptions reader_options;
  reader_options.verify_checksums = options.verify_checksums;
  reader_options.max_decoded_bytes = options.max_decoded_bytes;
  return read_parquet_images(ParquetFile::open(path, reader_options), options);
}

ImageStore read_parquet_images(const ParquetFile& file, const ParquetImageOptions& options) {
  const int num_threads = resolve_num_threads(options.num_threads, "parquet image reader: num_threads");
  const FileMetadata& meta = file.metadata();
  const detail::ImageColumns columns = detail::resolve_image_columns(meta, file.name(), options);
  if (columns.encoded_idx >= 0) {
    throw DataError(file.name() + ": column '" + meta.columns[static_cast<size_t>(columns.encoded_idx)].name +
                    "' holds encoded images (JPEG, PNG, WebP files), which are decoded as the loader reads them: "
                    "open the file as a set (open_sharded_dataset, open_parquet_source) with an image stage");
  }
  detail::check_decoded_size(meta.num_rows, columns.shape, options.max_decoded_bytes, file.name());

  ImageStore store(columns.shape, meta.num_rows, columns.label_idx >= 0);
  if (columns.label_idx >= 0) {
    read_labels(file, columns.label_idx, options.verify_checksums, store);
  } else {
    std::fill(store.labels().begin(), store.labels().end(), kNoLabel);
  }
  if (columns.image_idx >= 0) {
    read_image_column(file, columns.image_idx, options.verify_checksums, store);
  } else {
    read_pixel_columns(file, columns.pixel_idx, options.verify_checksums, num_threads, store);
  }
  return store;
}

}  // namespace feeder::parquet

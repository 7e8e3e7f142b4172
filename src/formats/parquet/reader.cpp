#include "feeder/formats/parquet/reader.h"

#include <algorithm>
#include <cstring>

#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "feeder/io/file.h"
#include "formats/parquet/decoder/decoder.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/column_values.h"
#include "formats/parquet/detail/footer.h"

namespace feeder::parquet {

int64_t ColumnData::null_count() const {
  return static_cast<int64_t>(std::count(valid.begin(), valid.end(), uint8_t{0}));
}

ParquetFile ParquetFile::open(const std::filesystem::path& path, const ReaderOptions& options) {
  return from_bytes(file_system_for(path).read_all(path), path.string(), options);
}

ParquetFile ParquetFile::from_buffer(std::vector<uint8_t> bytes, std::string name, const ReaderOptions& options) {
  return from_bytes(FileBytes(std::move(bytes)), std::move(name), options);
}

ParquetFile ParquetFile::from_bytes(FileBytes bytes, std::string name, const ReaderOptions& options) {
  ParquetFile file;
  file.name_ = std::move(name);
  file.bytes_ = std::move(bytes);
  file.options_ = options;
  file.parse_footer();
  return file;
}

void ParquetFile::parse_footer() {
  const std::span<const uint8_t> b = bytes();
  const uint32_t footer_bytes = detail::check_file_ends(b.first(std::min(b.size(), detail::kMagicBytes)),
                                                        b.last(std::min(b.size(), detail::kFooterTailBytes)), b.size(), name_);
  const size_t footer_start = b.size() - detail::kFooterTailBytes - footer_bytes;
  metadata_ = detail::parse_footer(b.subspan(footer_start, footer_bytes), footer_start, name_);
}

void ParquetFile::require_flat_schema() const {
  if (metadata_.nested_column) {
    throw DataError(name_ + ": nested schema not supported (column '" + *metadata_.nested_column +
                    "'); feeder reads flat files of top-level primitive columns");
  }
}

detail::ChunkLocation detail::make_location(const ParquetFile& file, int64_t row_group_idx, int64_t column_idx,
                                            bool verify_checksums) {
  const FileMetadata& meta = file.metadata();
  ChunkLocation where;
  where.file_bytes = file.bytes();
  where.file_name = &file.name();
  where.column = &meta.columns[static_cast<size_t>(column_idx)];
  where.chunk = &meta.row_groups[static_cast<size_t>(row_group_idx)].columns[static_cast<size_t>(column_idx)];
  where.row_group_idx = row_group_idx;
  where.num_row_groups = static_cast<int64_t>(meta.row_groups.size());
  where.num_rows = meta.row_groups[static_cast<size_t>(row_group_idx)].num_rows;
  where.verify_checksums = verify_checksums;
  return where;
}

ColumnData ParquetFile::read_column(int64_t column_idx) const {
  if (column_idx < 0 || column_idx >= static_cast<int64_t>(metadata_.columns.size())) {
    throw DataError(name_ + ": no column " + std::to_string(column_idx) + " (the file has " +
                    std::to_string(metadata_.columns.size()) + ")");
  }
  const ColumnSchema& column = metadata_.columns[static_cast<size_t>(column_idx)];
  // A top-level primitive column reads the same whether or not other columns are nested.
  if (column.path.size() != 1 || column.repetition == Repetition::kRepeated) {
    throw DataError(name_ + ": column '" + column.name +
                    "': nested schema not supported; feeder reads top-level primitive columns");
  }
  ColumnData out;
  out.physical_type = column.physical_type;
  switch (column.physical_type) {
    case PhysicalType::kBoolean: out.values = detail::read_values<uint8_t>(*this, column_idx, out.valid); break;
    case PhysicalType::kInt32: out.values = detail::read_values<int32_t>(*this, column_idx, out.valid); break;
    case PhysicalType::kInt64: out.values = detail::read_values<int64_t>(*this, column_idx, out.valid); break;
    case PhysicalType::kFloat: out.values = detail::read_values<float>(*this, column_idx, out.valid); break;
    case PhysicalType::kDouble: out.values = detail::read_values<double>(*this, column_idx, out.valid); break;
    case PhysicalType::kByteArray:
    case PhysicalType::kFixedLenByteArray:
      out.values = detail::read_values<std::string>(*this, column_idx, out.valid);
      break;
    case PhysicalType::kInt96:
      throw DataError(name_ + ": column '" + column.name + "': INT96 columns are not supported");
  }
  return out;
}

ColumnData ParquetFile::read_column(std::string_view column_name) const {
  const int64_t idx = metadata_.column_index(column_name);
  if (idx < 0) throw DataError(name_ + ": no column named '" + std::string(column_name) + "'");
  return read_column(idx);
}

ChunkPageSummary ParquetFile::summarize_pages(int64_t row_group_idx, int64_t column_idx) const {
  const detail::PageCounts counts = detail::count_pages(detail::make_location(*this, row_group_idx, column_idx, false));
  ChunkPageSummary summary;
  summary.num_dictionary_pages = counts.dictionary;
  summary.num_data_pages_v1 = counts.data_v1;
  summary.num_data_pages_v2 = counts.data_v2;
  summary.num_other_pages = counts.other;
  summary.data_encodings = counts.data_encodings;
  summary.has_crc = counts.has_crc;
  return summary;
}

}  // namespace feeder::parquet

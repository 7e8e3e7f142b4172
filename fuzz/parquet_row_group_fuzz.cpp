// libFuzzer target for the row-group reader: the input is written to a temporary file, opened by its
// footer (pread, as the streaming source does) and every row group is read and decoded, whole and
// in parts (read_rows: its pages found from their headers, each read on its own); a file of encoded
// images has each row group's images read as the stream reads them; a file's last column is read as a
// value field (a weight, an array, or a sequence of any length), whole and from a row on, as a
// stream's pieces read it. Any input must
// either decode or throw DataError, without crashes, hangs, leaks or huge allocations.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/row_group_reader.h"

namespace {

// One file per fuzzing process, rewritten for each input and removed at exit.
const std::string& scratch_path() {
  static const std::string path = [] {
    std::string name = "/tmp/feeder-row-group-fuzz-" + std::to_string(::getpid()) + ".parquet";
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return name;
  }();
  return path;
}

bool write_input(const uint8_t* data, size_t size) {
  std::FILE* file = std::fopen(scratch_path().c_str(), "wb");
  if (!file) return false;
  const bool ok = std::fwrite(data, 1, size, file) == size;
  return std::fclose(file) == 0 && ok;
}

// The file opened again with its last column as a value field (ParquetImageOptions::value_columns),
// each row group's values read whole and from a row on.
void read_last_column_as_field(const feeder::parquet::ParquetRowGroupReader& opened,
                               feeder::parquet::ParquetImageOptions options, size_t size) {
  using namespace feeder::parquet;
  if (opened.metadata().columns.size() < 2) return;
  options.value_columns = {opened.metadata().columns.back().name};
  try {
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(scratch_path(), options, "fuzz.parquet");
    std::vector<uint8_t> scratch;
    std::vector<uint8_t> values;
    std::vector<int64_t> ends;
    const feeder::Field& field = reader.value_fields().front();
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
      const int64_t rows = reader.row_group_rows(rg);
      // A fixed-size field's rows (open() bounded them), or a sequence's values as the footer bounds them.
      const int64_t capacity = feeder::is_sequence(field) ? reader.sequence_bytes(rg, 0) : rows * feeder::field_bytes(field);
      if (capacity > (int64_t{64} << 20)) continue;
      values.resize(static_cast<size_t>(capacity));
      ends.resize(static_cast<size_t>(rows));
      const feeder::ValueRegion out[] = {{values.data(), capacity, ends.data()}};
      for (const int64_t begin : {int64_t{0}, rows > 1 ? static_cast<int64_t>(size % static_cast<size_t>(rows)) : 0}) {
        try {
          reader.read_values(rg, begin, rows, out, scratch);
        } catch (const feeder::DataError&) {
        }
      }
    }
  } catch (const feeder::DataError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feeder::parquet;
  if (!write_input(data, size)) return 0;
  ParquetImageOptions options;
  options.verify_checksums = (size & 1) != 0;  // exercise both paths
  options.max_decoded_bytes = int64_t{64} << 20;
  try {
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(scratch_path(), options, "fuzz.parquet");
    reader.label_range();
    read_last_column_as_field(reader, options, size);
    std::vector<uint8_t> scratch;
    std::vector<uint8_t> pixels;
    std::vector<int64_t> labels;
    if (reader.encoded()) {
      // The images' room is the bound the stream allots: their column's uncompressed size.
      for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
        const int64_t rows = reader.row_group_rows(rg);
        const int64_t capacity = reader.encoded_bytes_bound(rg);
        if (capacity > (int64_t{64} << 20) || capacity < 0) continue;
        pixels.resize(static_cast<size_t>(capacity));
        std::vector<int64_t> ends(static_cast<size_t>(rows));
        labels.resize(static_cast<size_t>(rows));
        try {
          reader.read_encoded_row_group(rg, scratch, pixels.data(), capacity, ends.data(), labels.data());
        } catch (const feeder::DataError&) {
        }
      }
      return 0;
    }
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
      const int64_t rows = reader.row_group_rows(rg);
      // open() bounded rows * (pixels + 8) by max_decoded_bytes.
      pixels.resize(static_cast<size_t>(rows * reader.shape().num_pixels()));
      labels.resize(static_cast<size_t>(rows));
      try {
        reader.read_row_group(rg, scratch, pixels.data(), labels.data());
      } catch (const feeder::DataError&) {
      }
      if (rows < 2) continue;
      // Two parts with a row left out between them, as a stream's pieces of one window are.
      const int64_t cut = 1 + static_cast<int64_t>(size % static_cast<size_t>(rows - 1));
      const ParquetRowGroupReader::RowRange parts[] = {
          {0, cut - (cut > 1 ? 1 : 0), pixels.data(), labels.data()},
          {cut, rows, pixels.data() + cut * reader.shape().num_pixels(), labels.data() + cut}};
      const std::span<const ParquetRowGroupReader::RowRange> all(parts);
      try {
        reader.read_rows(rg, cut > 1 ? all : all.subspan(1), scratch);
      } catch (const feeder::DataError&) {
      }
    }
    try {
      reader.max_rows_read_bytes(0);
    } catch (const feeder::DataError&) {
    }
  } catch (const feeder::DataError&) {
  }
  return 0;
}

#pragma once

// Internal: decoding one column of a flat file into dense typed values (the generic reader path).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "formats/parquet/decoder/decoder.h"
#include "formats/parquet/detail/chunk_reader.h"

namespace feeder::parquet::detail {

ChunkLocation make_location(const ParquetFile& file, int64_t row_group_idx, int64_t column_idx, bool verify_checksums);

// Smallest number of bytes one PLAIN value of the column occupies, for bounding declared counts.
template <class T>
int64_t min_plain_bytes(const ColumnSchema& column) {
  if constexpr (std::is_same_v<T, std::string>) {
    return column.type_length_bytes > 0 ? column.type_length_bytes : 4;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return 0;  // booleans are bits
  } else {
    return sizeof(T);
  }
}

// Decodes a dictionary page into `dictionary`, bounding the declared count by the page size first.
template <class T>
void decode_dictionary_page(const DictionaryPage& page, const ColumnSchema& column, std::vector<T>& dictionary) {
  const int64_t per_value = min_plain_bytes<T>(column);
  const int64_t max_values =
      per_value == 0 ? static_cast<int64_t>(page.values.size()) * 8 : static_cast<int64_t>(page.values.size()) / per_value;
  if (page.num_values > max_values) {
    throw decoder::DecodeError("dictionary page declares " + std::to_string(page.num_values) + " entries but its " +
                               std::to_string(page.values.size()) + " bytes hold at most " + std::to_string(max_values));
  }
  dictionary.assign(static_cast<size_t>(page.num_values), T{});
  if constexpr (std::is_same_v<T, std::string>) {
    decoder::decode_plain(page.values, page.num_values, dictionary.data(), column.type_length_bytes);
  } else {
    decoder::decode_plain(page.values, page.num_values, dictionary.data());
  }
}

// Decodes a dictionary page and points `source` at it for the data pages that follow.
template <class T>
void load_dictionary(const DictionaryPage& page, const ColumnSchema& column, std::vector<T>& dictionary,
                     decoder::ValueSource<T>& source) {
  decode_dictionary_page(page, column, dictionary);
  source.dictionary = dictionary;
  source.has_dictionary = true;
}

// Decodes the definition levels of a column whose levels go up to `max_level` (its
// max_definition_level) into valid[0, n) (1 = present, 0 = null) and returns the number of present
// values.
int64_t decode_validity(const DataPage& page, int16_t max_level, uint8_t* valid);

// Whether every value of the page is present (its levels all `max_level`), found a run at a time
// without writing a level anywhere. False for a page with nulls or with a level out of range:
// decode_validity then says which.
bool all_present(const DataPage& page, int16_t max_level);

// Throws DataError "<file>: column '<name>'[ row group <g>] row <r>: <what>", r counted from the
// chunk's first row (of the row group).
[[noreturn]] void throw_at_row(const ChunkLocation& where, int64_t row, const std::string& what);

// Throws `null_what` at the first null row of the page, if it has any.
void require_no_nulls(const ChunkLocation& where, const DataPage& page, std::vector<uint8_t>& valid,
                      const char* null_what);

// Each data page of a column that must have no nulls, its values decoded densely:
// on_values(page, values), values[i] being row page.first_row + i's. A dictionary page is loaded for
// the pages after it; a null throws `null_what` at its row.
template <class T, class OnValues>
void for_each_page_of_values(const ChunkLocation& where, const char* null_what, PageBuffer& buffer,
                             const OnValues& on_values) {
  const ColumnSchema& column = *where.column;
  std::vector<T> dictionary;
  std::vector<T> values;
  std::vector<uint8_t> valid;
  decoder::ValueSource<T> source;
  for_each_page(
      where, [&](const DictionaryPage& page) { load_dictionary(page, column, dictionary, source); },
      [&](const DataPage& page) {
        require_no_nulls(where, page, valid, null_what);
        values.resize(static_cast<size_t>(page.num_values));
        decoder::decode_values(page.encoding, page.values, page.num_values, values.data(), source);
        on_values(page, std::span<const T>(values));
      },
      &buffer);
}

template <class T>
std::vector<T> read_values(const ParquetFile& file, int64_t column_idx, std::vector<uint8_t>& valid) {
  const FileMetadata& meta = file.metadata();
  const ColumnSchema& column = meta.columns[static_cast<size_t>(column_idx)];
  const int64_t value_bytes = std::is_same_v<T, std::string> ? 32 + column.type_length_bytes : int64_t{sizeof(T)};
  if (meta.num_rows > file.options().max_decoded_bytes / (value_bytes + 1)) {
    throw DataError(file.name() + ": column '" + column.name + "': " + std::to_string(meta.num_rows) +
                    " rows would need more than the limit of " + std::to_string(file.options().max_decoded_bytes) +
                    " bytes (ReaderOptions::max_decoded_bytes)");
  }
  std::vector<T> values(static_cast<size_t>(meta.num_rows));
  valid.assign(static_cast<size_t>(meta.num_rows), 1);
  std::vector<T> dictionary;
  std::vector<T> scratch;
  int64_t row_offset = 0;
  for (size_t rg = 0; rg < meta.row_groups.size(); ++rg) {
    const ChunkLocation where = make_location(file, static_cast<int64_t>(rg), column_idx, file.options().verify_checksums);
    decoder::ValueSource<T> source;
    source.type_length_bytes = column.type_length_bytes;
    dictionary.clear();
    for_each_page(
        where,
        [&](const DictionaryPage& page) {
          load_dictionary(page, column, dictionary, source);
        },
        [&](const DataPage& page) {
          const int64_t first = row_offset + page.first_row;
          T* out = values.data() + first;
          if (column.max_definition_level == 0) {
            decoder::decode_values(page.encoding, page.values, page.num_values, out, source);
            return;
          }
          uint8_t* page_valid = valid.data() + first;
          const int64_t present = decode_validity(page, column.max_definition_level, page_valid);
          if (present == page.num_values) {
            decoder::decode_values(page.encoding, page.values, present, out, source);
            return;
          }
          scratch.resize(static_cast<size_t>(present));
          decoder::decode_values(page.encoding, page.values, present, scratch.data(), source);
          int64_t next = 0;
          for (int64_t i = 0; i < page.num_values; ++i) {
            if (page_valid[i]) out[i] = std::move(scratch[static_cast<size_t>(next++)]);
          }
        });
    row_offset += meta.row_groups[rg].num_rows;
  }
  return values;
}

}  // namespace feeder::parquet::detail

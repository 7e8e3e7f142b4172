#include "formats/parquet/detail/sequence_columns.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "feeder/error.h"
#include "formats/parquet/decoder/rle_bit_packed.h"
#include "formats/parquet/detail/column_values.h"

namespace feeder::parquet::detail {

namespace {

// Where the chunk's rows go: the row being read and, when it is one asked for, its region.
class RowWriter {
 public:
  RowWriter(const ChunkLocation& where, std::span<const SequenceRows> rows, int64_t element_bytes)
      : where_(where), rows_(rows), element_bytes_(element_bytes) {}

  // A row begins (repetition level 0).
  void start_row() {
    ++row_;
    while (next_ < rows_.size() && rows_[next_].end <= row_) ++next_;
    current_ = next_ < rows_.size() && rows_[next_].begin <= row_ ? &rows_[next_] : nullptr;
    if (current_ == nullptr) return;
    if (current_->begin == row_) written_ = 0;
    current_->region->ends[row_ - current_->begin] = written_;
  }
  // A value of the current row, as Out.
  template <class Out>
  void add(Out value) {
    if (current_ == nullptr) return;
    if ((written_ + 1) * element_bytes_ > current_->region->capacity) {
      throw_at_row(where_, row_, "more values than the column chunk's metadata declares (" +
                                     std::to_string(current_->region->capacity / element_bytes_) +
                                     " for the rows read): a damaged or hostile footer");
    }
    std::memcpy(current_->region->data + written_ * element_bytes_, &value, sizeof(Out));
    current_->region->ends[row_ - current_->begin] = ++written_;
  }
  int64_t row() const { return row_; }

 private:
  const ChunkLocation& where_;
  std::span<const SequenceRows> rows_;
  const int64_t element_bytes_;
  int64_t row_ = -1;
  size_t next_ = 0;  // the first range not yet passed
  const SequenceRows* current_ = nullptr;
  int64_t written_ = 0;  // values written into the current range
};

// The page's repetition and definition levels into `rep` and `def`; the number of values present
// (definition level max_def).
int64_t decode_levels(const DataPage& page, int16_t max_def, std::vector<uint8_t>& rep, std::vector<uint8_t>& def) {
  const auto n = static_cast<size_t>(page.num_values);
  rep.resize(n);
  def.assign(n, static_cast<uint8_t>(max_def));
  decoder::RleBitPackedDecoder(page.rep_levels, decoder::bit_width_for(1)).get(rep.data(), page.num_values);
  if (max_def > 0) {
    decoder::RleBitPackedDecoder(page.def_levels, decoder::bit_width_for(static_cast<uint32_t>(max_def)))
        .get(def.data(), page.num_values);
  }
  int64_t present = 0;
  for (const uint8_t level : def) present += level == max_def ? 1 : 0;
  return present;
}

// T is the column's physical type, Out the field's element type.
template <class T, class Out>
void decode_sequences(const ChunkLocation& where, std::span<const SequenceRows> rows, PageBuffer& buffer) {
  const ColumnSchema& column = *where.column;
  const bool as_unsigned = column.int_bit_width > 0 && !column.int_signed;
  const int16_t max_def = column.max_definition_level;
  // The level at which a list holds an entry: below it by one, an empty list; further below, a
  // null list (or a null struct above it).
  const int16_t entry_def = static_cast<int16_t>(max_def - (column.repetition == Repetition::kOptional ? 1 : 0));
  RowWriter writer(where, rows, sizeof(Out));
  std::vector<T> dictionary, values;
  std::vector<uint8_t> rep, def;
  decoder::ValueSource<T> source;
  for_each_page(
      where, [&](const DictionaryPage& page) { load_dictionary(page, column, dictionary, source); },
      [&](const DataPage& page) {
        const auto n = static_cast<size_t>(page.num_values);
        const int64_t present = decode_levels(page, max_def, rep, def);
        values.resize(static_cast<size_t>(present));
        decoder::decode_values(page.encoding, page.values, present, values.data(), source);
        size_t next_value = 0;
        for (size_t i = 0; i < n; ++i) {
          if (rep[i] > 1) throw decoder::DecodeError("repetition level " + std::to_string(rep[i]) + " above the maximum 1");
          if (rep[i] == 0) writer.start_row();
          else if (writer.row() < 0) throw decoder::DecodeError("the column chunk starts inside a row");
          if (def[i] > max_def)
            throw decoder::DecodeError("definition level " + std::to_string(def[i]) + " above the maximum " +
                                       std::to_string(max_def));
          if (def[i] == max_def) {
            const T value = values[next_value++];
            if constexpr (std::is_same_v<T, int32_t>) {
              writer.add<Out>(as_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(value)) : value);
            } else if constexpr (std::is_same_v<T, int64_t>) {
              if (as_unsigned && value < 0)
                throw_at_row(where, writer.row(), "value " + std::to_string(static_cast<uint64_t>(value)) +
                                                      " out of range for int64");
              writer.add<Out>(value);
            } else {
              writer.add<Out>(value);
            }
          } else if (def[i] >= entry_def) {
            throw_at_row(where, writer.row(), "null element (a field's column must not have nulls)");
          } else if (def[i] + 1 < entry_def) {
            throw_at_row(where, writer.row(), "null list (a field's column must not have nulls)");
          }  // else an empty list: a row of no values
        }
      },
      &buffer);
  if (writer.row() + 1 != where.num_rows) {
    throw DataError(chunk_context(where) + ": column chunk holds " + std::to_string(writer.row() + 1) +
                    " rows of lists but the row group has " + std::to_string(where.num_rows) + " rows");
  }
}

}  // namespace

void decode_sequence_chunk(const ChunkLocation& where, const Field& field, std::span<const SequenceRows> rows,
                           PageBuffer& buffer) {
  switch (where.column->physical_type) {
    case PhysicalType::kFloat: return decode_sequences<float, float>(where, rows, buffer);
    case PhysicalType::kDouble: return decode_sequences<double, double>(where, rows, buffer);
    case PhysicalType::kInt32: return decode_sequences<int32_t, int64_t>(where, rows, buffer);
    case PhysicalType::kInt64: return decode_sequences<int64_t, int64_t>(where, rows, buffer);
    default: throw DataError(chunk_context(where) + ": column cannot hold field '" + field.name + "'");
  }
}

}  // namespace feeder::parquet::detail

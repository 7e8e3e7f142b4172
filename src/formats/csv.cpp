#include "feeder/formats/csv.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "feeder/io/file.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"

namespace feeder {
namespace {

// Starting a thread costs about as much as parsing this much text, so smaller inputs get fewer
// threads than chunks (each thread then parses several chunks, still in their own slots).
constexpr size_t kMinBytesPerThread = size_t{64} << 10;

// Longest field text quoted in an error message; longer fields are cut with "...".
constexpr size_t kMaxQuotedField = 40;

// One line of text without its terminator: \n, and a \r before it, are not part of it.
struct Line {
  const char* begin;
  const char* end;
  bool blank() const { return begin == end; }
};

// Returns the line starting at `p` and sets `next` to the start of the following line (or `end`).
Line next_line(const char* p, const char* end, const char*& next) {
  const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
  const char* line_end = newline ? newline : end;
  next = newline ? newline + 1 : end;
  if (line_end != p && line_end[-1] == '\r') --line_end;
  return {p, line_end};
}

std::vector<std::string_view> split_fields(Line line) {
  std::vector<std::string_view> fields;
  const char* field = line.begin;
  for (const char* p = line.begin;; ++p) {
    if (p == line.end || *p == ',') {
      fields.emplace_back(field, static_cast<size_t>(p - field));
      if (p == line.end) break;
      field = p + 1;
    }
  }
  return fields;
}

bool is_integer_text(std::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string quote_field(std::string_view text) {
  std::string quoted = "'";
  quoted += text.substr(0, kMaxQuotedField);
  quoted += text.size() > kMaxQuotedField ? "...'" : "'";
  return quoted;
}

// Header names are matched and shown without surrounding spaces or double quotes.
std::string_view clean_header_name(std::string_view name) {
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
  return name;
}

bool is_label_name(std::string_view name) {
  constexpr std::string_view kLabel = "label";
  return name.size() == kLabel.size() &&
         std::equal(name.begin(), name.end(), kLabel.begin(),
                    [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b; });
}

// What the header (or the first row) says about every row; fixed before any row is parsed, so the
// workers only read it.
struct CsvLayout {
  std::string name;                  // file name for messages
  std::vector<std::string> header;   // column names; empty when the file has no header
  size_t data_begin = 0;             // byte offset of the first line after the header
  int64_t data_first_line = 1;       // its 1-based line number
  int64_t num_fields = 0;            // fields per row, label included
  int64_t label_column = -1;         // 0-based; -1 when unlabeled
  ImageShape shape;
};

ImageShape resolve_shape(const CsvLayout& layout, int64_t num_pixel_columns, const CsvReadOptions& options) {
  if (options.shape) {
    if (options.shape->num_pixels() != num_pixel_columns)
      throw DataError(layout.name + ": " + std::to_string(num_pixel_columns) + " pixel columns, but the shape " +
                      to_string(*options.shape) + " needs " + std::to_string(options.shape->num_pixels()));
    return *options.shape;
  }
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(num_pixel_columns))));
  if (side * side == num_pixel_columns) return {1, side, side};
  throw DataError(layout.name + ": " + std::to_string(num_pixel_columns) +
                  " pixel columns do not make a square 1xSxS image; pass the image shape (CxHxW) explicitly");
}

CsvLayout read_layout(const char* data, const char* end, const std::string& name, const CsvReadOptions& options) {
  CsvLayout layout;
  layout.name = name;
  const char* p = data;
  if (end - p >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  int64_t line_number = 1;
  Line first{};
  const char* next = p;
  for (;; ++line_number) {
    if (p == end) throw DataError(name + ": empty file: no rows");
    first = next_line(p, end, next);
    if (!first.blank()) break;
    p = next;
  }
  const std::vector<std::string_view> fields = split_fields(first);
  layout.num_fields = static_cast<int64_t>(fields.size());
  if (is_integer_text(fields[0])) {
    layout.label_column = 0;
    layout.data_begin = static_cast<size_t>(p - data);
    layout.data_first_line = line_number;
  } else {
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string_view column = clean_header_name(fields[i]);
      if (layout.label_column < 0 && is_label_name(column)) layout.label_column = static_cast<int64_t>(i);
      layout.header.emplace_back(column);
    }
    layout.data_begin = static_cast<size_t>(next - data);
    layout.data_first_line = line_number + 1;
  }
  const int64_t num_pixel_columns = layout.num_fields - (layout.label_column >= 0 ? 1 : 0);
  if (num_pixel_columns == 0)
    throw DataError(name + ": line " + std::to_string(line_number) + ": no pixel columns");
  layout.shape = resolve_shape(layout, num_pixel_columns, options);
  return layout;
}

// A run of whole lines handled by one thread. begin is a line start; end is just after a '\n' or
// the end of the file. Counting fills the row and line counts; parsing then writes rows
// [first_row, first_row + num_rows) of the store.
struct Chunk {
  const char* begin = nullptr;
  const char* end = nullptr;
  int64_t first_line = 0;  // 1-based line number of begin
  int64_t first_row = 0;   // store index of its first row
  int64_t num_rows = 0;    // non-blank lines
  int64_t num_newlines = 0;
};

std::vector<Chunk> split_chunks(const char* begin, const char* end, size_t num_chunks) {
  const size_t size_bytes = static_cast<size_t>(end - begin);
  std::vector<Chunk> chunks(num_chunks);
  const char* start = begin;
  for (size_t i = 0; i < num_chunks; ++i) {
    const char* stop = end;
    if (i + 1 < num_chunks) {
      stop = std::max(start, begin + size_bytes / num_chunks * (i + 1));
      const char* newline = static_cast<const char*>(std::memchr(stop, '\n', static_cast<size_t>(end - stop)));
      stop = newline ? newline + 1 : end;
    }
    chunks[i].begin = start;
    chunks[i].end = stop;
    start = stop;
  }
  return chunks;
}

void count_rows(Chunk& chunk) {
  const char* p = chunk.begin;
  while (p != chunk.end) {
    const char* next;
    const Line line = next_line(p, chunk.end, next);
    if (!line.blank()) ++chunk.num_rows;
    if (next[-1] == '\n') ++chunk.num_newlines;
    p = next;
  }
}

// Parses one row in the common case: plain unsigned decimals, pixels <= 255, labels of at most 18
// digits. Returns false on anything else (including inputs that are valid but unusual, like "-0"),
// and the caller falls back to parse_row_checked, which decides and explains.
bool parse_row_fast(Line line, const CsvLayout& layout, uint8_t* pixels, int64_t* label) {
  const char* p = line.begin;
  const char* end = line.end;
  for (int64_t column = 0; column < layout.num_fields; ++column) {
    if (column != 0) {
      if (p == end || *p != ',') return false;
      ++p;
    }
    if (p == end) return false;
    unsigned digit = static_cast<unsigned char>(*p) - '0';
    if (digit > 9) return false;
    if (column == layout.label_column) {
      // 18 digits always fit in int64; longer labels take the checked path.
      int64_t value = digit;
      int num_digits = 1;
      ++p;
      while (p != end && (digit = static_cast<unsigned char>(*p) - '0') <= 9) {
        if (++num_digits > 18) return false;
        value = value * 10 + digit;
        ++p;
      }
      *label = value;
    } else {
      unsigned value = digit;
      ++p;
      while (p != end && (digit = static_cast<unsigned char>(*p) - '0') <= 9) {
        value = value * 10 + digit;
        if (value > 255) return false;
        ++p;
      }
      *pixels++ = static_cast<uint8_t>(value);
    }
  }
  return p == end;
}

// Parses one row, or throws the DataError that describes its first problem: a wrong field count
// first (it explains every later field error), then the first bad field from the left.
void parse_row_checked(Line line, const CsvLayout& layout, int64_t line_number, uint8_t* pixels, int64_t* label) {
  const std::vector<std::string_view> fields = split_fields(line);
  const std::string where = layout.name + ": line " + std::to_string(line_number);
  if (static_cast<int64_t>(fields.size()) != layout.num_fields)
    throw DataError(where + ": expected " + std::to_string(layout.num_fields) + " fields, found " +
                    std::to_string(fields.size()));
  for (size_t column = 0; column < fields.size(); ++column) {
    const std::string_view text = fields[column];
    const bool is_label = static_cast<int64_t>(column) == layout.label_column;
    auto fail = [&](const std::string& problem) {
      std::string place = where + ", column " + std::to_string(column + 1);
      if (!layout.header.empty()) place += " (" + layout.header[column] + ")";
      throw DataError(place + ": " + problem);
    };
    const std::string range = is_label ? "0.." + std::to_string(std::numeric_limits<int64_t>::max()) : "0..255";
    if (text.empty()) fail("empty field, expected an integer " + range);
    int64_t value = 0;
    const auto [parsed_end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::invalid_argument || parsed_end != text.data() + text.size())
      fail(quote_field(text) + " is not an integer");
    if (error == std::errc::result_out_of_range || value < 0 || (!is_label && value > 255))
      fail("value " + std::string(text.substr(0, kMaxQuotedField)) + (text.size() > kMaxQuotedField ? "..." : "") +
           " out of range " + range);
    if (is_label)
      *label = value;
    else
      *pixels++ = static_cast<uint8_t>(value);
  }
}

// The file is split into one chunk per requested thread (0 = one per core).
size_t resolve_num_chunks(const CsvReadOptions& options, size_t data_bytes) {
  const auto chunks = static_cast<size_t>(resolve_num_threads(options.num_threads, "CSV num_threads"));
  // More chunks than bytes would only give empty chunks.
  return std::max<size_t>(1, std::min(chunks, data_bytes));
}

int threads_for_chunks(size_t num_chunks, size_t data_bytes) {
  return static_cast<int>(std::min(num_chunks, data_bytes / kMinBytesPerThread + 1));
}

// Parses rows in file order into a scratch row until one fails, and throws its error. Only called
// when the row count proves that some row is bad.
[[noreturn]] void throw_first_bad_row(const std::vector<Chunk>& chunks, const CsvLayout& layout) {
  std::vector<uint8_t> pixels(static_cast<size_t>(layout.shape.num_pixels()));
  int64_t label = 0;
  for (const Chunk& chunk : chunks) {
    int64_t line_number = chunk.first_line;
    for (const char* p = chunk.begin; p != chunk.end; ++line_number) {
      const char* next;
      const Line line = next_line(p, chunk.end, next);
      p = next;
      if (!line.blank()) parse_row_checked(line, layout, line_number, pixels.data(), &label);
    }
  }
  throw std::logic_error(layout.name + ": CSV rows too short for their count, yet none failed to parse");
}

char* append_uint(char* out, uint64_t value) {
  return std::to_chars(out, out + 20, value).ptr;
}

}  // namespace

ImageStore read_csv_bytes(std::span<const uint8_t> bytes, const std::string& name, const CsvReadOptions& options) {
  const char* data = reinterpret_cast<const char*>(bytes.data());
  const char* end = data + bytes.size();
  const CsvLayout layout = read_layout(data, end, name, options);
  const char* rows_begin = data + layout.data_begin;

  const size_t data_bytes = static_cast<size_t>(end - rows_begin);
  std::vector<Chunk> chunks = split_chunks(rows_begin, end, resolve_num_chunks(options, data_bytes));
  const int num_threads = threads_for_chunks(chunks.size(), data_bytes);
  const auto num_chunks = static_cast<int64_t>(chunks.size());
  // Pass 1 counts rows so that pass 2 can parse every chunk straight into its place in the store.
  // Chunks are in file order, so parallel_for's lowest-index error is the first in the file.
  parallel_for(num_chunks, num_threads, [&](int64_t i) { count_rows(chunks[static_cast<size_t>(i)]); });
  int64_t num_rows = 0;
  int64_t line_number = layout.data_first_line;
  for (Chunk& chunk : chunks) {
    chunk.first_row = num_rows;
    chunk.first_line = line_number;
    num_rows += chunk.num_rows;
    line_number += chunk.num_newlines;
  }
  if (num_rows == 0) throw DataError(name + ": header but no rows");
  // A valid row has at least one digit per field and the commas between them. More rows than the
  // bytes allow means some row is short: report it rather than allocate a store sized by a header
  // that may claim millions of columns.
  if (static_cast<uint64_t>(num_rows) > data_bytes / static_cast<uint64_t>(2 * layout.num_fields - 1))
    throw_first_bad_row(chunks, layout);

  const bool labeled = layout.label_column >= 0;
  ImageStore store(layout.shape, num_rows, labeled);
  // Once a chunk has failed, later chunks cannot hold the first error: parallel_for claims no more
  // of them, and those already being parsed stop early.
  std::atomic<int64_t> first_failed_chunk{num_chunks};
  parallel_for(num_chunks, num_threads, [&](int64_t i) {
    const Chunk& chunk = chunks[static_cast<size_t>(i)];
    int64_t row = chunk.first_row;
    int64_t line_number = chunk.first_line;
    int64_t unused_label = kNoLabel;
    try {
      for (const char* p = chunk.begin; p != chunk.end; ++line_number) {
        if (first_failed_chunk.load(std::memory_order_relaxed) < i) return;
        const char* next;
        const Line line = next_line(p, chunk.end, next);
        p = next;
        if (line.blank()) continue;
        uint8_t* pixels = store.image(row);
        int64_t* label = labeled ? &store.labels()[static_cast<size_t>(row)] : &unused_label;
        if (!parse_row_fast(line, layout, pixels, label)) parse_row_checked(line, layout, line_number, pixels, label);
        ++row;
      }
    } catch (...) {
      int64_t failed = first_failed_chunk.load();
      while (i < failed && !first_failed_chunk.compare_exchange_weak(failed, i)) {
      }
      throw;
    }
  });
  return store;
}

ImageStore read_csv(const std::filesystem::path& path, const CsvReadOptions& options) {
  const FileBytes file = file_system_for(path).read_all(path);  // a local regular file mapped rather than copied
  const std::span<const uint8_t> bytes = file.bytes();
  if (has_gzip_magic(bytes))
    return read_csv_bytes(gunzip(bytes.data(), bytes.size(), path.string()), path.string(), options);
  return read_csv_bytes(bytes, path.string(), options);
}

void write_csv(const ImageStore& store, const std::filesystem::path& path) {
  const std::unique_ptr<WritableFile> writer = file_system_for(path).create(path);
  const int64_t num_pixels = store.image_bytes();
  std::string header = store.labeled() ? "label" : "";
  for (int64_t i = 1; i <= num_pixels; ++i) {
    if (!header.empty()) header += ',';
    header += "pixel" + std::to_string(i);
  }
  header += '\n';
  writer->write(header);

  // Rows are formatted into one buffer and written in large blocks; a row is at most a 20-digit
  // label and 4 bytes per pixel ("255,").
  constexpr size_t kFlushBytes = size_t{1} << 20;
  const size_t max_row_bytes = 21 + 4 * static_cast<size_t>(num_pixels) + 1;
  std::vector<char> buffer(kFlushBytes + max_row_bytes);
  char* out = buffer.data();
  for (int64_t idx = 0; idx < store.size(); ++idx) {
    if (store.labeled()) {
      const int64_t label = store.label(idx);
      out = std::to_chars(out, out + 21, label).ptr;
      *out++ = ',';
    }
    const uint8_t* pixels = store.image(idx);
    for (int64_t i = 0; i < num_pixels; ++i) {
      out = append_uint(out, pixels[i]);
      *out++ = ',';
    }
    out[-1] = '\n';
    if (static_cast<size_t>(out - buffer.data()) >= kFlushBytes) {
      throw_if_interrupted();  // the temp file is removed as the exception passes
      writer->write(buffer.data(), static_cast<size_t>(out - buffer.data()));
      out = buffer.data();
    }
  }
  writer->write(buffer.data(), static_cast<size_t>(out - buffer.data()));
  throw_if_interrupted();
  writer->commit();
}

}  // namespace feeder

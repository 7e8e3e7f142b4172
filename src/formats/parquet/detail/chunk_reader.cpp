#include "formats/parquet/detail/chunk_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "feeder/error.h"
#include "formats/parquet/codec.h"
#include "formats/parquet/decoder/decode_error.h"
#include "formats/parquet/decoder/rle_bit_packed.h"
#include "formats/parquet/detail/thrift.h"

namespace feeder::parquet::detail {

namespace {

// A page may not claim more than this uncompressed, nor expand more than kMaxExpansion times
// beyond 1 MiB of slack: real pages are around 1 MiB, and the bound keeps a lying header from
// making us allocate gigabytes.
constexpr int64_t kMaxPageBytes = int64_t{1} << 30;
constexpr int64_t kMaxExpansion = 4096;

struct RawPage {
  format::PageHeader header;
  int64_t page_idx = 0;
  std::span<const uint8_t> body;  // compressed bytes as stored
};

// Iterates page headers of a chunk; each header and body is checked to lie inside the chunk.
class PageWalker {
 public:
  explicit PageWalker(const ChunkLocation& where) : where_(where) {
    const int64_t start = where.chunk->start_offset();
    pos_ = static_cast<size_t>(start);
    end_ = static_cast<size_t>(start + where.chunk->total_compressed_size_bytes);
  }

  bool done() const { return pos_ >= end_; }

  RawPage next() {
    RawPage page;
    page.page_idx = page_idx_++;
    const std::string context = page_context(where_, page.page_idx);
    const size_t header_bytes = read_page_header(where_.file_bytes.data() + pos_, end_ - pos_, page.header, context);
    pos_ += header_bytes;
    const auto& h = page.header;
    if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0) {
      throw DataError(context + ": negative page size in page header (compressed " + std::to_string(h.compressed_page_size) +
                      ", uncompressed " + std::to_string(h.uncompressed_page_size) + ")");
    }
    const size_t left = end_ - pos_;
    if (static_cast<size_t>(h.compressed_page_size) > left) {
      throw DataError(context + ": page header declares " + std::to_string(h.compressed_page_size) + " bytes but only " +
                      std::to_string(left) + " are left in the column chunk (truncated data page)");
    }
    page.body = where_.file_bytes.subspan(pos_, static_cast<size_t>(h.compressed_page_size));
    pos_ += static_cast<size_t>(h.compressed_page_size);
    return page;
  }

 private:
  const ChunkLocation& where_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int64_t page_idx_ = 0;
};

void check_crc(const RawPage& page, const std::string& context) {
  if (!page.header.__isset.crc) return;
  const uint32_t expected = static_cast<uint32_t>(page.header.crc);
  const uint32_t found =
      static_cast<uint32_t>(crc32(0L, page.body.data(), static_cast<uInt>(page.body.size())));
  if (expected != found) {
    char text[64];
    std::snprintf(text, sizeof(text), "expected %08x, found %08x", expected, found);
    throw DataError(context + ": page CRC mismatch (" + text + ")");
  }
}

void check_uncompressed_size(int64_t uncompressed, int64_t compressed, const std::string& context) {
  if (uncompressed > kMaxPageBytes || uncompressed > compressed * kMaxExpansion + (int64_t{1} << 20)) {
    throw DataError(context + ": page header declares " + std::to_string(uncompressed) +
                    " uncompressed bytes for " + std::to_string(compressed) + " stored bytes, which is not plausible");
  }
}

// Decompresses `in` into `destination` when given (room for `size` bytes), else into buffer
// (resized to `size`), unless the chunk is uncompressed, in which case the stored bytes are used as
// they are.
std::span<const uint8_t> inflate(Codec codec, std::span<const uint8_t> in, int64_t size, PageBuffer& buffer,
                                 const std::string& context, uint8_t* destination = nullptr) {
  if (codec == Codec::kUncompressed) {
    if (static_cast<int64_t>(in.size()) != size) {
      throw DataError(context + ": UNCOMPRESSED: page stores " + std::to_string(in.size()) +
                      " bytes but declares an uncompressed size of " + std::to_string(size));
    }
    return in;
  }
  if (size == 0 && in.empty()) return {};  // empty v2 value sections hold no codec frame at all
  check_uncompressed_size(size, static_cast<int64_t>(in.size()), context);
  const std::span<uint8_t> out(destination ? destination : buffer.get(static_cast<size_t>(size)), static_cast<size_t>(size));
  decompress(codec, in, out, context);
  return out;
}

// The page's values decompressed, straight into `direct`'s rows when the page qualifies (see
// DirectValues), else as inflate() does.
std::span<const uint8_t> inflate_values(const ChunkLocation& where, const DataPage& data, Codec codec,
                                        std::span<const uint8_t> in, int64_t size, PageBuffer& buffer,
                                        const DirectValues* direct, const std::string& context) {
  const bool in_place = direct && where.column->max_definition_level == 0 && data.encoding == Encoding::kPlain &&
                        size > 0 && size == data.num_values * direct->value_bytes;
  // begin_data_page checked first_row + num_values <= the chunk's rows, which `direct` holds.
  return inflate(codec, in, size, buffer, context,
                 in_place ? direct->base + data.first_row * direct->value_bytes : nullptr);
}

// What the chunk's metadata must allow before any page is read.
void check_chunk(const ChunkLocation& where) {
  const ColumnChunkInfo& chunk = *where.chunk;
  if (chunk.encrypted) throw DataError(chunk_context(where) + ": column is encrypted (encrypted Parquet is not supported)");
  if (!codec_supported(chunk.codec)) {
    throw DataError(chunk_context(where) + ": codec " + to_string(chunk.codec) + " is not supported");
  }
  if (where.values_per_row > 0 && chunk.num_values != where.num_rows * where.values_per_row) {
    const std::string rows = std::to_string(where.num_rows);
    throw DataError(chunk_context(where) + ": column chunk holds " + std::to_string(chunk.num_values) +
                    (where.values_per_row == 1 ? " values but the row group has " + rows + " rows"
                                               : " values, not " + std::to_string(where.values_per_row) +
                                                     " for each of the row group's " + rows + " rows"));
  }
}

// A data page's common fields, after checking its value count against what the chunk has left
// once `values_done` values have been read, and that it holds whole rows.
DataPage begin_data_page(const ChunkLocation& where, int64_t page_idx, int64_t values_done, int64_t num_values,
                         int32_t encoding, const std::string& context) {
  const int64_t values_left = where.chunk->num_values - values_done;
  if (num_values < 0 || num_values > values_left) {
    throw DataError(context + ": page declares " + std::to_string(num_values) + " values but " +
                    std::to_string(values_left) + " remain in the column chunk");
  }
  if (where.values_per_row > 0 && num_values % where.values_per_row != 0) {
    throw DataError(context + ": page holds " + std::to_string(num_values) + " values, not whole rows of " +
                    std::to_string(where.values_per_row) + " (a row split across pages is not supported)");
  }
  DataPage data;
  data.page_idx = page_idx;
  data.first_row = where.values_per_row > 0 ? values_done / where.values_per_row : 0;
  data.num_values = num_values;
  data.encoding = static_cast<Encoding>(encoding);
  return data;
}

DictionaryPage prepare_dictionary(const ChunkLocation& where, const RawPage& page, bool after_data_pages,
                                  PageBuffer& pages, const std::string& context) {
  const auto& h = page.header;
  if (!h.__isset.dictionary_page_header) throw DataError(context + ": dictionary page without its header");
  if (after_data_pages) throw DataError(context + ": dictionary page after data pages");
  const auto& dh = h.dictionary_page_header;
  if (dh.num_values < 0) {
    throw DataError(context + ": negative num_values in dictionary page header (" + std::to_string(dh.num_values) + ")");
  }
  if (raw_enum(dh.encoding) != format::Encoding::PLAIN && raw_enum(dh.encoding) != format::Encoding::PLAIN_DICTIONARY) {
    throw DataError(context + ": dictionary page encoding " + to_string(static_cast<Encoding>(raw_enum(dh.encoding))) +
                    " is not supported");
  }
  DictionaryPage dict;
  dict.page_idx = page.page_idx;
  dict.num_values = dh.num_values;
  dict.values = inflate(where.chunk->codec, page.body, h.uncompressed_page_size, pages, context);
  return dict;
}

// Levels of a v1 page at the start of `body`, behind their 4-byte length; `body` then starts after them.
std::span<const uint8_t> take_v1_levels(std::span<const uint8_t>& body, int32_t encoding, const char* what,
                                        const std::string& context) {
  if (encoding != format::Encoding::RLE) {
    throw DataError(context + ": " + what + " level encoding " + to_string(static_cast<Encoding>(encoding)) +
                    " is not supported");
  }
  if (body.size() < 4) throw DataError(context + ": page too short for its " + what + " levels");
  uint32_t levels_bytes = 0;
  std::memcpy(&levels_bytes, body.data(), 4);
  if (levels_bytes > body.size() - 4) {
    throw DataError(context + ": " + what + " levels declare " + std::to_string(levels_bytes) +
                    " bytes but the page has " + std::to_string(body.size() - 4));
  }
  const std::span<const uint8_t> levels = body.subspan(4, levels_bytes);
  body = body.subspan(4 + levels_bytes);
  return levels;
}

// The repetition levels of a list column read as arrays of n values (values_per_row): 0 at each
// row's first value, 1 at the others. Anything else is a row of another length.
void check_whole_rows(const ChunkLocation& where, std::span<const uint8_t> rep_levels, const DataPage& data,
                      const std::string& context) {
  if (where.column->max_repetition_level != 1) {
    throw DataError(context + ": a list nested in a list (repetition level " +
                    std::to_string(where.column->max_repetition_level) + ") cannot be read as an array");
  }
  decoder::RleBitPackedDecoder levels(rep_levels, 1);
  std::vector<uint8_t> level(static_cast<size_t>(where.values_per_row));
  const int64_t rows = data.num_rows(where);
  for (int64_t r = 0; r < rows; ++r) {
    levels.get(level.data(), where.values_per_row);
    const int64_t ones = std::count(level.begin() + 1, level.end(), 1);
    if (level[0] == 0 && ones == where.values_per_row - 1) continue;
    // A row of fewer values ends early (a 0 among its levels); one of more runs into the next (whose
    // first level is then no 0).
    if (level[0] != 0 && r == 0) throw DataError(context + ": page starts inside a row (a row split across pages)");
    const int64_t row = where.first_row + data.first_row + (level[0] != 0 ? r - 1 : r);
    throw DataError(chunk_context(where) + " row " + std::to_string(row) + ": not an array of " +
                    std::to_string(where.values_per_row) + " values (rows of this column hold different numbers of values)");
  }
}

// Data page v1: the whole body is compressed; it starts with the repetition levels of a list
// column, then the definition levels when the column has nulls, each behind a 4-byte length.
DataPage prepare_data_v1(const ChunkLocation& where, const RawPage& page, int64_t rows_done, PageBuffer& pages,
                         const DirectValues* direct, const std::string& context) {
  const auto& h = page.header;
  if (!h.__isset.data_page_header) throw DataError(context + ": data page without its header");
  const auto& dh = h.data_page_header;
  DataPage data = begin_data_page(where, page.page_idx, rows_done, dh.num_values, raw_enum(dh.encoding), context);
  // Without definition levels the whole body is the values.
  std::span<const uint8_t> body =
      inflate_values(where, data, where.chunk->codec, page.body, h.uncompressed_page_size, pages, direct, context);
  if (where.column->max_repetition_level > 0) {
    const auto rep_levels = take_v1_levels(body, raw_enum(dh.repetition_level_encoding), "repetition", context);
    if (where.values_per_row == 0) data.rep_levels = rep_levels;
    else check_whole_rows(where, rep_levels, data, context);
  }
  if (where.column->max_definition_level > 0)
    data.def_levels = take_v1_levels(body, raw_enum(dh.definition_level_encoding), "definition", context);
  data.values = body;
  return data;
}

// Data page v2: levels are stored uncompressed ahead of the values, repetition levels (a flat
// column has none, though some writers still emit an empty run) then definition levels; only the
// values are compressed, and only when is_compressed (default true) says so.
DataPage prepare_data_v2(const ChunkLocation& where, const RawPage& page, int64_t rows_done, PageBuffer& pages,
                         const DirectValues* direct, const std::string& context) {
  const auto& h = page.header;
  if (!h.__isset.data_page_header_v2) throw DataError(context + ": data page v2 without its header");
  const auto& dh = h.data_page_header_v2;
  DataPage data = begin_data_page(where, page.page_idx, rows_done, dh.num_values, raw_enum(dh.encoding), context);
  const int64_t rep_bytes = dh.repetition_levels_byte_length;
  const int64_t def_bytes = dh.definition_levels_byte_length;
  if (rep_bytes < 0 || def_bytes < 0 || rep_bytes + def_bytes > static_cast<int64_t>(page.body.size()) ||
      rep_bytes + def_bytes > h.uncompressed_page_size) {
    throw DataError(context + ": level lengths (repetition " + std::to_string(rep_bytes) + ", definition " +
                    std::to_string(def_bytes) + ") do not fit in the page");
  }
  const size_t levels_bytes = static_cast<size_t>(rep_bytes + def_bytes);
  const std::span<const uint8_t> rep_levels = page.body.subspan(0, static_cast<size_t>(rep_bytes));
  if (where.column->max_repetition_level > 0 && where.values_per_row == 0) data.rep_levels = rep_levels;
  else if (where.column->max_repetition_level > 0) check_whole_rows(where, rep_levels, data, context);
  if (where.column->max_definition_level > 0)
    data.def_levels = page.body.subspan(static_cast<size_t>(rep_bytes), static_cast<size_t>(def_bytes));
  const std::span<const uint8_t> stored_values = page.body.subspan(levels_bytes);
  const int64_t values_bytes = h.uncompressed_page_size - static_cast<int64_t>(levels_bytes);
  const bool compressed = !dh.__isset.is_compressed || dh.is_compressed;
  data.values = inflate_values(where, data, compressed ? where.chunk->codec : Codec::kUncompressed, stored_values,
                               values_bytes, pages, direct, context);
  return data;
}

}  // namespace

std::string chunk_context(const ChunkLocation& where) {
  std::string text = *where.file_name + ": column '" + where.column->name + "'";
  if (where.num_row_groups > 1) text += " row group " + std::to_string(where.row_group_idx);
  return text;
}

std::string page_context(const ChunkLocation& where, int64_t page_idx) {
  // In a part of a chunk, pages after its dictionary page stand for the chunk's pages from
  // first_data_page on.
  const int64_t dictionary_pages = where.has_dictionary_page ? 1 : 0;
  if (where.first_data_page > 0 && page_idx >= dictionary_pages) page_idx += where.first_data_page - dictionary_pages;
  return chunk_context(where) + " page " + std::to_string(page_idx);
}

void for_each_page(const ChunkLocation& where, const std::function<void(const DictionaryPage&)>& on_dictionary,
                   const std::function<void(const DataPage&)>& on_data, PageBuffer* buffer,
                   const DirectValues* direct) {
  check_chunk(where);
  const int64_t num_values = where.chunk->num_values;
  PageWalker walker(where);
  PageBuffer own_buffer;
  PageBuffer& pages = buffer ? *buffer : own_buffer;
  int64_t values_done = 0;
  int64_t num_data_pages = 0;
  while (!walker.done() && values_done < num_values) {
    const RawPage page = walker.next();
    const std::string context = page_context(where, page.page_idx);
    try {
      if (where.verify_checksums) check_crc(page, context);
      std::optional<DataPage> data;
      switch (static_cast<PageType>(raw_enum(page.header.type))) {
        case PageType::kDictionaryPage:
          on_dictionary(prepare_dictionary(where, page, num_data_pages > 0, pages, context));
          break;
        case PageType::kDataPage:
          data = prepare_data_v1(where, page, values_done, pages, direct, context);
          break;
        case PageType::kDataPageV2:
          data = prepare_data_v2(where, page, values_done, pages, direct, context);
          break;
        case PageType::kIndexPage:
          break;  // not used by readers of values
        default:
          throw DataError(context + ": unknown page type " + std::to_string(raw_enum(page.header.type)));
      }
      if (data) {
        on_data(*data);
        values_done += data->num_values;
        ++num_data_pages;
      }
    } catch (const decoder::DecodeError& e) {
      throw DataError(context + ": " + e.what());
    }
  }
  if (values_done != num_values) {
    throw DataError(chunk_context(where) + ": column chunk ended after " + std::to_string(values_done) + " of its " +
                    std::to_string(num_values) + " values");
  }
}

int64_t list_values_per_row(const FileMetadata& meta, int64_t column_idx) {
  if (meta.columns[static_cast<size_t>(column_idx)].max_repetition_level == 0) return 1;
  int64_t per_row = 0;
  for (const RowGroupInfo& row_group : meta.row_groups) {
    if (row_group.num_rows == 0) continue;
    const int64_t values = row_group.columns[static_cast<size_t>(column_idx)].num_values;
    if (values % row_group.num_rows != 0) return 0;
    if (per_row != 0 && values / row_group.num_rows != per_row) return 0;
    per_row = values / row_group.num_rows;
  }
  return per_row;
}

ChunkPages locate_pages(const ChunkLocation& where,
                        const std::function<std::span<const uint8_t>(int64_t offset, int64_t size_bytes)>& read) {
  check_chunk(where);
  // Most headers take a few dozen bytes; those with statistics more. Grown by 16x while a header
  // does not parse, up to what is left of the chunk.
  constexpr int64_t kFirstHeaderRead = 256;
  ChunkPages pages;
  const ColumnChunkInfo& chunk = *where.chunk;
  int64_t pos = chunk.start_offset();
  const int64_t end = pos + chunk.total_compressed_size_bytes;
  int64_t values_done = 0;
  format::PageHeader header;
  for (int64_t page_idx = 0; pos < end && values_done < chunk.num_values; ++page_idx) {
    // Messages name the page; the text is made only for one (this loop runs for every page of a set).
    const auto context = [&] { return page_context(where, page_idx); };
    size_t header_bytes = 0;
    for (int64_t want = std::min(kFirstHeaderRead, end - pos);; want = std::min(want * 16, end - pos)) {
      const std::span<const uint8_t> bytes = read(pos, want);
      try {
        header = format::PageHeader();
        header_bytes = read_page_header(bytes.data(), bytes.size(), header, "");
        break;
      } catch (const DataError& e) {
        if (want >= end - pos || static_cast<int64_t>(bytes.size()) < want) throw DataError(context() + e.what());
      }
    }
    if (header.compressed_page_size < 0 || static_cast<int64_t>(header.compressed_page_size) > end - pos - static_cast<int64_t>(header_bytes)) {
      throw DataError(context() + ": page header declares " + std::to_string(header.compressed_page_size) +
                      " bytes but only " + std::to_string(end - pos - static_cast<int64_t>(header_bytes)) +
                      " are left in the column chunk (truncated data page)");
    }
    PageSpan page;
    page.offset = pos;
    page.size_bytes = static_cast<int64_t>(header_bytes) + header.compressed_page_size;
    page.uncompressed_bytes = std::max<int64_t>(0, header.uncompressed_page_size);
    page.page_idx = page_idx;
    switch (static_cast<PageType>(raw_enum(header.type))) {
      case PageType::kDictionaryPage:
        if (!pages.data.empty() || pages.dictionary) throw DataError(context() + ": dictionary page after the first page");
        pages.dictionary = page;
        break;
      case PageType::kDataPage:
      case PageType::kDataPageV2: {
        const int64_t values = static_cast<PageType>(raw_enum(header.type)) == PageType::kDataPage
                                   ? header.data_page_header.num_values
                                   : header.data_page_header_v2.num_values;
        const int64_t per_row = std::max<int64_t>(1, where.values_per_row);  // a sequence's pages count values
        if (values < 0 || values > chunk.num_values - values_done || values % per_row != 0)
          begin_data_page(where, page_idx, values_done, values, 0, context());  // throws
        page.first_row = values_done / per_row;
        page.num_values = values / per_row;
        const bool v1 = static_cast<PageType>(raw_enum(header.type)) == PageType::kDataPage;
        const bool has_statistics = v1 ? header.data_page_header.__isset.statistics : header.data_page_header_v2.__isset.statistics;
        if (has_statistics) {
          statistics_min_max(v1 ? header.data_page_header.statistics : header.data_page_header_v2.statistics,
                             page.min_bytes, page.max_bytes);
        }
        values_done += values;
        pages.data.push_back(page);
        break;
      }
      default:
        break;  // index pages: no values
    }
    pos += page.size_bytes;
  }
  if (values_done != chunk.num_values) {
    throw DataError(chunk_context(where) + ": column chunk ended after " + std::to_string(values_done) + " of its " +
                    std::to_string(chunk.num_values) + " values");
  }
  return pages;
}

PageCounts count_pages(const ChunkLocation& where) {
  PageCounts counts;
  if (where.chunk->encrypted) return counts;
  PageWalker walker(where);
  while (!walker.done()) {
    const RawPage page = walker.next();
    const auto& h = page.header;
    counts.has_crc = counts.has_crc || h.__isset.crc;
    std::optional<Encoding> encoding;
    switch (static_cast<PageType>(raw_enum(h.type))) {
      case PageType::kDictionaryPage: ++counts.dictionary; break;
      case PageType::kDataPage:
        ++counts.data_v1;
        encoding = static_cast<Encoding>(raw_enum(h.data_page_header.encoding));
        break;
      case PageType::kDataPageV2:
        ++counts.data_v2;
        encoding = static_cast<Encoding>(raw_enum(h.data_page_header_v2.encoding));
        break;
      default: ++counts.other; break;
    }
    if (encoding && std::find(counts.data_encodings.begin(), counts.data_encodings.end(), *encoding) ==
                        counts.data_encodings.end()) {
      counts.data_encodings.push_back(*encoding);
    }
  }
  return counts;
}

}  // namespace feeder::parquet::detail

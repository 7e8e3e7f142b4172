// ParquetColumnReader on its own: a file opened by its footer, its columns read whole or a data page
// at a time, with no image or label in sight. Values are decoded here with detail/'s decoders and
// compared with the whole-file reader (ParquetFile); pages are handed over once each, in file order,
// numbered as in their chunk; found pages are kept and shared; errors name file, row group and bytes.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/column_reader.h"
#include "feeder/formats/parquet/reader.h"
#include "formats/parquet/detail/chunk_reader.h"
#include "formats/parquet/detail/column_values.h"
#include "formats/test_files.h"
#include "parquet/reader_test_util.h"

namespace feeder::parquet {
namespace {

using feeder::testing::data_error_of;
using feeder::testing::TempDir;
using RowSpan = ParquetColumnReader::RowSpan;

// 7300 rows in one row group; `id` (INT32, PLAIN) in 325 pages of about 22 rows.
const char* const kTinyPages = "data/alltypes_tiny_pages_plain.parquet";
// DuckDB's table of 3000 rows in two row groups: `label` (row % 10), p0..p15 and more columns.
const char* const kDuckdb = "generated/duckdb-1.5.6/duckdb_v1_uncompressed_rg1000.parquet";
// Two columns of two pages each; page 1 of `b` has a CRC that does not match.
const char* const kCorruptChecksum = "data/datapage_v1-corrupt-checksum.parquet";

int64_t column_of(const ParquetColumnReader& reader, const std::string& name) {
  return reader.metadata().column_index(name);
}

template <class T>
void decode_into(const detail::ChunkLocation& where, std::vector<int64_t>& values) {
  detail::PageBuffer buffer;
  detail::for_each_page_of_values<T>(where, "null", buffer, [&](const detail::DataPage& page, std::span<const T> page_values) {
    std::copy(page_values.begin(), page_values.end(), values.begin() + page.first_row);
  });
}

// An INT32 or INT64 chunk, or pages of one, decoded as int64 values.
std::vector<int64_t> decode_ints(const detail::ChunkLocation& where) {
  std::vector<int64_t> values(static_cast<size_t>(where.num_rows));
  if (where.column->physical_type == PhysicalType::kInt32) {
    decode_into<int32_t>(where, values);
  } else {
    decode_into<int64_t>(where, values);
  }
  return values;
}

// An INT32 column of a fixture as the whole-file reader reads it.
std::vector<int64_t> whole_int32_column(const char* fixture, const std::string& name) {
  const ColumnData column = testing::open_fixture(fixture).read_column(name);
  const auto& values = testing::values_of<int32_t>(column);
  return {values.begin(), values.end()};
}

// What read_pages handed over: each page's first row and its values.
struct HandedPage {
  int64_t first_row = 0;
  std::vector<int64_t> values;
};

std::vector<HandedPage> read_int_pages(const ParquetColumnReader& reader, int64_t row_group_idx, int64_t column_idx,
                                       const std::vector<RowSpan>& rows, std::vector<uint8_t>& scratch) {
  std::vector<HandedPage> pages;
  reader.read_pages(row_group_idx, column_idx, rows, scratch, [&](const detail::ChunkLocation& where) {
    pages.push_back({where.first_row, decode_ints(where)});
  });
  return pages;
}

TEST(ParquetColumnReader, OpensByTheFooterWithEveryColumnSelected) {
  const std::string path = testing::fixture(kTinyPages);
  const ParquetColumnReader reader = ParquetColumnReader::open(path);
  const ParquetFile file = testing::open_fixture(kTinyPages);
  EXPECT_EQ(reader.name(), path);
  EXPECT_EQ(reader.num_rows(), 7300);
  EXPECT_EQ(reader.num_row_groups(), 1);
  EXPECT_EQ(reader.row_group_rows(0), 7300);
  EXPECT_EQ(reader.size_bytes(), std::filesystem::file_size(path));
  EXPECT_EQ(reader.metadata().columns.size(), file.metadata().columns.size());
  std::vector<int64_t> every(file.metadata().columns.size());
  std::iota(every.begin(), every.end(), int64_t{0});
  EXPECT_EQ(reader.selected_columns(), every);
  EXPECT_GT(reader.footer_bytes().size(), 0u);
  EXPECT_LT(reader.footer_bytes().size(), reader.size_bytes());
}

// A row group read whole: only the selected chunks' bytes, each chunk decoding as ParquetFile's.
TEST(ParquetColumnReader, RowGroupReadCoversTheSelectedChunks) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kDuckdb));
  ASSERT_EQ(reader.num_row_groups(), 2);
  const int64_t every_column_bytes = reader.max_row_group_read_bytes();
  const int64_t label = column_of(reader, "label");
  reader.select_columns({label, label});
  EXPECT_EQ(reader.selected_columns(), std::vector<int64_t>{label});
  EXPECT_LT(reader.max_row_group_read_bytes(), every_column_bytes);
  std::vector<uint8_t> scratch;
  int64_t row = 0;
  for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) {
    const ParquetColumnReader::RowGroupChunks chunks = reader.read_row_group(rg, scratch);
    EXPECT_GE(static_cast<int64_t>(scratch.size()), reader.row_group_read_bytes(rg));
    const std::vector<int64_t> labels = decode_ints(chunks.chunk(label));
    ASSERT_EQ(static_cast<int64_t>(labels.size()), reader.row_group_rows(rg));
    for (const int64_t value : labels) ASSERT_EQ(value, row++ % 10) << "row group " << rg;
    EXPECT_THROW(chunks.chunk(column_of(reader, "p0")), std::invalid_argument);
  }
  EXPECT_EQ(row, 3000);
}

// Each page holding rows of the spans is read and handed over once, in file order, whatever number
// of spans it holds; its values are the column's.
TEST(ParquetColumnReader, PagesHoldingTheSpansAreHandedOnceEachInFileOrder) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kTinyPages));
  const int64_t id = column_of(reader, "id");
  reader.select_columns({id});
  const std::vector<int64_t> whole = whole_int32_column(kTinyPages, "id");
  const auto pages = reader.row_group_pages(0);
  const std::vector<detail::PageSpan>& spans_of_pages = (*pages)[static_cast<size_t>(id)].data;
  ASSERT_GT(spans_of_pages.size(), 300u);
  ASSERT_GE(spans_of_pages[0].num_values, 8);  // rows 5 and 7 share page 0
  const std::vector<RowSpan> rows = {{5, 6}, {7, 8}, {40, 300}, {7299, 7300}};
  std::vector<uint8_t> scratch;
  const std::vector<HandedPage> handed = read_int_pages(reader, 0, id, rows, scratch);

  size_t expected_pages = 0;
  for (const detail::PageSpan& page : spans_of_pages) {
    expected_pages += std::any_of(rows.begin(), rows.end(), [&](const RowSpan& span) {
      return span.begin < page.first_row + page.num_values && page.first_row < span.end;
    });
  }
  ASSERT_EQ(handed.size(), expected_pages);
  EXPECT_EQ(handed[0].first_row, 0);
  std::set<int64_t> covered;
  for (size_t i = 0; i < handed.size(); ++i) {
    if (i > 0) {
      EXPECT_GT(handed[i].first_row, handed[i - 1].first_row);
    }
    for (size_t r = 0; r < handed[i].values.size(); ++r) {
      const int64_t row = handed[i].first_row + static_cast<int64_t>(r);
      ASSERT_EQ(handed[i].values[r], whole[static_cast<size_t>(row)]) << "row " << row;
      covered.insert(row);
    }
  }
  for (const RowSpan& span : rows)
    for (int64_t row = span.begin; row < span.end; ++row) EXPECT_TRUE(covered.count(row)) << "row " << row;
}

// The pages holding a span read in one go: one chunk of its own, numbered as in the whole chunk.
TEST(ParquetColumnReader, PageRunHandsTheSpansPagesOverAsOneChunk) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kTinyPages));
  const int64_t id = column_of(reader, "id");
  reader.select_columns({id});
  const std::vector<int64_t> whole = whole_int32_column(kTinyPages, "id");
  std::vector<uint8_t> scratch;
  int calls = 0;
  reader.read_page_run(0, id, {100, 1000}, scratch, [&](const detail::ChunkLocation& where) {
    ++calls;
    EXPECT_LE(where.first_row, 100);
    EXPECT_GE(where.first_row + where.num_rows, 1000);
    EXPECT_GT(where.first_data_page, 0);
    const std::vector<int64_t> values = decode_ints(where);
    EXPECT_TRUE(std::equal(values.begin(), values.end(), whole.begin() + where.first_row));
  });
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(reader.read_page_run(0, id, {7300, 7301}, scratch, [](const detail::ChunkLocation&) {}),
               std::invalid_argument);
}

// A row group's pages are found once and kept; a reader of the same file takes them over.
TEST(ParquetColumnReader, PagesAreFoundOnceAndShared) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kTinyPages));
  const int64_t id = column_of(reader, "id");
  reader.select_columns({id});
  const auto pages = reader.row_group_pages(0);
  EXPECT_EQ(reader.row_group_pages(0), pages);
  const std::vector<detail::PageSpan>& data = (*pages)[static_cast<size_t>(id)].data;
  int64_t rows = 0, most_rows = 0, most_bytes = 0;
  for (const detail::PageSpan& page : data) {
    EXPECT_EQ(page.first_row, rows);
    rows += page.num_values;
    most_rows = std::max(most_rows, page.num_values);
    most_bytes = std::max(most_bytes, page.size_bytes + page.uncompressed_bytes + page.num_values * 8);
  }
  EXPECT_EQ(rows, 7300);
  EXPECT_FALSE((*pages)[static_cast<size_t>(id)].dictionary);
  EXPECT_EQ(reader.max_page_rows(0, id), most_rows);
  EXPECT_EQ(reader.max_page_read_bytes(0, id, 8), most_bytes);

  ParquetColumnReader again = ParquetColumnReader::open(testing::fixture(kTinyPages));
  again.select_columns({id});
  again.use_page_maps(reader.page_maps());
  EXPECT_EQ(again.row_group_pages(0), pages);
  // Maps of a file of another row group count are not taken.
  ParquetColumnReader other = ParquetColumnReader::open(testing::fixture(kDuckdb));
  const auto own = other.page_maps();
  other.use_page_maps(reader.page_maps());
  EXPECT_EQ(other.page_maps(), own);
}

// Threads reading pages of one file at once, each with its own scratch, get the column's values.
TEST(ParquetColumnReader, ThreadsReadPagesAtOnce) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kTinyPages));
  const int64_t id = column_of(reader, "id");
  reader.select_columns({id});
  const std::vector<int64_t> whole = whole_int32_column(kTinyPages, "id");
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> scratch;
      for (int64_t begin = t * 100; begin < 7300; begin += 1000) {
        for (const HandedPage& page : read_int_pages(reader, 0, id, {{begin, begin + 50}}, scratch)) {
          if (!std::equal(page.values.begin(), page.values.end(), whole.begin() + page.first_row))
            ++mismatches[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

// Checksums are verified when asked, and a page read on its own keeps its number in the chunk.
TEST(ParquetColumnReader, ChecksumsAreVerifiedWhenAsked) {
  const std::string path = testing::fixture(kCorruptChecksum);
  for (const bool verify : {false, true}) {
    SCOPED_TRACE(verify);
    const ParquetColumnReader reader = ParquetColumnReader::open(path, {.verify_checksums = verify});
    const int64_t b = column_of(reader, "b");
    const auto pages = reader.row_group_pages(0);
    ASSERT_EQ((*pages)[static_cast<size_t>(b)].data.size(), 2u);
    const int64_t second = (*pages)[static_cast<size_t>(b)].data[1].first_row;
    std::vector<uint8_t> scratch;
    EXPECT_EQ(read_int_pages(reader, 0, b, {{0, 1}}, scratch).size(), 1u);  // page 0 is sound
    const auto read_second = [&] { read_int_pages(reader, 0, b, {{second, second + 1}}, scratch); };
    if (verify) {
      EXPECT_EQ(data_error_of(read_second), path + ": column 'b' page 1: page CRC mismatch (expected 48850d12, found 0358a2bc)");
    } else {
      EXPECT_NO_THROW(read_second());
    }
  }
}

TEST(ParquetColumnReader, FileTruncatedWhileOpenNamesRowGroupAndBytes) {
  TempDir dir;
  const auto path = dir / "t.parquet";
  std::filesystem::copy_file(testing::fixture(kTinyPages), path);
  ParquetColumnReader reader = ParquetColumnReader::open(path, {}, "shard.parquet");
  const int64_t id = column_of(reader, "id");
  reader.select_columns({id});
  const detail::PageSpan last = (*reader.row_group_pages(0))[static_cast<size_t>(id)].data.back();
  std::filesystem::resize_file(path, 100);
  std::vector<uint8_t> scratch;
  const std::string whole = data_error_of([&] { reader.read_row_group(0, scratch); });
  EXPECT_EQ(whole.rfind("shard.parquet: row group 0: file truncated while open: bytes ", 0), 0u) << whole;
  EXPECT_NE(whole.find(" needed, the file ends at 100"), std::string::npos) << whole;
  EXPECT_EQ(data_error_of([&] { read_int_pages(reader, 0, id, {{7299, 7300}}, scratch); }),
            "shard.parquet: row group 0: file truncated while open: bytes " + std::to_string(last.offset) + ".." +
                std::to_string(last.offset + last.size_bytes) + " needed, the file ends at 100");
}

TEST(ParquetColumnReader, MissingFileIsNamedAsTheCallerNamesIt) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { ParquetColumnReader::open(dir / "absent.parquet", {}, "shard-7.parquet"); }),
            "shard-7.parquet: cannot open: No such file or directory");
}

TEST(ParquetColumnReader, IndicesOutsideTheFileOrTheSelectionAreRefused) {
  ParquetColumnReader reader = ParquetColumnReader::open(testing::fixture(kTinyPages));
  std::vector<uint8_t> scratch;
  EXPECT_THROW(reader.read_row_group(1, scratch), std::out_of_range);
  EXPECT_THROW(reader.read_row_group(-1, scratch), std::out_of_range);
  EXPECT_THROW(reader.row_group_pages(1), std::out_of_range);
  EXPECT_THROW(reader.select_columns({999}), std::out_of_range);
  reader.select_columns({column_of(reader, "id")});
  EXPECT_THROW(reader.read_pages(0, column_of(reader, "bool_col"), std::vector<RowSpan>{{0, 1}}, scratch,
                                 [](const detail::ChunkLocation&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace feeder::parquet

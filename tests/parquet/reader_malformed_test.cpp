// Malformed and unsupported input: upstream bad_data files, encrypted files, corrupt checksums,
// hand-built files with one lie each (exact error texts), and a truncation sweep over every fixture.

#include <cstring>
#include <filesystem>

#include "feeder/error.h"
#include "feeder/io/file.h"
#include "formats/parquet/codec.h"
#include "formats/parquet/detail/thrift.h"
#include "parquet/reader_test_util.h"

namespace feeder::parquet {
namespace {

using testing::expect_data_error;
using testing::open_fixture;
using testing::values_of;

// Reads every column of a file, as `feeder convert` would.
void read_all(const ParquetFile& file) {
  for (int64_t c = 0; c < static_cast<int64_t>(file.metadata().columns.size()); ++c) file.read_column(c);
}

TEST(ParquetMalformed, InvalidPhysicalTypeInChunkMetadata) {
  expect_data_error([] { read_all(open_fixture("bad_data/PARQUET-1481.parquet")); }, "invalid/corrupt physical type -7");
}

TEST(ParquetMalformed, DictHeaderFileRejectedByChunkBounds) {
  // Its garbage metadata already places the 'name' chunk past the data region, so the footer
  // check rejects the file before any page is read (the negative dictionary count itself is
  // covered by ParquetCrafted.NegativeDictionaryEntryCount).
  expect_data_error([] { read_all(open_fixture("bad_data/ARROW-RS-GH-6229-DICTHEADER.parquet")); },
                    "row group 0: column 'name': chunk at offset 129 with 322 bytes lies outside the data region");
}

TEST(ParquetMalformed, NestedBadLevelsFilesRejectedAsNested) {
  for (const char* path : {"bad_data/ARROW-RS-GH-6229-LEVELS.parquet", "bad_data/ARROW-GH-45185.parquet"}) {
    expect_data_error([&] { read_all(open_fixture(path)); }, "nested schema not supported");
  }
}

TEST(ParquetMalformed, CorruptArrowFilesFailCleanly) {
  for (const char* path : {"bad_data/ARROW-GH-41321.parquet", "bad_data/ARROW-GH-41317.parquet"}) {
    expect_data_error([&] { read_all(open_fixture(path)); }, "parquet");
  }
}

TEST(ParquetMalformed, DictionaryIndexWidthZeroReadsZeros) {
  const ColumnData column = open_fixture("bad_data/ARROW-GH-43605.parquet").read_column(0);
  ASSERT_EQ(column.num_rows(), 21186);
  for (size_t i = 0; i < 21186; ++i) {
    ASSERT_TRUE(column.valid[i]) << i;
    ASSERT_EQ(values_of<int32_t>(column)[i], 0) << i;
  }
}

TEST(ParquetMalformed, RequiredColumnWithShortPlainData) {
  expect_data_error([] { read_all(open_fixture("bad_data/ARROW-GH-47662.parquet")); }, "PLAIN values: ");
}

TEST(ParquetMalformed, NationDictMalformedNumericColumnsReadStringColumnsFail) {
  const ParquetFile file = open_fixture("data/nation.dict-malformed.parquet");
  EXPECT_EQ(testing::int_sum_of<int32_t>(file.read_column("nation_key")), 300);
  EXPECT_EQ(testing::int_sum_of<int32_t>(file.read_column("region_key")), 50);
  expect_data_error([&] { file.read_column("name"); }, "(truncated data page)");
  expect_data_error([&] { file.read_column("comment_col"); }, "(truncated data page)");
}

TEST(ParquetMalformed, EncryptedFooter) {
  expect_data_error([] { open_fixture("data/uniform_encryption.parquet.encrypted"); }, "encrypted parquet not supported");
}

TEST(ParquetMalformed, EncryptedColumnsWithPlaintextFooter) {
  const ParquetFile file = open_fixture("data/encrypt_columns_plaintext_footer.parquet.encrypted");
  EXPECT_TRUE(file.metadata().encrypted_footer_plaintext);
  expect_data_error([&] { file.read_column("float_field"); }, "column 'float_field': column is encrypted");
  expect_data_error([&] { file.read_column("double_field"); }, "column 'double_field': column is encrypted");
}

TEST(ParquetMalformed, CorruptPageChecksumsDetected) {
  const ParquetFile v1 = open_fixture("data/datapage_v1-corrupt-checksum.parquet", true);
  expect_data_error([&] { v1.read_column("a"); }, "column 'a' page 0: page CRC mismatch");
  expect_data_error([&] { v1.read_column("b"); }, "column 'b' page 1: page CRC mismatch");
  const ParquetFile dict = open_fixture("data/rle-dict-uncompressed-corrupt-checksum.parquet", true);
  expect_data_error([&] { read_all(dict); }, "page 0: page CRC mismatch");
}

// A one-column file (REQUIRED or OPTIONAL INT32 'pixel12') assembled from page headers and a
// footer serialized through the same Thrift code the writer uses, so each test can plant one lie.
struct CraftedPage {
  format::PageHeader header;
  std::string body;
};

CraftedPage plain_page(const std::vector<int32_t>& values) {
  CraftedPage page;
  page.body.assign(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  page.header.type = format::PageType::DATA_PAGE;
  page.header.uncompressed_page_size = static_cast<int32_t>(page.body.size());
  page.header.compressed_page_size = static_cast<int32_t>(page.body.size());
  page.header.__isset.data_page_header = true;
  page.header.data_page_header.num_values = static_cast<int32_t>(values.size());
  page.header.data_page_header.encoding = format::Encoding::PLAIN;
  page.header.data_page_header.definition_level_encoding = format::Encoding::RLE;
  page.header.data_page_header.repetition_level_encoding = format::Encoding::RLE;
  return page;
}

CraftedPage dictionary_page(const std::vector<int32_t>& values) {
  CraftedPage page = plain_page(values);
  page.header.type = format::PageType::DICTIONARY_PAGE;
  page.header.__isset.data_page_header = false;
  page.header.__isset.dictionary_page_header = true;
  page.header.dictionary_page_header.num_values = static_cast<int32_t>(values.size());
  page.header.dictionary_page_header.encoding = format::Encoding::PLAIN;
  return page;
}

// An RLE_DICTIONARY data page: [bit width][RLE run of `count` x `index`].
CraftedPage index_page(int32_t num_values, uint8_t bit_width, uint8_t index) {
  CraftedPage page = plain_page({});
  page.body = std::string{static_cast<char>(bit_width), static_cast<char>(num_values << 1), static_cast<char>(index)};
  page.header.uncompressed_page_size = page.header.compressed_page_size = static_cast<int32_t>(page.body.size());
  page.header.data_page_header.num_values = num_values;
  page.header.data_page_header.encoding = format::Encoding::RLE_DICTIONARY;
  return page;
}

std::vector<uint8_t> build_file(const std::vector<CraftedPage>& pages, int64_t num_rows,
                                format::CompressionCodec::type codec = format::CompressionCodec::UNCOMPRESSED) {
  std::string bytes = "PAR1";
  int64_t dictionary_offset = 0;
  int64_t data_offset = 0;
  for (const CraftedPage& page : pages) {
    if (page.header.type == format::PageType::DICTIONARY_PAGE) {
      dictionary_offset = static_cast<int64_t>(bytes.size());
    } else if (data_offset == 0) {
      data_offset = static_cast<int64_t>(bytes.size());
    }
    bytes += detail::serialize_page_header(page.header) + page.body;
  }
  const int64_t chunk_start = dictionary_offset ? dictionary_offset : data_offset;
  format::FileMetaData meta;
  meta.version = 1;
  meta.num_rows = num_rows;
  meta.schema.resize(2);
  meta.schema[0].name = "schema";
  meta.schema[0].__set_num_children(1);
  meta.schema[1].name = "pixel12";
  meta.schema[1].__set_type(format::Type::INT32);
  meta.schema[1].__set_repetition_type(format::FieldRepetitionType::REQUIRED);
  meta.row_groups.resize(1);
  meta.row_groups[0].num_rows = num_rows;
  meta.row_groups[0].columns.resize(1);
  format::ColumnChunk& chunk = meta.row_groups[0].columns[0];
  chunk.file_offset = chunk_start;
  chunk.__isset.meta_data = true;
  format::ColumnMetaData& cm = chunk.meta_data;
  cm.type = format::Type::INT32;
  cm.encodings = {format::Encoding::PLAIN};
  cm.path_in_schema = {"pixel12"};
  cm.codec = codec;
  cm.num_values = num_rows;
  cm.total_compressed_size = static_cast<int64_t>(bytes.size()) - chunk_start;
  cm.total_uncompressed_size = cm.total_compressed_size;
  cm.data_page_offset = data_offset;
  if (dictionary_offset) cm.__set_dictionary_page_offset(dictionary_offset);
  const std::string footer = detail::serialize_file_metadata(meta);
  bytes += footer;
  const uint32_t footer_bytes = static_cast<uint32_t>(footer.size());
  bytes.append(reinterpret_cast<const char*>(&footer_bytes), 4);
  bytes += "PAR1";
  return {bytes.begin(), bytes.end()};
}

ParquetFile crafted(std::vector<uint8_t> bytes) { return ParquetFile::from_buffer(std::move(bytes), "crafted.parquet"); }

TEST(ParquetCrafted, WellFormedFileReads) {
  const ParquetFile file = crafted(build_file({dictionary_page({7, 9}), index_page(4, 1, 1)}, 4));
  EXPECT_EQ(values_of<int32_t>(file.read_column("pixel12")), (std::vector<int32_t>{9, 9, 9, 9}));
}

TEST(ParquetCrafted, DictionaryIndexOutOfRange) {
  const ParquetFile file = crafted(build_file({dictionary_page({7, 9}), index_page(4, 2, 3)}, 4));
  const std::string expected =
      "crafted.parquet: column 'pixel12' page 1: dictionary index 3 out of range (dictionary has 2 entries)";
  EXPECT_EQ(expect_data_error([&] { file.read_column(0); }, expected), expected);
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  EXPECT_EQ(expect_data_error([&] { read_parquet_images(file, options); }, expected), expected);
}

TEST(ParquetCrafted, NegativeDictionaryEntryCount) {
  std::vector<CraftedPage> pages = {dictionary_page({7, 9}), index_page(4, 1, 1)};
  pages[0].header.dictionary_page_header.num_values = -26;
  const std::string expected =
      "crafted.parquet: column 'pixel12' page 0: negative num_values in dictionary page header (-26)";
  EXPECT_EQ(expect_data_error([&] { crafted(build_file(pages, 4)).read_column(0); }, expected), expected);
}

TEST(ParquetCrafted, BitWidthAbove32) {
  const ParquetFile file = crafted(build_file({dictionary_page({7, 9}), index_page(4, 33, 0)}, 4));
  const std::string expected = "crafted.parquet: column 'pixel12' page 1: dictionary index bit width 33 is larger than 32";
  EXPECT_EQ(expect_data_error([&] { file.read_column(0); }, expected), expected);
}

TEST(ParquetCrafted, PageSizeLargerThanChunk) {
  std::vector<CraftedPage> pages = {plain_page({1, 2, 3, 4})};
  pages[0].header.compressed_page_size = 1000;
  const ParquetFile file = crafted(build_file(pages, 4));
  // The footer's chunk size comes from the honest bytes, so the header's 1000 cannot fit.
  const std::string expected =
      "crafted.parquet: column 'pixel12' page 0: page header declares 1000 bytes but only 16 are left in the column "
      "chunk (truncated data page)";
  EXPECT_EQ(expect_data_error([&] { file.read_column(0); }, expected), expected);
}

TEST(ParquetCrafted, PageValueCountLargerThanChunk) {
  std::vector<CraftedPage> pages = {plain_page({1, 2, 3, 4})};
  pages[0].header.data_page_header.num_values = 1 << 30;
  const std::string expected =
      "crafted.parquet: column 'pixel12' page 0: page declares 1073741824 values but 4 remain in the column chunk";
  EXPECT_EQ(expect_data_error([&] { crafted(build_file(pages, 4)).read_column(0); }, expected), expected);
}

TEST(ParquetCrafted, DecompressedSizeMismatch) {
  std::vector<CraftedPage> pages = {plain_page({1, 2, 3, 4})};
  const std::vector<uint8_t> raw(pages[0].body.begin(), pages[0].body.end());
  const std::vector<uint8_t> packed = compress(Codec::kSnappy, raw);
  pages[0].body.assign(packed.begin(), packed.end());
  pages[0].header.compressed_page_size = static_cast<int32_t>(packed.size());
  pages[0].header.uncompressed_page_size = 20;  // the truth is 16
  const ParquetFile file = crafted(build_file(pages, 4, format::CompressionCodec::SNAPPY));
  const std::string expected =
      "crafted.parquet: column 'pixel12' page 0: SNAPPY: decompressed size 16 does not match the declared 20 bytes";
  EXPECT_EQ(expect_data_error([&] { file.read_column(0); }, expected), expected);
}

TEST(ParquetCrafted, PixelOutOfRangeNamesColumnAndRow) {
  const ParquetFile file = crafted(build_file({plain_page({1, 300, 2, 3})}, 4));
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  const std::string expected = "crafted.parquet: column 'pixel12' row 1: value 300 out of range 0..255";
  EXPECT_EQ(expect_data_error([&] { read_parquet_images(file, options); }, expected), expected);
}

TEST(ParquetCrafted, DictionaryPixelOutOfRangeNamesColumnAndRow) {
  std::vector<CraftedPage> pages = {dictionary_page({5, 256}), index_page(4, 1, 0)};
  pages[1].body = std::string{1, 0x03, 0x0a};  // bit width 1, one bit-packed group: 0,1,0,1,...
  pages[1].header.uncompressed_page_size = pages[1].header.compressed_page_size = 3;
  const ParquetFile file = crafted(build_file(pages, 4));
  ParquetImageOptions options;
  options.shape = ImageShape{1, 1, 1};
  const std::string expected = "crafted.parquet: column 'pixel12' row 1: value 256 out of range 0..255";
  EXPECT_EQ(expect_data_error([&] { read_parquet_images(file, options); }, expected), expected);
}

TEST(ParquetCrafted, HugeRowCountRejectedBeforeAllocating) {
  const ParquetFile file = crafted(build_file({plain_page({1, 2, 3, 4})}, int64_t{1} << 40));
  expect_data_error([&] { file.read_column(0); }, "(ReaderOptions::max_decoded_bytes)");
  expect_data_error([&] { read_parquet_images(file); }, "exceed the limit");
}

TEST(ParquetCrafted, BadMagic) {
  std::vector<uint8_t> bytes = build_file({plain_page({1, 2, 3, 4})}, 4);
  bytes[0] = 'X';
  const std::string expected = "crafted.parquet: not a Parquet file: bad magic at the start (expected PAR1)";
  EXPECT_EQ(expect_data_error([&] { crafted(bytes); }, expected), expected);
}

TEST(ParquetCrafted, FooterLengthLargerThanFile) {
  std::vector<uint8_t> bytes = build_file({plain_page({1, 2, 3, 4})}, 4);
  const uint32_t lie = 1u << 20;
  std::memcpy(bytes.data() + bytes.size() - 8, &lie, 4);
  const std::string expected = "crafted.parquet: footer length 1048576 is larger than the file allows (" +
                               std::to_string(bytes.size() - 12) + " bytes between the magics)";
  EXPECT_EQ(expect_data_error([&] { crafted(bytes); }, expected), expected);
}

TEST(ParquetCrafted, CorruptFooterBytes) {
  std::vector<uint8_t> bytes = build_file({plain_page({1, 2, 3, 4})}, 4);
  uint32_t footer_bytes = 0;
  std::memcpy(&footer_bytes, bytes.data() + bytes.size() - 8, 4);
  // A list header claiming a huge element count: bounded by the footer size, not allocated.
  const size_t footer_start = bytes.size() - 8 - footer_bytes;
  for (size_t i = footer_start; i < bytes.size() - 8; ++i) bytes[i] = 0x19;
  expect_data_error([&] { crafted(bytes); }, "crafted.parquet: corrupt footer metadata");
}

// Every fixture cut at each sixteenth of its length must fail with a DataError: no crash, no
// hang, no huge allocation (the sanitizer build runs this too).
TEST(ParquetMalformed, TruncatedFixturesFailCleanly) {
  int64_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(testing::fixture(""))) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || (!path.ends_with(".parquet") && !path.ends_with(".encrypted"))) continue;
    const std::vector<uint8_t> whole = read_file_raw(entry.path());
    for (int k = 1; k < 16; ++k) {
      std::vector<uint8_t> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() * k / 16));
      bool threw = false;
      try {
        const ParquetFile file = ParquetFile::from_buffer(std::move(cut), path);
        read_all(file);
      } catch (const DataError&) {
        threw = true;
      }
      EXPECT_TRUE(threw) << path << " cut at " << k << "/16";
    }
    ++files;
  }
  EXPECT_GE(files, 60);
}

}  // namespace
}  // namespace feeder::parquet

// The Parquet writer: round trips through the reader for every layout and codec, the schema and
// metadata it writes, per-chunk statistics, page layout, and atomic output.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/io/file.h"
#include "formats/parquet/detail/thrift.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

using parquet::Codec;
using parquet::kImageShapeKey;
using parquet::parse_parquet_codec;
using parquet::parse_parquet_layout;
using parquet::ParquetLayout;
using parquet::ParquetWriteOptions;
using parquet::write_parquet;
using testing::TempDir;

const ImageShape kShape{3, 4, 5};  // not square: the shape must come back from the file's metadata

ParquetWriteOptions options_with(ParquetLayout layout, Codec codec, int64_t row_group_size) {
  ParquetWriteOptions options;
  options.layout = layout;
  options.codec = codec;
  options.row_group_size = row_group_size;
  return options;
}

// The footer as the Thrift structs, for fields the reader's summary does not expose.
parquet::format::FileMetaData read_footer(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_raw(path);
  EXPECT_GE(bytes.size(), 12u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "PAR1");
  EXPECT_EQ(std::string(bytes.end() - 4, bytes.end()), "PAR1");
  uint32_t footer_bytes = 0;
  std::memcpy(&footer_bytes, bytes.data() + bytes.size() - 8, 4);
  parquet::format::FileMetaData metadata;
  parquet::detail::read_file_metadata(bytes.data() + bytes.size() - 8 - footer_bytes, footer_bytes, metadata, path.string());
  return metadata;
}

template <typename T>
T plain_value(const std::string& bytes) {
  T value{};
  EXPECT_EQ(bytes.size(), sizeof(T));
  std::memcpy(&value, bytes.data(), std::min(bytes.size(), sizeof(T)));
  return value;
}

TEST(ParquetWriter, RoundTripsEveryLayoutAndCodec) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 37, true);
  for (const ParquetLayout layout : {ParquetLayout::kColumns, ParquetLayout::kImage}) {
    for (const Codec codec : {Codec::kZstd, Codec::kSnappy, Codec::kGzip, Codec::kLz4Raw, Codec::kBrotli, Codec::kUncompressed}) {
      SCOPED_TRACE(to_string(layout) + " " + parquet::to_string(codec));
      const std::filesystem::path path = dir / (to_string(layout) + "_" + parquet::to_string(codec) + ".parquet");
      write_parquet(store, path, options_with(layout, codec, 10));
      testing::expect_same_images(parquet::read_parquet_images(path), store);
      const parquet::ParquetFile file = parquet::ParquetFile::open(path);
      for (const parquet::RowGroupInfo& row_group : file.metadata().row_groups)
        for (const parquet::ColumnChunkInfo& chunk : row_group.columns) EXPECT_EQ(chunk.codec, codec);
    }
  }
}

TEST(ParquetWriter, UnlabeledStoreHasNoLabelColumn) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 12, false);
  for (const ParquetLayout layout : {ParquetLayout::kColumns, ParquetLayout::kImage}) {
    const std::filesystem::path path = dir / (to_string(layout) + ".parquet");
    write_parquet(store, path, options_with(layout, Codec::kZstd, 5));
    const parquet::ParquetFile file = parquet::ParquetFile::open(path);
    EXPECT_EQ(file.metadata().column_index("label"), -1);
    testing::expect_same_images(parquet::read_parquet_images(path), store);
  }
}

TEST(ParquetWriter, ColumnsLayoutIsLabelThenUint8Pixels) {
  TempDir dir;
  const std::filesystem::path path = dir / "columns.parquet";
  write_parquet(testing::make_store(kShape, 4, true), path);
  const parquet::FileMetadata metadata = parquet::ParquetFile::open(path).metadata();
  ASSERT_EQ(metadata.columns.size(), 1u + 60u);
  EXPECT_EQ(metadata.columns[0].name, "label");
  EXPECT_EQ(metadata.columns[0].physical_type, parquet::PhysicalType::kInt64);
  for (size_t pixel = 1; pixel <= 60; ++pixel) {
    const parquet::ColumnSchema& column = metadata.columns[pixel];
    EXPECT_EQ(column.name, "pixel" + std::to_string(pixel));
    EXPECT_EQ(column.physical_type, parquet::PhysicalType::kInt32);
    EXPECT_EQ(column.repetition, parquet::Repetition::kRequired);
    EXPECT_EQ(column.int_bit_width, 8);
    EXPECT_FALSE(column.int_signed);
    EXPECT_EQ(column.converted_type, std::optional<int32_t>(parquet::format::ConvertedType::UINT_8));
  }
}

TEST(ParquetWriter, ImageLayoutIsOneFixedLengthColumn) {
  TempDir dir;
  const std::filesystem::path path = dir / "image.parquet";
  write_parquet(testing::make_store(kShape, 4, true), path, options_with(ParquetLayout::kImage, Codec::kZstd, 100));
  const parquet::FileMetadata metadata = parquet::ParquetFile::open(path).metadata();
  ASSERT_EQ(metadata.columns.size(), 2u);
  EXPECT_EQ(metadata.columns[1].name, "image");
  EXPECT_EQ(metadata.columns[1].physical_type, parquet::PhysicalType::kFixedLenByteArray);
  EXPECT_EQ(metadata.columns[1].type_length_bytes, 60);
}

TEST(ParquetWriter, RecordsCreatorAndImageShape) {
  TempDir dir;
  const std::filesystem::path path = dir / "meta.parquet";
  write_parquet(testing::make_store(kShape, 4, true), path);
  const parquet::FileMetadata metadata = parquet::ParquetFile::open(path).metadata();
  EXPECT_EQ(metadata.created_by.rfind("feeder version ", 0), 0u) << metadata.created_by;
  EXPECT_EQ(metadata.num_rows, 4);
  const auto shape = std::find_if(metadata.key_values.begin(), metadata.key_values.end(),
                                  [](const parquet::KeyValue& kv) { return kv.key == kImageShapeKey; });
  ASSERT_NE(shape, metadata.key_values.end());
  EXPECT_EQ(shape->value, std::optional<std::string>("3x4x5"));
}

TEST(ParquetWriter, RowGroupsHoldRowGroupSizeRows) {
  TempDir dir;
  const std::filesystem::path path = dir / "groups.parquet";
  write_parquet(testing::make_store(kShape, 37, true), path, options_with(ParquetLayout::kColumns, Codec::kZstd, 10));
  const parquet::FileMetadata metadata = parquet::ParquetFile::open(path).metadata();
  std::vector<int64_t> rows;
  for (const parquet::RowGroupInfo& row_group : metadata.row_groups) rows.push_back(row_group.num_rows);
  EXPECT_EQ(rows, (std::vector<int64_t>{10, 10, 10, 7}));
}

TEST(ParquetWriter, StatisticsAreTheChunkMinMaxAndNoNulls) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 37, true);
  const std::filesystem::path path = dir / "stats.parquet";
  write_parquet(store, path, options_with(ParquetLayout::kColumns, Codec::kZstd, 10));
  const parquet::format::FileMetaData footer = read_footer(path);
  ASSERT_EQ(footer.row_groups.size(), 4u);
  ASSERT_EQ(footer.column_orders.size(), 61u);  // TYPE_ORDER: readers may trust min_value/max_value
  int64_t first_row = 0;
  for (const parquet::format::RowGroup& row_group : footer.row_groups) {
    const auto labels = store.labels().subspan(static_cast<size_t>(first_row), static_cast<size_t>(row_group.num_rows));
    const parquet::format::Statistics& label_stats = row_group.columns[0].meta_data.statistics;
    EXPECT_EQ(label_stats.null_count, 0);
    EXPECT_EQ(plain_value<int64_t>(label_stats.min_value), *std::min_element(labels.begin(), labels.end()));
    EXPECT_EQ(plain_value<int64_t>(label_stats.max_value), *std::max_element(labels.begin(), labels.end()));
    for (int64_t pixel = 0; pixel < store.image_bytes(); ++pixel) {
      int32_t min_value = 255, max_value = 0;
      for (int64_t row = first_row; row < first_row + row_group.num_rows; ++row) {
        min_value = std::min<int32_t>(min_value, store.image(row)[pixel]);
        max_value = std::max<int32_t>(max_value, store.image(row)[pixel]);
      }
      const parquet::format::Statistics& stats = row_group.columns[static_cast<size_t>(pixel + 1)].meta_data.statistics;
      ASSERT_TRUE(stats.__isset.min_value && stats.__isset.max_value && stats.__isset.null_count);
      EXPECT_EQ(stats.null_count, 0);
      EXPECT_EQ(plain_value<int32_t>(stats.min_value), min_value) << "pixel" << pixel + 1;
      EXPECT_EQ(plain_value<int32_t>(stats.max_value), max_value) << "pixel" << pixel + 1;
    }
    first_row += row_group.num_rows;
  }
}

TEST(ParquetWriter, ImageStatisticsAreLexicographicMinMax) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 25, false);
  const std::filesystem::path path = dir / "image_stats.parquet";
  ParquetWriteOptions options = options_with(ParquetLayout::kImage, Codec::kSnappy, 100);
  options.page_size_bytes = 200;  // three images a page: the chunk min/max spans pages
  write_parquet(store, path, options);
  const parquet::format::FileMetaData footer = read_footer(path);
  std::vector<std::string> images;
  for (int64_t row = 0; row < store.size(); ++row)
    images.emplace_back(reinterpret_cast<const char*>(store.image(row)), static_cast<size_t>(store.image_bytes()));
  const parquet::format::Statistics& stats = footer.row_groups.at(0).columns.at(0).meta_data.statistics;
  EXPECT_EQ(stats.min_value, *std::min_element(images.begin(), images.end()));
  EXPECT_EQ(stats.max_value, *std::max_element(images.begin(), images.end()));
}

TEST(ParquetWriter, ColumnsAreDictionaryEncodedInV1Pages) {
  TempDir dir;
  const std::filesystem::path path = dir / "pages.parquet";
  write_parquet(testing::make_store(kShape, 37, true), path, options_with(ParquetLayout::kColumns, Codec::kZstd, 20));
  const parquet::ParquetFile file = parquet::ParquetFile::open(path);
  for (int64_t row_group = 0; row_group < 2; ++row_group) {
    for (int64_t column = 0; column < 61; ++column) {
      const parquet::ChunkPageSummary pages = file.summarize_pages(row_group, column);
      EXPECT_EQ(pages.num_dictionary_pages, 1);
      EXPECT_EQ(pages.num_data_pages_v1, 1);
      EXPECT_EQ(pages.num_data_pages_v2, 0);
      EXPECT_EQ(pages.data_encodings, (std::vector<parquet::Encoding>{parquet::Encoding::kRleDictionary}));
    }
  }
}

TEST(ParquetWriter, PagesSplitAtThePageSize) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 37, true);
  for (const ParquetLayout layout : {ParquetLayout::kColumns, ParquetLayout::kImage}) {
    const std::filesystem::path path = dir / (to_string(layout) + ".parquet");
    ParquetWriteOptions options = options_with(layout, Codec::kGzip, 1000);
    options.page_size_bytes = 60;  // image layout: one image a page; columns: 15 values a page
    write_parquet(store, path, options);
    const parquet::ParquetFile file = parquet::ParquetFile::open(path);
    const parquet::ChunkPageSummary pages = file.summarize_pages(0, 1);
    EXPECT_EQ(pages.num_data_pages_v1, layout == ParquetLayout::kImage ? 37 : 3) << to_string(layout);
    testing::expect_same_images(parquet::read_parquet_images(file), store);
  }
}

TEST(ParquetWriter, ManyDistinctLabelsFallBackToPlain) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 2, 2}, 5000, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row * 1000003;
  const std::filesystem::path path = dir / "labels.parquet";
  write_parquet(store, path);
  const parquet::ParquetFile file = parquet::ParquetFile::open(path);
  const parquet::ChunkPageSummary pages = file.summarize_pages(0, 0);
  EXPECT_EQ(pages.num_dictionary_pages, 0);
  EXPECT_EQ(pages.data_encodings, (std::vector<parquet::Encoding>{parquet::Encoding::kPlain}));
  testing::expect_same_images(parquet::read_parquet_images(file), store);
}

TEST(ParquetWriter, EveryThreadCountWritesTheSameBytes) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 10, 10}, 50, true);
  std::vector<std::vector<uint8_t>> files;
  for (const int num_threads : {1, 2, 3, 8}) {
    ParquetWriteOptions options;
    options.num_threads = num_threads;
    options.row_group_size = 20;
    const std::filesystem::path path = dir / ("threads" + std::to_string(num_threads) + ".parquet");
    write_parquet(store, path, options);
    files.push_back(read_file_raw(path));
  }
  for (const std::vector<uint8_t>& file : files) EXPECT_EQ(file, files[0]);
}

TEST(ParquetWriter, EmptyStoreWritesAReadableFile) {
  TempDir dir;
  const std::filesystem::path path = dir / "empty.parquet";
  write_parquet(ImageStore(kShape, 0, true), path);
  const parquet::ParquetFile file = parquet::ParquetFile::open(path);
  EXPECT_EQ(file.metadata().num_rows, 0);
  EXPECT_TRUE(file.metadata().row_groups.empty());
}

TEST(ParquetWriter, FailedWriteLeavesNothingBehind) {
  TempDir dir;
  // The target is a directory: everything is written, then the rename into place fails.
  const std::filesystem::path target = dir / "taken.parquet";
  std::filesystem::create_directory(target);
  EXPECT_THROW(write_parquet(testing::make_store(kShape, 5, true), target), DataError);
  EXPECT_TRUE(std::filesystem::is_directory(target));
  std::vector<std::filesystem::path> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) left.push_back(entry.path().filename());
  EXPECT_EQ(left, (std::vector<std::filesystem::path>{"taken.parquet"}));
}

TEST(ParquetWriter, InvalidOptionsLeaveTheOldFileUntouched) {
  TempDir dir;
  const std::filesystem::path path = dir / "old.parquet";
  write_file_atomically(path, "old contents");
  ParquetWriteOptions options;
  options.row_group_size = 0;
  try {
    write_parquet(testing::make_store(kShape, 5, true), path, options);
    FAIL() << "expected OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(), "parquet writer: row group size must be positive, got 0");
  }
  const std::vector<uint8_t> contents = read_file_raw(path);
  EXPECT_EQ(std::string(contents.begin(), contents.end()), "old contents");
}

// Row groups of one image of 785 columns held 24 GB while 60,000 of them were written: a file of
// more column chunks than a reader can hold is refused before anything is written.
TEST(ParquetWriter, RejectsMoreColumnChunksThanAFileMayHave) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 28, 28}, 3000, true);  // 785 columns
  ParquetWriteOptions options;
  options.row_group_size = 1;
  try {
    write_parquet(store, dir / "groups.parquet", options);
    FAIL() << "expected OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(),
                 "parquet writer: 3000 rows in row groups of 1 make 3000 row groups of 785 columns, more than the "
                 "2097152 column chunks a file may have (each costs memory to write and to read): use row groups of "
                 "at least 2 rows, or the image layout (one column for all pixels)");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "groups.parquet"));
  options.layout = ParquetLayout::kImage;  // 2 columns: 6000 chunks
  write_parquet(store, dir / "groups.parquet", options);
  EXPECT_EQ(parquet::ParquetFile::open(dir / "groups.parquet").metadata().row_groups.size(), 3000u);
}

TEST(ParquetWriter, RejectsPageSizesTheHeaderCannotHold) {
  TempDir dir;
  for (const int64_t page_size_bytes : {int64_t{0}, (int64_t{1} << 30) + 1}) {
    ParquetWriteOptions options;
    options.page_size_bytes = page_size_bytes;
    EXPECT_THROW(write_parquet(testing::make_store(kShape, 5, true), dir / "pages.parquet", options), OptionsError);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "pages.parquet"));
}

TEST(ParquetWriter, RejectsNegativeThreadCount) {
  TempDir dir;
  ParquetWriteOptions options;
  options.num_threads = -1;
  try {
    write_parquet(testing::make_store(kShape, 5, true), dir / "threads.parquet", options);
    FAIL() << "expected OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(), "parquet writer: number of threads must be 0 (one per core) or positive, got -1");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "threads.parquet"));
}

// LZ4's high-compression levels write smaller pages that read back the same; a level a codec does
// not take is refused, where it used to be ignored.
TEST(ParquetWriter, Lz4LevelsCompressHarderAndLevelsOutOfRangeAreRefused) {
  TempDir dir;
  const ImageStore store = testing::make_store(ImageShape{1, 28, 28}, 400, true);
  ParquetWriteOptions options = options_with(ParquetLayout::kImage, Codec::kLz4Raw, 400);
  write_parquet(store, dir / "fast.parquet", options);
  options.compression_level = 9;
  write_parquet(store, dir / "hc.parquet", options);
  testing::expect_same_images(parquet::read_parquet_images(dir / "hc.parquet"), store);
  const auto compressed = [](const std::filesystem::path& path) {
    int64_t total = 0;
    const parquet::ParquetFile file = parquet::ParquetFile::open(path);
    for (const parquet::RowGroupInfo& group : file.metadata().row_groups)
      for (const parquet::ColumnChunkInfo& chunk : group.columns) total += chunk.total_compressed_size_bytes;
    return total;
  };
  EXPECT_LT(compressed(dir / "hc.parquet"), compressed(dir / "fast.parquet"));

  const std::vector<std::tuple<Codec, int, std::string>> refused = {
      {Codec::kSnappy, 3, "parquet writer: codec SNAPPY has no compression levels (got level 3)"},
      {Codec::kUncompressed, 1, "parquet writer: codec UNCOMPRESSED has no compression levels (got level 1)"},
      {Codec::kLz4Raw, 13, "parquet writer: codec LZ4_RAW takes levels 1 to 12, got 13"},
      {Codec::kGzip, 10, "parquet writer: codec GZIP takes levels 1 to 9, got 10"},
      {Codec::kBrotli, -1, "parquet writer: codec BROTLI takes levels 1 to 11, got -1"},
      {Codec::kZstd, 23, "parquet writer: codec ZSTD takes levels 1 to 22, got 23"},
  };
  for (const auto& [codec, level, message] : refused) {
    ParquetWriteOptions bad = options_with(ParquetLayout::kImage, codec, 400);
    bad.compression_level = level;
    try {
      write_parquet(store, dir / "refused.parquet", bad);
      ADD_FAILURE() << "expected OptionsError for " << message;
    } catch (const OptionsError& error) {
      EXPECT_EQ(std::string(error.what()), message);
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "refused.parquet"));
  }
}

TEST(ParquetImageReader, ReadsTheSameImagesForEveryThreadCount) {
  TempDir dir;
  const ImageStore store = testing::make_store(kShape, 40, true);
  write_parquet(store, dir / "threads.parquet", options_with(ParquetLayout::kColumns, Codec::kZstd, 16));
  for (const int num_threads : {1, 2, 7, 0}) {
    parquet::ParquetImageOptions options;
    options.num_threads = num_threads;
    testing::expect_same_images(parquet::read_parquet_images(dir / "threads.parquet", options), store);
  }
}

TEST(ParquetImageReader, RejectsNegativeThreadCount) {
  TempDir dir;
  write_parquet(testing::make_store(kShape, 5, true), dir / "threads.parquet", {});
  parquet::ParquetImageOptions options;
  options.num_threads = -3;
  try {
    parquet::read_parquet_images(dir / "threads.parquet", options);
    FAIL() << "expected OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(), "parquet image reader: num_threads must be 0 (one per core) or positive, got -3");
  }
}

TEST(ParquetWriter, RejectsHadoopLz4) {
  TempDir dir;
  ParquetWriteOptions options;
  options.codec = Codec::kLz4;
  EXPECT_THROW(write_parquet(testing::make_store(kShape, 5, true), dir / "lz4.parquet", options), OptionsError);
  EXPECT_FALSE(std::filesystem::exists(dir / "lz4.parquet"));
}

TEST(ParquetWriter, ParsesCommandLineNames) {
  EXPECT_EQ(parse_parquet_codec("lz4"), Codec::kLz4Raw);
  EXPECT_EQ(parse_parquet_codec("none"), Codec::kUncompressed);
  // Any case, and the names the reports print (LZ4 was refused as unknown).
  EXPECT_EQ(parse_parquet_codec("LZ4"), Codec::kLz4Raw);
  EXPECT_EQ(parse_parquet_codec("LZ4_RAW"), Codec::kLz4Raw);
  EXPECT_EQ(parse_parquet_codec("Zstd"), Codec::kZstd);
  EXPECT_EQ(parse_parquet_codec("UNCOMPRESSED"), Codec::kUncompressed);
  EXPECT_EQ(parse_parquet_layout("image"), ParquetLayout::kImage);
  try {
    parse_parquet_codec("zip");
    FAIL() << "expected OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(), "unknown Parquet codec 'zip' (use zstd, snappy, gzip, lz4, brotli or none)");
  }
  EXPECT_THROW(parse_parquet_layout("rows"), OptionsError);
}

}  // namespace
}  // namespace feeder

// What `feeder convert` reads encoded images through: a folder's files by row, a stream's blocks in
// order or through a spill file in any order, each giving the same images and labels; and
// --max-side, which re-encodes only the images over the limit; and a pixel set as PNGs (--layout png).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_rows.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/max_side.h"
#include "formats/test_files.h"
#include "image/detail/jpeg_encoder.h"
#include "image/test_pictures.h"

namespace feeder {
namespace {

using testing::TempDir;
using testing::write_bytes;

// 3 classes of 40 pictures: 120 files, two blocks of a streamed folder and a bit.
void write_folder(const std::filesystem::path& root) {
  for (int label = 0; label < 3; ++label) {
    const auto class_dir = root / ("class" + std::to_string(label));
    std::filesystem::create_directories(class_dir);
    for (int i = 0; i < 40; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "%03d.png", i);
      write_bytes(class_dir / name, png_of(6 + i % 9, 5 + i % 7, label * 100 + i));
    }
  }
}

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> rows;
  for (int64_t i = first; i < last; ++i) rows.push_back(i);
  return rows;
}

void expect_same_rows(const EncodedImageSource& got, const RandomAccessSource& reference, std::span<const int64_t> rows) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const SampleView want = reference.sample(rows[r]);
    const SampleView have = got.sample(static_cast<int64_t>(r));
    ASSERT_TRUE(std::equal(have.bytes.begin(), have.bytes.end(), want.bytes.begin(), want.bytes.end())) << r;
    EXPECT_EQ(have.label, want.label);
    EXPECT_EQ(got.sample_name(static_cast<int64_t>(r)), reference.sample_name(rows[r]));
  }
}

TEST(EncodedRows, AFoldersRowsAreItsFilesInAnyOrder) {
  TempDir dir;
  write_folder(dir.path());
  const ImageFolder held = open_image_folder(dir.path());
  auto reader = folder_row_reader(list_image_folder(dir.path()), dir.path().string(), 2);
  EXPECT_EQ(reader->size(), 120);
  EXPECT_EQ(reader->encoded_bytes(), held.encoded_bytes);
  const std::vector<int64_t> order = epoch_order(120, true, 7, 0);
  expect_same_rows(*reader->read(std::span<const int64_t>(order).first(50)), *random_access(*held.source),
                   std::span<const int64_t>(order).first(50));
  EXPECT_EQ(reader->labels_seen().size(), 3u);
  const std::vector<int64_t> outside = {3, 120};
  EXPECT_THROW(reader->read(outside), std::out_of_range);
}

// feeder convert copied such files into the shards without a word; they failed only in training.
TEST(EncodedRows, FilesThatAreNotImagesAreCountedWithTheirErrors) {
  TempDir dir;
  write_folder(dir.path());
  write_bytes(dir.path() / "class1" / "text.jpg", std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o'});
  write_bytes(dir.path() / "class2" / "empty.png", std::vector<uint8_t>{});
  // A JPEG cut short after its headers, which every decode refuses (and one missing only its end
  // marker, which PIL refuses too).
  std::vector<uint8_t> pixels(64 * 48 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 251);
  std::vector<uint8_t> jpeg = detail::encode_jpeg(pixels.data(), 64, 48, 3, 90);
  write_bytes(dir.path() / "class2" / "whole.jpg", jpeg);
  jpeg.resize(jpeg.size() - 2);
  write_bytes(dir.path() / "class2" / "no-end.jpg", jpeg);
  auto reader = folder_row_reader(list_image_folder(dir.path()), dir.path().string(), 2);
  std::vector<int64_t> all(static_cast<size_t>(reader->size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  EXPECT_EQ(reader->read(all)->size(), 124);  // written as they are
  EXPECT_EQ(reader->unreadable(), 3);
  ASSERT_EQ(reader->first_unreadable().size(), 3u);
  EXPECT_EQ(reader->first_unreadable()[0], (dir.path() / "class1" / "text.jpg").string() +
                                               ": not a JPEG, PNG or WebP image (its first bytes are no image "
                                               "signature; 5 bytes)");
  EXPECT_EQ(reader->first_unreadable()[1], (dir.path() / "class2" / "empty.png").string() + ": empty (0 bytes), not an image");
  EXPECT_EQ(reader->first_unreadable()[2], (dir.path() / "class2" / "no-end.jpg").string() +
                                               ": bad JPEG: Premature end of JPEG file (it ends before its "
                                               "end-of-image marker)");
}

// Images of formats feeder does not decode are left out as torchvision would not leave them out:
// counted and named (the first few, sorted, the same ones every time), apart from other files.
TEST(EncodedRows, ImagesOfFormatsNotDecodedAreCountedAndNamed) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "class1");
  std::filesystem::create_directories(dir.path() / "class2");
  write_bytes(dir.path() / "class1" / "a.png", png_of(4, 4, 1));
  write_bytes(dir.path() / "class2" / "b.png", png_of(4, 4, 2));
  for (const char* name : {"class2/z.tif", "class1/y.bmp", "class2/x.ppm", "class1/w.tiff"})
    write_bytes(dir.path() / name, std::vector<uint8_t>{'B', 'M'});
  write_bytes(dir.path() / "class1" / "notes.txt", std::vector<uint8_t>{'h', 'i'});
  const ImageFolderListing listing = list_image_folder(dir.path());
  EXPECT_EQ(listing.files.size(), 2u);
  EXPECT_EQ(listing.skipped_other, 1);
  EXPECT_EQ(listing.skipped_unsupported, 4);
  const std::string root = dir.path().string();
  EXPECT_EQ(listing.first_unsupported,
            (std::vector<std::string>{root + "/class1/w.tiff", root + "/class1/y.bmp", root + "/class2/x.ppm"}));
  EXPECT_EQ(describe_unsupported(listing.skipped_unsupported, listing.first_unsupported),
            "4 images of formats feeder does not decode (the first: " + root + "/class1/w.tiff, " + root +
                "/class1/y.bmp, " + root + "/class2/x.ppm)");
  const ImageFolder folder = open_image_folder(dir.path());
  EXPECT_EQ(folder.first_unsupported, listing.first_unsupported);
}

TEST(EncodedRows, AStreamGivesItsRowsInOrderAndThroughASpillFileInAnyOrder) {
  TempDir dir;
  write_folder(dir.path() / "folder");
  // The folder streamed (a budget smaller than its files): blocks of 64 files in a mixed order.
  const ImageFolder streamed = open_image_folder(dir.path() / "folder", 0, 1000);
  ASSERT_TRUE(streamed.streaming);
  ASSERT_EQ(streamed.source->num_blocks(), 2);
  // The reference: every block read as it is.
  const auto reference_images = read_all_blocks(*streamed.source);
  const EncodedImageSource& reference = *reference_images;

  // In order, in pieces that straddle the blocks.
  auto in_order = stream_row_reader(streamed.source, streamed.encoded_bytes, false, dir.path());
  for (const auto& [first, last] : {std::pair<int64_t, int64_t>{0, 50}, {50, 70}, {70, 120}}) {
    const std::vector<int64_t> rows = range(first, last);
    expect_same_rows(*in_order->read(rows), reference, rows);
  }
  const std::vector<int64_t> skip = {0};
  EXPECT_THROW(in_order->read(skip), OptionsError);  // a stream does not go back

  // In any order, through the spill file, which is never seen in the directory.
  int64_t progress_calls = 0;
  auto any_order = stream_row_reader(streamed.source, streamed.encoded_bytes, true, dir.path(),
                                     [&](int64_t, int64_t) { ++progress_calls; });
  const std::vector<int64_t> order = epoch_order(120, true, 3, 0);
  for (size_t first = 0; first < order.size(); first += 45) {
    const auto rows = std::span<const int64_t>(order).subspan(first, std::min<size_t>(45, order.size() - first));
    expect_same_rows(*any_order->read(rows), reference, rows);
  }
  EXPECT_EQ(progress_calls, 2);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename(), "folder") << "left behind: " << entry.path();
}

TEST(EncodedRows, ASpillFileThatCannotBeMadeIsNamed) {
  TempDir dir;
  write_folder(dir.path() / "folder");
  const ImageFolder streamed = open_image_folder(dir.path() / "folder", 0, 1000);
  auto reader = stream_row_reader(streamed.source, streamed.encoded_bytes, true, dir.path() / "missing");
  const std::vector<int64_t> rows = {5};
  try {
    reader->read(rows);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing: cannot create a spill file"), std::string::npos) << e.what();
  }
}

TEST(MaxSide, OnlyImagesOverTheLimitAreReencodedToIt) {
  MaxSideOptions options;
  options.max_side = 32;
  options.quality = 95;
  const std::vector<uint8_t> small = png_of(32, 20, 1);
  EXPECT_TRUE(limit_image_side(small, "small", options).empty());  // at the limit: kept
  const std::vector<uint8_t> wide = png_of(100, 41, 2);
  const std::vector<uint8_t> smaller = limit_image_side(wide, "wide", options);
  const ImageHeader header = read_image_header(smaller, "smaller");
  EXPECT_EQ(header.format, ImageFormat::kJpeg);
  EXPECT_EQ(header.width, 32);
  EXPECT_EQ(header.height, 13);  // 41 * 32 / 100 = 13.12
  EXPECT_EQ(header.channels, 3);
  // The same bytes every time (a pure function), and a set keeps its other images byte for byte.
  EXPECT_EQ(limit_image_side(wide, "wide", options), smaller);
  const EncodedImageSource set("set", [&] {
    std::vector<uint8_t> bytes(small);
    bytes.insert(bytes.end(), wide.begin(), wide.end());
    return bytes;
  }(), {0, static_cast<int64_t>(small.size()), static_cast<int64_t>(small.size() + wide.size())}, {4, 5}, {"a", "b"}, true);
  MaxSideStats stats;
  const auto limited = limit_image_sides(set, options, stats);
  EXPECT_EQ(stats.reencoded, 1);
  EXPECT_EQ(stats.bytes_before, static_cast<int64_t>(wide.size()));
  EXPECT_EQ(stats.bytes_after, static_cast<int64_t>(smaller.size()));
  const SampleView first = limited->sample(0), second = limited->sample(1);
  EXPECT_TRUE(std::equal(first.bytes.begin(), first.bytes.end(), small.begin(), small.end()));
  EXPECT_TRUE(std::equal(second.bytes.begin(), second.bytes.end(), smaller.begin(), smaller.end()));
  EXPECT_EQ(first.label, 4);
  EXPECT_EQ(second.label, 5);

  std::vector<uint8_t> cut(wide.begin(), wide.begin() + static_cast<std::ptrdiff_t>(wide.size() / 2));
  EXPECT_THROW(limit_image_side(cut, "cut", options), DataError);  // over the limit, and does not decode
  const std::vector<uint8_t> text = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  EXPECT_TRUE(limit_image_side(text, "text", options).empty());  // not an image: kept, as without a limit
  // In a set, an image that does not decode is kept as it is and counted, with its error.
  const EncodedImageSource damaged("damaged", [&] {
    std::vector<uint8_t> bytes(cut);
    bytes.insert(bytes.end(), text.begin(), text.end());
    bytes.insert(bytes.end(), wide.begin(), wide.end());
    return bytes;
  }(), {0, static_cast<int64_t>(cut.size()), static_cast<int64_t>(cut.size() + text.size()),
       static_cast<int64_t>(cut.size() + text.size() + wide.size())}, {1, 2, 3}, {"cut", "text", "wide"}, true);
  MaxSideStats damaged_stats;
  const auto kept = limit_image_sides(damaged, options, damaged_stats);
  EXPECT_EQ(damaged_stats.reencoded, 1);
  EXPECT_EQ(damaged_stats.undecodable, 1);
  ASSERT_EQ(damaged_stats.first_undecodable.size(), 1u);
  EXPECT_EQ(damaged_stats.first_undecodable[0].rfind("cut: ", 0), 0u) << damaged_stats.first_undecodable[0];
  EXPECT_TRUE(std::equal(kept->sample(0).bytes.begin(), kept->sample(0).bytes.end(), cut.begin(), cut.end()));
  EXPECT_TRUE(std::equal(kept->sample(1).bytes.begin(), kept->sample(1).bytes.end(), text.begin(), text.end()));
  options.quality = 0;
  EXPECT_THROW(limit_image_side(wide, "wide", options), OptionsError);
  options.quality = 90;
  options.max_side = 65501;  // more than a JPEG can hold
  EXPECT_THROW(limit_image_side(wide, "wide", options), OptionsError);
}

TEST(MaxSide, ALargeReencodedImageGrowsItsOutputAndDecodes) {
  // Noise at quality 100: hundreds of KB of JPEG, so the encoder's output grows several times.
  MaxSideOptions options;
  options.max_side = 599;
  options.quality = 100;
  const std::vector<uint8_t> smaller = limit_image_side(png_of(600, 400, 9), "noise", options);
  ASSERT_GT(smaller.size(), size_t{256} << 10);
  std::vector<uint8_t> pixels;
  const ImageHeader header = decode_image(smaller, 3, "smaller", pixels);
  EXPECT_EQ(header.width, 599);
  EXPECT_EQ(header.height, 399);  // 400 * 599 / 600 = 399.33
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// Row groups of encoded images written by feeder's writer: 200 rows, over kEncodedWholeRows, in one
// page (a page is the smallest piece: the row group streams whole) or in small pages (pieces of at
// most kEncodedPieceRows rows); either way every image once, as written.
TEST(EncodedPieces, ARowGroupOfOnePageStreamsWholeAndSmallPagesInPieces) {
  TempDir dir;
  const auto images = pictures(200);
  std::vector<int64_t> rows(200);
  for (int64_t i = 0; i < 200; ++i) rows[static_cast<size_t>(i)] = i;
  for (const int64_t page_bytes : {int64_t{1} << 30, int64_t{4096}}) {
    SCOPED_TRACE(page_bytes);
    const auto path = dir / ("set-" + std::to_string(page_bytes) + ".parquet");
    parquet::ParquetWriteOptions options;
    options.row_group_size = 200;
    options.page_size_bytes = page_bytes;
    parquet::write_encoded_parquet(*images, rows, path, options);
    const auto source = open_parquet_source(open_sharded_dataset(path.string()));
    if (page_bytes > 4096) {
      EXPECT_EQ(source->num_blocks(), 1);
    } else {
      EXPECT_GE(source->num_blocks(), 200 / kEncodedPieceRows);
      for (int64_t b = 0; b < source->num_blocks(); ++b) EXPECT_LE(source->block_rows(b), kEncodedPieceRows);
    }
    std::vector<uint8_t> scratch;
    for (int64_t b = 0; b < source->num_blocks(); ++b) {
      const int64_t count = source->block_rows(b);
      const int64_t capacity = source->block_bytes(b) - count * 16;
      std::vector<uint8_t> block(static_cast<size_t>(capacity));
      std::vector<int64_t> ends(static_cast<size_t>(count)), labels(static_cast<size_t>(count));
      source->read_block(b, scratch, {.payload = block.data(), .capacity = capacity, .ends = ends.data(), .labels = labels.data()});
      EXPECT_LE(static_cast<int64_t>(scratch.size()), source->max_read_bytes());
      for (int64_t r = 0; r < count; ++r) {
        const int64_t row = source->block_starts()[static_cast<size_t>(b)] + r;
        const SampleView want = images->sample(row);
        const int64_t begin = r == 0 ? 0 : ends[static_cast<size_t>(r) - 1];
        ASSERT_TRUE(std::equal(want.bytes.begin(), want.bytes.end(), block.begin() + begin,
                               block.begin() + ends[static_cast<size_t>(r)])) << row;
        EXPECT_EQ(labels[static_cast<size_t>(r)], want.label);
      }
    }
  }
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// A pixel set of `count` images, pixels a function of (image, channel, row, column).
std::shared_ptr<const ImageStore> pixel_set(const ImageShape& shape, int64_t count) {
  auto store = std::make_shared<ImageStore>(shape, count, true);
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* image = store->pixels().data() + i * store->image_bytes();
    for (int64_t p = 0; p < shape.num_pixels(); ++p) image[p] = static_cast<uint8_t>((i * 37 + p * 11) % 251);
    store->labels()[static_cast<size_t>(i)] = i % 5;
  }
  return store;
}

TEST(PngRows, EachImageIsALosslessPngOfItsPixelsInterleaved) {
  for (const ImageShape shape : {ImageShape{1, 7, 5}, ImageShape{3, 4, 6}}) {
    const std::shared_ptr<const ImageStore> store = pixel_set(shape, 9);
    const std::unique_ptr<EncodedRowReader> reader = png_row_reader(store, "set", 2);
    ASSERT_EQ(reader->size(), 9);
    EXPECT_TRUE(reader->labeled());
    EXPECT_GT(reader->encoded_bytes(), 0);
    const std::vector<int64_t> rows = {8, 0, 3};
    const std::shared_ptr<const EncodedImageSource> images = reader->read(rows);
    ASSERT_EQ(images->size(), 3);
    EXPECT_EQ(reader->unreadable(), 0);
    for (size_t k = 0; k < rows.size(); ++k) {
      const SampleView sample = images->sample(static_cast<int64_t>(k));
      EXPECT_EQ(sample.label, rows[k] % 5);
      EXPECT_EQ(images->sample_name(static_cast<int64_t>(k)), "set: image " + std::to_string(rows[k]));
      std::vector<uint8_t> decoded;
      const ImageHeader header = decode_image(sample.bytes, static_cast<int>(shape.channels), "png", decoded);
      ASSERT_EQ(header.width, shape.width);
      ASSERT_EQ(header.height, shape.height);
      const uint8_t* image = store->pixels().data() + rows[k] * store->image_bytes();
      const int64_t plane = shape.height * shape.width;
      for (int64_t p = 0; p < plane; ++p)
        for (int64_t c = 0; c < shape.channels; ++c)
          ASSERT_EQ(decoded[static_cast<size_t>(p * shape.channels + c)], image[c * plane + p]) << p << " " << c;
    }
  }
}

TEST(PngRows, PixelsAPngCannotHoldAreRefused) {
  EXPECT_THROW(png_row_reader(pixel_set(ImageShape{2, 3, 3}, 2), "two"), OptionsError);
  auto floats = std::make_shared<ImageStore>(ImageShape{1, 2, 2}, 1, std::shared_ptr<uint8_t>(new uint8_t[16](), std::default_delete<uint8_t[]>()),
                                             std::vector<int64_t>{0}, true, PixelType::kFloat32);
  EXPECT_THROW(png_row_reader(floats, "floats"), OptionsError);
}

}  // namespace
}  // namespace feeder

namespace feeder {
namespace {

// Encoded images held in memory are a block source too: read as blocks, they are the samples
// sample(i) gives, back to back, with the bytes block_bytes said.
TEST(EncodedImageSource, ItsBlocksAreItsSamplesBackToBack) {
  EncodedImagesBuilder builder;
  for (int64_t i = 0; i < 5; ++i) {
    uint8_t* bytes = builder.add(3 + i, i % 2, "image" + std::to_string(i));
    for (int64_t k = 0; k < 3 + i; ++k) bytes[k] = static_cast<uint8_t>(10 * i + k);
  }
  const std::shared_ptr<const EncodedImageSource> images = builder.finish("held", true);
  ASSERT_EQ(images->num_blocks(), 1);
  EXPECT_EQ(images->block_bytes(0), (3 + 4 + 5 + 6 + 7) + 16 * 5);
  const std::shared_ptr<const EncodedImageSource> read = read_all_blocks(*images);
  ASSERT_EQ(read->size(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    const SampleView want = images->sample(i), have = read->sample(i);
    EXPECT_TRUE(std::equal(have.bytes.begin(), have.bytes.end(), want.bytes.begin(), want.bytes.end())) << i;
    EXPECT_EQ(have.label, want.label);
  }
  // A buffer too small for the block is refused, not overrun.
  std::vector<uint8_t> scratch, small(10);
  std::vector<int64_t> ends(5), labels(5);
  EXPECT_THROW(images->read_block(0, scratch, {.payload = small.data(), .capacity = 10, .ends = ends.data(), .labels = labels.data()}),
               OptionsError);
}

}  // namespace
}  // namespace feeder

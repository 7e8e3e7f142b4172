#include "feeder/formats/idx.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "formats/test_files.h"

namespace feeder {
namespace {

using testing::data_error_of;
using testing::TempDir;

void append_be32(std::vector<uint8_t>& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
}

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> bytes;
  append_be32(bytes, magic);
  for (uint32_t dim : dims) append_be32(bytes, dim);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

// N images of HxW whose pixel i is (seed + i) mod 256, so every image differs.
std::vector<uint8_t> pixel_payload(size_t num_bytes, uint8_t seed = 7) {
  std::vector<uint8_t> payload(num_bytes);
  for (size_t i = 0; i < num_bytes; ++i) payload[i] = static_cast<uint8_t>(seed + i);
  return payload;
}

std::vector<uint8_t> images_file(uint32_t n, uint32_t h, uint32_t w) {
  return idx_bytes(0x00000803, {n, h, w}, pixel_payload(size_t{n} * h * w));
}

std::vector<uint8_t> labels_file(const std::vector<uint8_t>& labels) {
  return idx_bytes(0x00000801, {static_cast<uint32_t>(labels.size())}, labels);
}

void expect_store(const ImageStore& store, uint32_t n, uint32_t h, uint32_t w, const std::vector<uint8_t>& labels) {
  EXPECT_EQ(store.size(), n);
  EXPECT_EQ(store.shape(), (ImageShape{1, h, w}));
  const std::vector<uint8_t> expected = pixel_payload(size_t{n} * h * w);
  EXPECT_TRUE(std::equal(store.pixels().begin(), store.pixels().end(), expected.begin(), expected.end()));
  EXPECT_EQ(store.labeled(), !labels.empty());
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(store.label(i), labels.empty() ? kNoLabel : labels[i]) << i;
}

TEST(IdxTest, ReadsRawImagesAndLabels) {
  TempDir dir;
  testing::write_bytes(dir / "x-images-idx3-ubyte", images_file(3, 2, 4));
  testing::write_bytes(dir / "x-labels-idx1-ubyte", labels_file({9, 0, 255}));
  expect_store(read_idx(dir / "x-images-idx3-ubyte", dir / "x-labels-idx1-ubyte"), 3, 2, 4, {9, 0, 255});
}

TEST(IdxTest, ReadsGzipImagesAndLabels) {
  TempDir dir;
  testing::write_gzip(dir / "x-images-idx3-ubyte.gz", images_file(5, 3, 3));
  testing::write_gzip(dir / "x-labels-idx1-ubyte.gz", labels_file({1, 2, 3, 4, 5}));
  expect_store(read_idx(dir / "x-images-idx3-ubyte.gz", dir / "x-labels-idx1-ubyte.gz"), 5, 3, 3, {1, 2, 3, 4, 5});
}

TEST(IdxTest, ReadsImagesWithoutLabelsAsUnlabeled) {
  TempDir dir;
  testing::write_bytes(dir / "x-images-idx3-ubyte", images_file(2, 1, 1));
  expect_store(read_idx(dir / "x-images-idx3-ubyte"), 2, 1, 1, {});
}

TEST(IdxTest, RejectsWrongImageMagic) {
  TempDir dir;
  const auto path = dir / "x-images-idx3-ubyte";
  testing::write_bytes(path, idx_bytes(0x12345678, {1, 1, 1}, {0}));
  EXPECT_EQ(data_error_of([&] { read_idx(path); }),
            path.string() + ": byte 0: wrong magic 0x12345678 (expected 0x00000803 for an IDX image file)");
}

TEST(IdxTest, RejectsLabelFileReadAsImages) {
  const auto bytes = labels_file({1, 2});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "labels"); }),
            "labels: byte 0: wrong magic 0x00000801 (expected 0x00000803 for an IDX image file)");
}

TEST(IdxTest, RejectsWrongTypeByte) {
  // 0x0D is float in the IDX spec: valid IDX, but not image bytes.
  const auto bytes = idx_bytes(0x00000D03, {1, 1, 1}, {0, 0, 0, 0});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "floats"); }),
            "floats: byte 2: element type 0x0D is not supported (expected 0x08, unsigned byte)");
}

TEST(IdxTest, RejectsTruncatedHeader) {
  const auto bytes = idx_bytes(0x00000803, {60000}, {});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "short"); }),
            "short: truncated: 8 bytes, shorter than the 16-byte header of an IDX image file");
}

TEST(IdxTest, RejectsTruncatedPixels) {
  TempDir dir;
  const auto path = dir / "x-images-idx3-ubyte.gz";
  testing::write_gzip(path, idx_bytes(0x00000803, {60000, 28, 28}, pixel_payload(1000)));
  EXPECT_EQ(data_error_of([&] { read_idx(path); }),
            path.string() +
                ": truncated: header says 60000x28x28 = 47040000 pixel bytes after the 16-byte header, file has 1000");
}

TEST(IdxTest, RejectsTrailingBytes) {
  const auto bytes = idx_bytes(0x00000803, {2, 2, 2}, pixel_payload(11));
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "long"); }),
            "long: byte 24: 3 trailing bytes: header says 2x2x2 = 8 pixel bytes after the 16-byte header, file has 11");
}

TEST(IdxTest, RejectsDimsThatDoNotMatchTheSize) {
  // 10 images of 28x28 stored, header claims 28x27: the payload is 280 bytes too long.
  const auto bytes = idx_bytes(0x00000803, {10, 28, 27}, pixel_payload(10 * 28 * 28));
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "dims"); }),
            "dims: byte 7576: 280 trailing bytes: header says 10x28x27 = 7560 pixel bytes after the 16-byte header, "
            "file has 7840");
}

TEST(IdxTest, RejectsZeroDimension) {
  const auto bytes = idx_bytes(0x00000803, {3, 0, 28}, {});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "zero"); }),
            "zero: byte 8: dimension 2 of 3 is 0; every dimension must be positive");
}

TEST(IdxTest, RejectsAbsurdDimsBeforeAllocating) {
  // The product is about 2^96: it must be compared with the file size, never allocated.
  const auto bytes = idx_bytes(0x00000803, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, pixel_payload(4));
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(bytes, "absurd"); }),
            "absurd: truncated: header says 4294967295x4294967295x4294967295 = 79228162458924105385300197375 pixel "
            "bytes after the 16-byte header, file has 4");
}

TEST(IdxTest, RejectsLabelCountMismatch) {
  const auto images = images_file(3, 2, 2);
  const auto labels = labels_file({1, 2});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(images, "images", labels, "labels"); }),
            "labels: byte 4: 2 labels, but images has 3 images");
}

TEST(IdxTest, RejectsWrongLabelMagic) {
  const auto images = images_file(1, 2, 2);
  const auto labels = images_file(1, 1, 1);
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(images, "images", labels, "labels"); }),
            "labels: byte 0: wrong magic 0x00000803 (expected 0x00000801 for an IDX label file)");
}

TEST(IdxTest, RejectsTruncatedLabels) {
  const auto images = images_file(4, 1, 1);
  const auto labels = idx_bytes(0x00000801, {4}, {0, 1});
  EXPECT_EQ(data_error_of([&] { read_idx_bytes(images, "images", labels, "labels"); }),
            "labels: truncated: header says 4 label bytes after the 8-byte header, file has 2");
}

TEST(IdxTest, ReadsFashionMnistTrainAndTest) {
  const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is absent (Debian package dataset-fashion-mnist)";
  const ImageStore train = read_idx(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz");
  const ImageStore test = read_idx(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.shape(), (ImageShape{1, 28, 28}));
  EXPECT_EQ(test.shape(), (ImageShape{1, 28, 28}));
  ASSERT_EQ(train.label_counts().size(), 10u);
  ASSERT_EQ(test.label_counts().size(), 10u);
  for (int64_t label = 0; label < 10; ++label) {
    EXPECT_EQ(train.label_counts().at(label), 6000);
    EXPECT_EQ(test.label_counts().at(label), 1000);
  }
}

}  // namespace
}  // namespace feeder

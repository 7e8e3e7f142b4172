// Parquet encoders: golden bytes from the Parquet spec's examples and hand-worked cases, and round
// trips through the reader's independent decoder.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "formats/parquet/decoder/decode_error.h"
#include "formats/parquet/decoder/rle_bit_packed.h"
#include "formats/parquet/encoder/dictionary_encoder.h"
#include "formats/parquet/encoder/plain_encoder.h"
#include "formats/parquet/encoder/rle_bit_packed_encoder.h"

namespace feeder::parquet::encoder {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes hybrid(const std::vector<uint32_t>& values, int bit_width) {
  Bytes out;
  put_rle_bit_packed(values, bit_width, out);
  return out;
}

std::vector<uint32_t> repeat(uint32_t value, size_t count) { return std::vector<uint32_t>(count, value); }

std::vector<uint32_t> concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The spec's bit-packing example: 0..7 at bit width 3 packs LSB first into 10001000 11000110 11111010.
TEST(ParquetRleBitPackedEncoder, SpecBitPackingExample) {
  EXPECT_EQ(hybrid({0, 1, 2, 3, 4, 5, 6, 7}, 3), (Bytes{0x03, 0x88, 0xC6, 0xFA}));
}

TEST(ParquetRleBitPackedEncoder, EightEqualValuesBecomeAnRleRun) {
  EXPECT_EQ(hybrid(repeat(5, 8), 3), (Bytes{0x10, 0x05}));
}

TEST(ParquetRleBitPackedEncoder, LongRunHeaderIsAVarint) {
  // 200 << 1 = 400 = 0x90 0x03 as ULEB128.
  EXPECT_EQ(hybrid(repeat(1, 200), 1), (Bytes{0x90, 0x03, 0x01}));
}

TEST(ParquetRleBitPackedEncoder, RunValueTakesWholeBytes) {
  // Bit width 9: the repeated value takes two little-endian bytes.
  EXPECT_EQ(hybrid(repeat(300, 10), 9), (Bytes{0x14, 0x2C, 0x01}));
}

TEST(ParquetRleBitPackedEncoder, ShortRunAfterLiteralsStaysBitPacked) {
  // 1,2,3 then ten 4s: completing the literal group takes five 4s, leaving five: too few for RLE.
  // Groups (1,2,3,4,4,4,4,4) and (4,4,4,4,4,0,0,0) at width 3, LSB first.
  EXPECT_EQ(hybrid(concat({1, 2, 3}, repeat(4, 10)), 3), (Bytes{0x05, 0xD1, 0x48, 0x92, 0x24, 0x49, 0x00}));
}

TEST(ParquetRleBitPackedEncoder, LiteralGroupIsCompletedFromTheFollowingRun) {
  // 1,2,3 then thirteen 4s: five complete the group, the other eight are an RLE run.
  EXPECT_EQ(hybrid(concat({1, 2, 3}, repeat(4, 13)), 3), (Bytes{0x03, 0xD1, 0x48, 0x92, 0x10, 0x04}));
}

TEST(ParquetRleBitPackedEncoder, RunStartingOnAGroupBoundaryNeedsNoPadding) {
  // Eight literals then eight 2s: one bit-packed group, one RLE run.
  EXPECT_EQ(hybrid(concat({0, 1, 0, 1, 0, 1, 0, 1}, repeat(2, 8)), 2), (Bytes{0x03, 0x44, 0x44, 0x10, 0x02}));
}

TEST(ParquetRleBitPackedEncoder, BitWidthZeroWritesHeadersOnly) {
  EXPECT_EQ(hybrid(repeat(0, 5), 0), (Bytes{0x03}));
  EXPECT_EQ(hybrid(repeat(0, 9), 0), (Bytes{0x12}));
}

TEST(ParquetRleBitPackedEncoder, EmptyInputWritesNothing) { EXPECT_TRUE(hybrid({}, 4).empty()); }

TEST(ParquetRleBitPackedEncoder, LevelsCarryAFourByteLengthPrefix) {
  Bytes out;
  put_rle_bit_packed_with_length(repeat(1, 8), 1, out);
  EXPECT_EQ(out, (Bytes{0x02, 0x00, 0x00, 0x00, 0x10, 0x01}));
}

TEST(ParquetRleBitPackedEncoder, BitWidthFor) {
  EXPECT_EQ(bit_width_for(0), 0);
  EXPECT_EQ(bit_width_for(1), 1);
  EXPECT_EQ(bit_width_for(2), 2);
  EXPECT_EQ(bit_width_for(255), 8);
  EXPECT_EQ(bit_width_for(256), 9);
  EXPECT_EQ(bit_width_for(0xFFFFFFFFu), 32);
}

// Sweep: random mixes of runs and literals at every interesting width decode to the same values
// with the reader's decoder, which was written separately from this encoder.
TEST(ParquetRleBitPackedEncoder, RoundTripsThroughTheDecoderAtEveryWidth) {
  std::mt19937 rng(7);
  for (const int bit_width : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 24, 31, 32}) {
    const uint64_t max_value = (uint64_t{1} << bit_width) - 1;
    std::uniform_int_distribution<uint64_t> value_dist(0, max_value);
    std::uniform_int_distribution<int> length_dist(1, 40);
    std::vector<uint32_t> values;
    while (values.size() < 5000) {
      const uint32_t value = static_cast<uint32_t>(value_dist(rng));
      const int length = length_dist(rng) > 30 ? length_dist(rng) : 1;
      values.insert(values.end(), static_cast<size_t>(length), value);
    }
    values.push_back(static_cast<uint32_t>(max_value));  // the widest value is representable
    Bytes encoded;
    put_rle_bit_packed(values, bit_width, encoded);
    decoder::RleBitPackedDecoder decoder(encoded, bit_width);
    std::vector<uint32_t> decoded(values.size());
    decoder.get(decoded.data(), static_cast<int64_t>(decoded.size()));
    EXPECT_EQ(decoded, values) << "bit width " << bit_width;
  }
}

// Values passed over with skip() are those a full decode would have given there: what follows is
// decoded the same, across runs of either kind and in the middle of them.
TEST(ParquetRleBitPackedDecoder, SkippingThenReadingGivesTheValuesAfterTheSkippedOnes) {
  std::mt19937 rng(11);
  for (const int bit_width : {0, 1, 3, 8, 13, 32}) {
    const uint64_t max_value = bit_width == 0 ? 0 : (uint64_t{1} << bit_width) - 1;
    std::uniform_int_distribution<uint64_t> value_dist(0, max_value);
    std::vector<uint32_t> values;
    while (values.size() < 3000) {
      const uint32_t value = static_cast<uint32_t>(value_dist(rng));
      values.insert(values.end(), rng() % 4 == 0 ? 20 + rng() % 50 : 1, value);
    }
    Bytes encoded;
    put_rle_bit_packed(values, bit_width, encoded);
    for (int trial = 0; trial < 20; ++trial) {
      decoder::RleBitPackedDecoder decoder(encoded, bit_width);
      size_t at = 0;
      while (at < values.size()) {
        const size_t skipped = std::min<size_t>(rng() % 200, values.size() - at);
        decoder.skip(static_cast<int64_t>(skipped));
        at += skipped;
        const size_t read = std::min<size_t>(rng() % 40, values.size() - at);
        std::vector<uint32_t> got(read);
        decoder.get(got.data(), static_cast<int64_t>(read));
        ASSERT_TRUE(std::equal(got.begin(), got.end(), values.begin() + static_cast<std::ptrdiff_t>(at)))
            << "bit width " << bit_width << " values " << at << ".." << at + read;
        at += read;
      }
    }
  }
}

TEST(ParquetRleBitPackedDecoder, AllEqualTellsWhetherEveryValueIsTheOneAsked) {
  for (const bool packed : {false, true}) {
    std::vector<uint32_t> values(1000, 1);
    if (packed) values[0] = 0;  // literals first: the hybrid's bit-packed run
    Bytes encoded;
    put_rle_bit_packed(values, 1, encoded);
    decoder::RleBitPackedDecoder decoder(encoded, 1);
    EXPECT_EQ(decoder.all_equal(1, 8), !packed);
    EXPECT_TRUE(decoder.all_equal(1, 992));
    decoder::RleBitPackedDecoder again(encoded, 1);
    EXPECT_EQ(again.all_equal(1, 1000), !packed);
    EXPECT_THROW(again.all_equal(1, 1), decoder::DecodeError);  // nothing left
  }
}

TEST(ParquetPlainEncoder, IntegersAreLittleEndian) {
  Bytes out;
  put_plain_int32(std::vector<int32_t>{1, -2}, out);
  put_plain_int64(std::vector<int64_t>{0x0102030405060708}, out);
  EXPECT_EQ(out, (Bytes{0x01, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));
}

TEST(ParquetPlainEncoder, FixedLengthValuesHaveNoLengthPrefix) {
  const uint8_t images[] = {1, 2, 3, 4, 5, 6};
  Bytes out{9};
  put_plain_fixed(images, 2, 3, out);
  EXPECT_EQ(out, (Bytes{9, 1, 2, 3, 4, 5, 6}));
}

TEST(ParquetDictionaryEncoder, ByteDictionaryIsSortedAndIndexed) {
  const uint8_t values[] = {7, 0, 7, 255, 0};
  const DictionaryColumn column = dictionary_encode_bytes(values, 5, 1);
  EXPECT_EQ(column.dictionary, (std::vector<int64_t>{0, 7, 255}));
  EXPECT_EQ(column.indices, (std::vector<uint32_t>{1, 0, 1, 2, 0}));
  EXPECT_EQ(column.bit_width, 2);
}

TEST(ParquetDictionaryEncoder, ByteDictionaryReadsWithAStride) {
  // Pixel 1 of three 2-pixel images.
  const uint8_t images[] = {4, 100, 9, 100, 4, 100};
  const DictionaryColumn column = dictionary_encode_bytes(images, 3, 2);
  EXPECT_EQ(column.dictionary, (std::vector<int64_t>{4, 9}));
  EXPECT_EQ(column.indices, (std::vector<uint32_t>{0, 1, 0}));
}

TEST(ParquetDictionaryEncoder, OneEntryDictionaryUsesOneBit) {
  const uint8_t values[] = {0, 0, 0};
  EXPECT_EQ(dictionary_encode_bytes(values, 3, 1).bit_width, 1);
}

TEST(ParquetDictionaryEncoder, AllByteValuesNeedEightBits) {
  std::vector<uint8_t> values(256);
  for (int value = 0; value < 256; ++value) values[static_cast<size_t>(value)] = static_cast<uint8_t>(255 - value);
  const DictionaryColumn column = dictionary_encode_bytes(values.data(), 256, 1);
  EXPECT_EQ(column.dictionary.size(), 256u);
  EXPECT_EQ(column.bit_width, 8);
  EXPECT_EQ(column.indices.front(), 255u);
}

TEST(ParquetDictionaryEncoder, Int64DictionaryKeepsLargeValues) {
  const std::vector<int64_t> labels = {3, -1, int64_t{1} << 40, 3};
  const std::optional<DictionaryColumn> column = dictionary_encode_int64(labels, 16);
  ASSERT_TRUE(column.has_value());
  EXPECT_EQ(column->dictionary, (std::vector<int64_t>{-1, 3, int64_t{1} << 40}));
  EXPECT_EQ(column->indices, (std::vector<uint32_t>{1, 0, 2, 1}));
}

TEST(ParquetDictionaryEncoder, Int64GivesUpPastMaxEntries) {
  EXPECT_FALSE(dictionary_encode_int64(std::vector<int64_t>{1, 2, 3}, 2).has_value());
}

TEST(ParquetDictionaryEncoder, DataPagePayloadStartsWithTheBitWidth) {
  Bytes out;
  put_dictionary_indices(std::vector<uint32_t>(8, 2), 2, out);
  EXPECT_EQ(out, (Bytes{0x02, 0x10, 0x02}));
}

}  // namespace
}  // namespace feeder::parquet::encoder

// parse_byte_size and format_byte_size: units, case, spaces, fractions, and the exact messages for
// text that is no size.

#include "feeder/util/byte_size.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feeder/error.h"

namespace feeder {
namespace {

// The message of the OptionsError that parsing `text` throws; a test failure when nothing is thrown.
std::string parse_error(const std::string& text) {
  try {
    parse_byte_size(text, "--shard-size");
  } catch (const OptionsError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an OptionsError for '" << text << "', nothing was thrown";
  return "<nothing thrown>";
}

TEST(ParseByteSize, DecimalUnitsArePowersOfAThousand) {
  EXPECT_EQ(parse_byte_size("16MB"), 16'000'000);
  EXPECT_EQ(parse_byte_size("2GB"), 2'000'000'000);
  EXPECT_EQ(parse_byte_size("1kB"), 1000);
  EXPECT_EQ(parse_byte_size("1KB"), 1000);
  EXPECT_EQ(parse_byte_size("3TB"), 3'000'000'000'000);
}

TEST(ParseByteSize, BinaryUnitsAndBareLettersArePowersOf1024) {
  EXPECT_EQ(parse_byte_size("256MiB"), int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("1KiB"), 1024);
  EXPECT_EQ(parse_byte_size("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(parse_byte_size("2TiB"), int64_t{2} << 40);
  EXPECT_EQ(parse_byte_size("1K"), 1024);
  EXPECT_EQ(parse_byte_size("8M"), int64_t{8} << 20);
  EXPECT_EQ(parse_byte_size("1.5G"), int64_t{3} << 29);
  EXPECT_EQ(parse_byte_size("1T"), int64_t{1} << 40);
}

TEST(ParseByteSize, PlainNumbersAreBytes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096);
  EXPECT_EQ(parse_byte_size("1"), 1);
  EXPECT_EQ(parse_byte_size("10B"), 10);
  EXPECT_EQ(parse_byte_size("10 b"), 10);
}

TEST(ParseByteSize, CaseSpacesAndFractions) {
  EXPECT_EQ(parse_byte_size("16mb"), 16'000'000);
  EXPECT_EQ(parse_byte_size("256mib"), int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("256 MiB"), int64_t{256} << 20);
  EXPECT_EQ(parse_byte_size("16   MB"), 16'000'000);
  EXPECT_EQ(parse_byte_size("0.5kB"), 500);
  EXPECT_EQ(parse_byte_size(".5kB"), 500);
  EXPECT_EQ(parse_byte_size("1.0009kB"), 1000);  // whole bytes, rounded down
  EXPECT_EQ(parse_byte_size("2.5MiB"), int64_t{5} << 19);
}

TEST(ParseByteSize, LargestSizes) {
  EXPECT_EQ(parse_byte_size("8000000TiB"), int64_t{8000000} << 40);
  EXPECT_EQ(parse_byte_size("9000000TB"), int64_t{9'000'000'000'000'000'000});
}

TEST(ParseByteSize, TextThatIsNoSizeIsRefusedQuotingIt) {
  const std::string expected_a_size = ": expected a size such as 16MB, 256MiB or 2GB";
  const std::string unknown_unit = ": unknown unit; use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "--shard-size '': expected a size such as 16MB, 256MiB or 2GB"},
      {"MB", "--shard-size 'MB'" + expected_a_size},
      {"lots", "--shard-size 'lots'" + expected_a_size},
      {"-5MB", "--shard-size '-5MB'" + expected_a_size},
      {" 16MB", "--shard-size ' 16MB'" + expected_a_size},
      {".", "--shard-size '.'" + expected_a_size},
      {"1.2.3MB", "--shard-size '1.2.3MB'" + expected_a_size},
      {"16XB", "--shard-size '16XB'" + unknown_unit},
      {"16MBs", "--shard-size '16MBs'" + unknown_unit},
      {"16MB ", "--shard-size '16MB '" + unknown_unit},
      {"1e9", "--shard-size '1e9'" + unknown_unit},
      {"2PB", "--shard-size '2PB'" + unknown_unit},
      {"0", "--shard-size '0': must be at least 1 byte"},
      {"0MB", "--shard-size '0MB': must be at least 1 byte"},
      {"0.4", "--shard-size '0.4': must be at least 1 byte"},
      {"10000000TB", "--shard-size '10000000TB': too large"},
      {"9000000TiB", "--shard-size '9000000TiB': too large"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(parse_error(text), expected) << "'" << text << "'";
}

TEST(ParseByteSize, WhatDefaultsToSize) {
  try {
    parse_byte_size("x");
    ADD_FAILURE() << "nothing thrown";
  } catch (const OptionsError& error) {
    EXPECT_EQ(std::string(error.what()), "size 'x': expected a size such as 16MB, 256MiB or 2GB");
  }
}

TEST(FormatByteSize, BytesBelowOneKiB) {
  EXPECT_EQ(format_byte_size(0), "0 B");
  EXPECT_EQ(format_byte_size(812), "812 B");
  EXPECT_EQ(format_byte_size(1023), "1023 B");
}

TEST(FormatByteSize, BinaryUnitsWithOneDecimalBelowTen) {
  EXPECT_EQ(format_byte_size(1024), "1.0 KiB");
  EXPECT_EQ(format_byte_size(1536), "1.5 KiB");
  EXPECT_EQ(format_byte_size(10 * 1024), "10 KiB");
  EXPECT_EQ(format_byte_size(int64_t{256} << 20), "256 MiB");
  EXPECT_EQ(format_byte_size(int64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(format_byte_size(int64_t{1} << 40), "1.0 TiB");
  EXPECT_EQ(format_byte_size(int64_t{5000} << 40), "5000 TiB");
}

TEST(FormatByteSize, RoundingNeverShowsTenPointZeroOr1024) {
  EXPECT_EQ(format_byte_size(10239), "10 KiB");        // 9.999 KiB
  EXPECT_EQ(format_byte_size(1048575), "1.0 MiB");     // 1023.999 KiB
  EXPECT_EQ(format_byte_size(10188), "9.9 KiB");       // 9.949 KiB
  EXPECT_EQ(format_byte_size((int64_t{1} << 30) - 1), "1.0 GiB");
}

TEST(FormatByteSize, ParsesBackToTheSameUnit) {
  for (const int64_t bytes : {int64_t{1} << 20, int64_t{3} << 30, int64_t{256} << 20}) {
    std::string text = format_byte_size(bytes);
    text.erase(text.find(' '), 1);
    EXPECT_EQ(parse_byte_size(text), bytes) << text;
  }
}

// An advised size, rounded up to what is shown: the text typed back is that size, at least the bytes.
TEST(FormatByteSize, RoundedUpToWhatIsShownParsesBackToAtLeastTheBytes) {
  for (const int64_t bytes : {int64_t{812}, int64_t{10188}, int64_t{10239}, int64_t{1048575}, int64_t{11} << 20,
                              (int64_t{23} << 20) + 1, int64_t{3000000000}}) {
    const int64_t shown = round_up_to_shown_size(bytes);
    std::string text = format_byte_size(shown);
    text.erase(text.find(' '), 1);
    EXPECT_EQ(parse_byte_size(text), shown) << bytes << " shown as " << text;
    EXPECT_GE(shown, bytes);
  }
  EXPECT_EQ(round_up_to_shown_size((int64_t{23} << 20) + 1), int64_t{24} << 20);
  EXPECT_EQ(round_up_to_shown_size(10188), 10240);  // 9.949 KiB is shown as 9.9: rounded up to 10
}

}  // namespace
}  // namespace feeder

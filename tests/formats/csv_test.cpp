#include "feeder/formats/csv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/test_files.h"

namespace feeder {
namespace {

using testing::data_error_of;
using testing::TempDir;

// Parses CSV text held in memory under the name "t.csv".
ImageStore parse(const std::string& text, CsvReadOptions options = {}) {
  return read_csv_bytes({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, "t.csv", options);
}

std::string parse_error(const std::string& text, CsvReadOptions options = {}) {
  return data_error_of([&] { parse(text, options); });
}

std::vector<uint8_t> pixels_of(const ImageStore& store) { return {store.pixels().begin(), store.pixels().end()}; }
std::vector<int64_t> labels_of(const ImageStore& store) { return {store.labels().begin(), store.labels().end()}; }

// Header `label,pixel1..pixel4` for 2x2 images.
const std::string kHeader4 = "label,pixel1,pixel2,pixel3,pixel4\n";

TEST(CsvTest, ReadsFileWithHeader) {
  const ImageStore store = parse(kHeader4 + "3,0,1,2,255\n9,10,20,30,40\n");
  EXPECT_EQ(store.size(), 2);
  EXPECT_EQ(store.shape(), (ImageShape{1, 2, 2}));
  EXPECT_TRUE(store.labeled());
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 255, 10, 20, 30, 40}));
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{3, 9}));
}

TEST(CsvTest, ReadsHeaderlessFileWithLabelFirst) {
  const ImageStore store = parse("3,0,1,2,255\n9,10,20,30,40\n");
  EXPECT_TRUE(store.labeled());
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 255, 10, 20, 30, 40}));
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{3, 9}));
}

TEST(CsvTest, ReadsHeaderWithoutLabelColumnAsUnlabeled) {
  const ImageStore store = parse("pixel1,pixel2,pixel3,pixel4\n0,1,2,3\n4,5,6,7\n");
  EXPECT_FALSE(store.labeled());
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{kNoLabel, kNoLabel}));
}

TEST(CsvTest, FindsLabelColumnAnywhereInHeader) {
  const ImageStore store = parse("pixel1,pixel2,\"Label\",pixel3,pixel4\n0,1,7,2,3\n");
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{7}));
}

TEST(CsvTest, AcceptsCrlfLineEndings) {
  const ImageStore store = parse("label,pixel1,pixel2,pixel3,pixel4\r\n3,0,1,2,255\r\n9,10,20,30,40\r\n");
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 255, 10, 20, 30, 40}));
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{3, 9}));
}

TEST(CsvTest, AcceptsMissingFinalNewline) {
  const ImageStore store = parse(kHeader4 + "3,0,1,2,255\n9,10,20,30,40");
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 255, 10, 20, 30, 40}));
}

TEST(CsvTest, SkipsTrailingEmptyLines) {
  const ImageStore store = parse(kHeader4 + "3,0,1,2,255\n\n\r\n\n");
  EXPECT_EQ(store.size(), 1);
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 255}));
}

TEST(CsvTest, SkipsUtf8ByteOrderMark) {
  const ImageStore store = parse("\xEF\xBB\xBF" + kHeader4 + "3,0,1,2,255\n");
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{3}));
}

TEST(CsvTest, Infers28x28ForArticleLayout) {
  std::string row = "5";
  for (int i = 0; i < 784; ++i) {
    row += ',';
    row += std::to_string(i % 256);
  }
  const ImageStore store = parse(row + "\n");
  EXPECT_EQ(store.shape(), (ImageShape{1, 28, 28}));
  EXPECT_EQ(store.image(0)[783], 783 % 256);
}

TEST(CsvTest, UsesExplicitShape) {
  CsvReadOptions options;
  options.shape = ImageShape{2, 1, 3};
  const ImageStore store = parse("1,0,1,2,3,4,5\n", options);
  EXPECT_EQ(store.shape(), (ImageShape{2, 1, 3}));
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 1, 2, 3, 4, 5}));
}

TEST(CsvTest, RejectsNonSquareWithoutShape) {
  EXPECT_EQ(parse_error("1,0,1,2\n"),
            "t.csv: 3 pixel columns do not make a square 1xSxS image; pass the image shape (CxHxW) explicitly");
}

TEST(CsvTest, RejectsShapeThatDoesNotMatchColumns) {
  CsvReadOptions options;
  options.shape = ImageShape{3, 32, 32};
  EXPECT_EQ(parse_error("1,0,1,2,3\n", options), "t.csv: 4 pixel columns, but the shape 3x32x32 needs 3072");
}

TEST(CsvTest, RejectsRowWithTooFewFields) {
  EXPECT_EQ(parse_error(kHeader4 + "1,0,0,0,0\n2,0,0,0\n"), "t.csv: line 3: expected 5 fields, found 4");
}

TEST(CsvTest, RejectsRowWithTooManyFields) {
  EXPECT_EQ(parse_error("1,0,0,0,0\n2,0,0,0,0,0\n"), "t.csv: line 2: expected 5 fields, found 6");
}

TEST(CsvTest, NamesHeaderColumnOfNonNumericValue) {
  EXPECT_EQ(parse_error(kHeader4 + "1,0,0,0,0\n1,0,0,abc,0\n"),
            "t.csv: line 3, column 4 (pixel3): 'abc' is not an integer");
}

TEST(CsvTest, NamesColumnNumberOfNonNumericValueWithoutHeader) {
  EXPECT_EQ(parse_error("1,0,0,0,0\n1,0,1.5,0,0\n"), "t.csv: line 2, column 3: '1.5' is not an integer");
}

TEST(CsvTest, RejectsEmptyField) {
  EXPECT_EQ(parse_error(kHeader4 + "1,0,,0,0\n"), "t.csv: line 2, column 3 (pixel2): empty field, expected an integer 0..255");
}

TEST(CsvTest, RejectsPixel256) {
  EXPECT_EQ(parse_error(kHeader4 + "1,0,0,0,256\n"), "t.csv: line 2, column 5 (pixel4): value 256 out of range 0..255");
}

TEST(CsvTest, RejectsNegativePixel) {
  EXPECT_EQ(parse_error(kHeader4 + "1,-1,0,0,0\n"), "t.csv: line 2, column 2 (pixel1): value -1 out of range 0..255");
}

TEST(CsvTest, RejectsNegativeLabel) {
  EXPECT_EQ(parse_error(kHeader4 + "-1,0,0,0,0\n"),
            "t.csv: line 2, column 1 (label): value -1 out of range 0..9223372036854775807");
}

TEST(CsvTest, AcceptsLargestInt64Label) {
  EXPECT_EQ(labels_of(parse("9223372036854775807,0,0,0,0\n")), (std::vector<int64_t>{9223372036854775807}));
}

TEST(CsvTest, RejectsLabelBeyondInt64) {
  EXPECT_EQ(parse_error("9223372036854775808,0,0,0,0\n"),
            "t.csv: line 1, column 1: value 9223372036854775808 out of range 0..9223372036854775807");
}

TEST(CsvTest, AcceptsUnusualButValidIntegers) {
  // Leading zeros and "-0" leave the fast path; the checked path must accept them.
  const ImageStore store = parse("007,-0,0255,00,1\n");
  EXPECT_EQ(labels_of(store), (std::vector<int64_t>{7}));
  EXPECT_EQ(pixels_of(store), (std::vector<uint8_t>{0, 255, 0, 1}));
}

TEST(CsvTest, RejectsShortRowsBeforeSizingStoreByHeader) {
  // 1024x1024 pixel columns and 2^20 one-field rows: a store sized by the header would need 1 TiB.
  constexpr int kPixels = 1 << 20;
  std::string text = "label";
  for (int i = 0; i < kPixels; ++i) text += ",p";
  text += '\n';
  for (int i = 0; i < kPixels; ++i) text += "1\n";
  EXPECT_EQ(parse_error(text), "t.csv: line 2: expected 1048577 fields, found 1");
}

TEST(CsvTest, RejectsEmptyFile) { EXPECT_EQ(parse_error(""), "t.csv: empty file: no rows"); }

TEST(CsvTest, RejectsFileOfBlankLines) { EXPECT_EQ(parse_error("\n\r\n\n"), "t.csv: empty file: no rows"); }

TEST(CsvTest, RejectsHeaderWithoutRows) { EXPECT_EQ(parse_error(kHeader4), "t.csv: header but no rows"); }

TEST(CsvTest, RejectsNegativeThreadCount) {
  CsvReadOptions options;
  options.num_threads = -1;
  EXPECT_THROW(parse("1,0,0,0,0\n", options), OptionsError);
}

// A file of `num_rows` rows of 16 pixels, with \r\n and blank lines mixed in so that chunk
// boundaries fall on every kind of line.
std::string many_rows(int num_rows) {
  std::string text = "label";
  for (int i = 1; i <= 16; ++i) {
    text += ",pixel";
    text += std::to_string(i);
  }
  text += "\n";
  for (int row = 0; row < num_rows; ++row) {
    text += std::to_string(row % 10);
    for (int i = 0; i < 16; ++i) {
      text += ',';
      text += std::to_string((row * 31 + i * 7) % 256);
    }
    text += row % 3 == 0 ? "\r\n" : "\n";
    if (row % 17 == 0) text += "\n";
  }
  return text;
}

// About 1.2 MB: enough for 7 threads to each get a chunk of their own (small inputs use fewer
// threads than chunks).
constexpr int kManyRows = 20000;

TEST(CsvTest, ParallelParsingGivesSameStoreForAnyThreadCount) {
  const std::string text = many_rows(kManyRows);
  CsvReadOptions options;
  options.num_threads = 1;
  const ImageStore one = parse(text, options);
  ASSERT_EQ(one.size(), kManyRows);
  EXPECT_EQ(one.label(kManyRows - 1), (kManyRows - 1) % 10);
  EXPECT_EQ(one.image(kManyRows - 1)[15], ((kManyRows - 1) * 31 + 15 * 7) % 256);
  for (int threads : {2, 7}) {
    options.num_threads = threads;
    const ImageStore many = parse(text, options);
    EXPECT_EQ(pixels_of(many), pixels_of(one)) << threads << " threads";
    EXPECT_EQ(labels_of(many), labels_of(one)) << threads << " threads";
  }
}

TEST(CsvTest, SmallFileSplitIntoMoreChunksThanThreadsParsesTheSame) {
  const std::string text = many_rows(300);
  CsvReadOptions options;
  options.num_threads = 1;
  const ImageStore one = parse(text, options);
  options.num_threads = 7;
  const ImageStore chunked = parse(text, options);
  EXPECT_EQ(pixels_of(chunked), pixels_of(one));
  EXPECT_EQ(labels_of(chunked), labels_of(one));
}

// Line number of data row `row` (0-based) in many_rows(): header, rows, and a blank line after
// every row divisible by 17.
int line_of_row(int row) { return 2 + row + (row + 16) / 17; }

// Replaces the one-digit label of data row `row` of many_rows() with `replacement`.
void corrupt_label(std::string& text, int row, const std::string& replacement) {
  size_t at = 0;
  for (int line = 1; line < line_of_row(row); ++line) at = text.find('\n', at) + 1;
  ASSERT_EQ(text[at], static_cast<char>('0' + row % 10)) << row;
  text.replace(at, 1, replacement);
}

TEST(CsvTest, ReportsLineNumberOfErrorInLaterChunk) {
  std::string text = many_rows(kManyRows);
  // This row lies in the last of 7 chunks, so its line number adds up every earlier chunk's lines.
  const int row = kManyRows - 100;
  corrupt_label(text, row, "x");
  CsvReadOptions options;
  options.num_threads = 7;
  EXPECT_EQ(parse_error(text, options),
            "t.csv: line " + std::to_string(line_of_row(row)) + ", column 1 (label): 'x' is not an integer");
}

TEST(CsvTest, ReportsFirstErrorInFileOrderWhenSeveralChunksFail) {
  std::string text = many_rows(kManyRows);
  // Rows in different chunks with 2 and 7 threads; different kinds of error tell which one was
  // reported. The later one is corrupted first so that line numbers stay those of many_rows().
  const int first_row = kManyRows / 5;
  corrupt_label(text, kManyRows * 4 / 5, "0,0");
  corrupt_label(text, first_row, "x");
  for (int threads : {1, 2, 7}) {
    CsvReadOptions options;
    options.num_threads = threads;
    EXPECT_EQ(parse_error(text, options),
              "t.csv: line " + std::to_string(line_of_row(first_row)) + ", column 1 (label): 'x' is not an integer")
        << threads << " threads";
  }
}

TEST(CsvTest, WritesArticleHeaderAndRows) {
  TempDir dir;
  ImageStore store(ImageShape{1, 1, 3}, 2, /*labeled=*/true);
  const uint8_t pixels[] = {0, 128, 255, 7, 8, 9};
  std::copy(std::begin(pixels), std::end(pixels), store.pixels().begin());
  store.labels()[0] = 4;
  store.labels()[1] = 12;
  write_csv(store, dir / "out.csv");
  EXPECT_EQ(testing::read_text(dir / "out.csv"), "label,pixel1,pixel2,pixel3\n4,0,128,255\n12,7,8,9\n");
}

TEST(CsvTest, WritesNoLabelColumnForUnlabeledStore) {
  TempDir dir;
  ImageStore store(ImageShape{1, 1, 2}, 1, /*labeled=*/false);
  store.pixels()[0] = 0;
  store.pixels()[1] = 99;
  write_csv(store, dir / "out.csv");
  EXPECT_EQ(testing::read_text(dir / "out.csv"), "pixel1,pixel2\n0,99\n");
}

TEST(CsvTest, RoundTripsThroughWriteAndRead) {
  TempDir dir;
  for (bool labeled : {true, false}) {
    ImageStore store(ImageShape{1, 5, 5}, 300, labeled);
    for (size_t i = 0; i < store.pixels().size(); ++i) store.pixels()[i] = static_cast<uint8_t>(i * 37 + i / 25);
    if (labeled)
      for (size_t i = 0; i < store.labels().size(); ++i) store.labels()[i] = static_cast<int64_t>(i % 10);
    write_csv(store, dir / "round.csv");
    const ImageStore back = read_csv(dir / "round.csv", {.shape = std::nullopt, .num_threads = 3});
    EXPECT_EQ(back.shape(), store.shape());
    EXPECT_EQ(back.labeled(), labeled);
    EXPECT_EQ(pixels_of(back), pixels_of(store));
    EXPECT_EQ(labels_of(back), labels_of(store));
  }
}

TEST(CsvTest, ReadsGzipCompressedFile) {
  TempDir dir;
  const std::string text = kHeader4 + "3,0,1,2,255\n";
  testing::write_gzip(dir / "t.csv.gz", std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_EQ(pixels_of(read_csv(dir / "t.csv.gz")), (std::vector<uint8_t>{0, 1, 2, 255}));
}

TEST(CsvTest, RejectsMissingFile) {
  TempDir dir;
  EXPECT_EQ(data_error_of([&] { read_csv(dir / "absent.csv"); }),
            (dir / "absent.csv").string() + ": cannot open: No such file or directory");
}

TEST(CsvTest, RejectsEmptyFileOnDisk) {
  TempDir dir;
  testing::write_text(dir / "empty.csv", "");
  EXPECT_EQ(data_error_of([&] { read_csv(dir / "empty.csv"); }), (dir / "empty.csv").string() + ": empty file: no rows");
}

TEST(CsvTest, NamesFileInErrors) {
  TempDir dir;
  testing::write_text(dir / "bad.csv", "1,0,0,0,300\n");
  EXPECT_EQ(data_error_of([&] { read_csv(dir / "bad.csv"); }),
            (dir / "bad.csv").string() + ": line 1, column 5: value 300 out of range 0..255");
}

}  // namespace
}  // namespace feeder

// convert_dataset called as a library: the report's numbers, bad images and warnings as values,
// progress through the callback, options refused before anything is written, and the report's
// text as `feeder convert` prints it.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "feeder/convert/convert.h"
#include "feeder/error.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/formats/sharded.h"
#include "feeder/io/file.h"
#include "formats/test_files.h"
#include "image/test_pictures.h"
#include "parquet/writer_test_util.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

// Two classes of five pictures, and a file in class "b" that is no image.
void write_folder_with_a_broken_image(const fs::path& root) {
  for (const char* name : {"a", "b"}) {
    fs::create_directories(root / name);
    for (int i = 0; i < 5; ++i) write_bytes(root / name / (std::to_string(i) + ".png"), png_of(8 + i, 6 + i, i));
  }
  write_bytes(root / "b" / "text.jpg", std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o'});
}

TEST(ConvertDataset, AnImageFoldersReportCarriesItsShardsAndItsBadImages) {
  TempDir dir;
  write_folder_with_a_broken_image(dir / "folder");
  ConvertOptions options;
  options.input = dir / "folder";
  options.output = dir.path() / "out/";
  options.shard_rows = 4;
  const ConvertReport report = convert_dataset(options);

  EXPECT_EQ(report.set, ConvertedSet::kEncodedImages);
  EXPECT_EQ(report.input_name, "folder/");
  EXPECT_EQ(report.output_name, "out/");
  EXPECT_EQ(report.num_rows, 11);  // the file that is no image is written as it is
  ASSERT_EQ(report.shards.size(), 3u);
  EXPECT_EQ(report.shards[0].name, "part-00000.parquet");
  EXPECT_EQ(report.shards[0].num_rows, 4);
  EXPECT_EQ(report.shards[1].num_rows, 4);
  EXPECT_EQ(report.shards[2].num_rows, 3);
  int64_t output_bytes = 0;
  for (const ConvertedShard& shard : report.shards) {
    EXPECT_EQ(shard.num_row_groups, 1);
    EXPECT_EQ(shard.size_bytes, static_cast<int64_t>(fs::file_size(dir.path() / "out" / shard.name)));
    output_bytes += shard.size_bytes;
  }
  EXPECT_EQ(report.num_row_groups(), 3);
  EXPECT_EQ(report.output_bytes, output_bytes);
  int64_t input_bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "folder"))
    if (entry.is_regular_file()) input_bytes += static_cast<int64_t>(entry.file_size());
  EXPECT_EQ(report.input_bytes, input_bytes);
  EXPECT_TRUE(report.labeled);
  EXPECT_EQ(report.num_classes, 2);
  EXPECT_EQ(report.class_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(report.order, "the folder's order, sorted by class");
  EXPECT_FALSE(report.shuffle_seed.has_value());
  EXPECT_FALSE(report.reencoded.has_value());
  EXPECT_EQ(report.not_images.count, 1);
  ASSERT_EQ(report.not_images.first.size(), 1u);
  EXPECT_EQ(report.not_images.first[0], (dir / "folder" / "b" / "text.jpg").string() +
                                            ": not a JPEG, PNG or WebP image (its first bytes are no image signature; "
                                            "5 bytes)");
  EXPECT_EQ(report.not_decoded.count, 0);
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(open_sharded_dataset((dir.path() / "out").string()).num_rows, 11);
}

TEST(ConvertDataset, ReencodingIsCountedAndItsQualityDefaultsTo90) {
  TempDir dir;
  write_folder_with_a_broken_image(dir / "folder");
  ConvertOptions options;
  options.input = dir / "folder";
  options.output = dir.path() / "out/";
  options.max_side = 10;  // pictures 11 and 12 px wide
  const ConvertReport report = convert_dataset(options);
  ASSERT_TRUE(report.reencoded.has_value());
  EXPECT_EQ(report.reencoded->max_side, 10);
  EXPECT_EQ(report.reencoded->jpeg_quality, 90);
  EXPECT_EQ(report.reencoded->count, 4);  // two of each class
  EXPECT_GT(report.reencoded->bytes_before, 0);
  EXPECT_EQ(report.not_images.count, 1);  // its header does not read: kept as it is, not "not decoded"
  EXPECT_EQ(report.not_decoded.count, 0);
}

TEST(ConvertDataset, APixelSetsShardsAndItsLabelRunsAreReported) {
  TempDir dir;
  ImageStore store = testing::make_store(ImageShape{1, 4, 4}, 64, true);
  for (int64_t row = 0; row < store.size(); ++row) store.labels()[static_cast<size_t>(row)] = row / 32;  // sorted
  parquet::write_parquet(store, dir / "in.parquet");
  ConvertOptions options;
  options.input = dir / "in.parquet";
  options.output = dir / "shards";
  options.shard_rows = 25;
  options.row_group_size = 10;
  std::vector<std::string> progress;
  const ConvertReport report = convert_dataset(options, [&progress](const std::string& line) { progress.push_back(line); });

  EXPECT_EQ(report.set, ConvertedSet::kShardedPixels);
  EXPECT_EQ(report.input_name, "in.parquet");
  EXPECT_EQ(report.output_name, "shards/");
  EXPECT_EQ(report.format, "parquet image LZ4_RAW");  // a sharded set's defaults
  EXPECT_EQ(report.num_rows, 64);
  EXPECT_EQ(report.shape, (ImageShape{1, 4, 4}));
  ASSERT_EQ(report.shards.size(), 3u);
  EXPECT_EQ(report.shards[0].num_rows, 25);
  EXPECT_EQ(report.shards[0].num_row_groups, 3);
  EXPECT_EQ(report.shards[2].num_rows, 14);
  EXPECT_EQ(report.shards[2].num_row_groups, 2);
  int64_t output_bytes = static_cast<int64_t>(fs::file_size(dir / "shards" / "index.json"));
  for (const ConvertedShard& shard : report.shards) output_bytes += shard.size_bytes;
  EXPECT_EQ(report.output_bytes, output_bytes);
  EXPECT_EQ(report.input_bytes, static_cast<int64_t>(fs::file_size(dir / "in.parquet")));
  ASSERT_TRUE(report.label_runs.has_value());
  EXPECT_EQ(report.label_runs->num_runs, 2);
  EXPECT_EQ(report.label_runs->mean_rows, 32);
  EXPECT_EQ(report.not_images.count, 0);
  EXPECT_EQ(progress, (std::vector<std::string>{"shard 1/3 written", "shard 2/3 written", "shard 3/3 written"}));

  options.output = dir / "shuffled";
  options.shuffle_seed = 7;
  const ConvertReport shuffled = convert_dataset(options);
  EXPECT_EQ(shuffled.shuffle_seed, std::optional<uint64_t>(7));
  EXPECT_FALSE(shuffled.label_runs.has_value());
}

TEST(ConvertDataset, AnIdxFileWithoutLabelsIsWrittenUnlabeledWithAWarning) {
  TempDir dir;
  const std::string idx = std::string("\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x03", 16) +
                          std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\xff", 12);
  write_file_atomically(dir / "x-images-idx3-ubyte", idx);
  ConvertOptions options;
  options.input = dir / "x-images-idx3-ubyte";
  options.output = dir / "out.csv";
  const ConvertReport report = convert_dataset(options);
  EXPECT_EQ(report.set, ConvertedSet::kFile);
  EXPECT_EQ(report.format, "csv");
  EXPECT_EQ(report.num_rows, 2);
  EXPECT_EQ(report.shape, (ImageShape{1, 2, 3}));
  EXPECT_EQ(report.warnings, (std::vector<std::string>{(dir / "x-images-idx3-ubyte").string() +
                                                       ": no labels file beside it (" +
                                                       (dir / "x-labels-idx1-ubyte").string() +
                                                       "[.gz]): the images are written unlabeled"}));
}

// The message of the OptionsError `options` give, and that nothing was written.
std::string options_error(const ConvertOptions& options) {
  try {
    convert_dataset(options);
  } catch (const OptionsError& error) {
    EXPECT_FALSE(fs::exists(options.output)) << options.output;
    return error.what();
  }
  ADD_FAILURE() << "no OptionsError";
  return {};
}

TEST(ConvertDataset, InvalidOptionsThrowOptionsErrorBeforeAnythingIsWritten) {
  TempDir dir;
  parquet::write_parquet(testing::make_store(ImageShape{1, 2, 2}, 3, true), dir / "in.parquet");
  write_folder_with_a_broken_image(dir / "folder");
  const auto pixels = [&dir](const std::string& output) {
    ConvertOptions options;
    options.input = dir / "in.parquet";
    options.output = dir / output;
    return options;
  };
  ConvertOptions options = pixels("out.parquet");
  options.row_group_size = 0;
  EXPECT_EQ(options_error(options), "--row-group-size: needs an integer >= 1, got 0");
  options = pixels("out.parquet");
  options.level = -1;
  EXPECT_EQ(options_error(options), "--level: needs an integer >= 1, got -1");
  options = pixels("out.parquet");
  options.shape = ImageShape{1, 0, 4};
  EXPECT_EQ(options_error(options), "--shape: needs an integer >= 1, got 0");
  options = pixels("out.parquet");
  options.jpeg_quality = 101;
  EXPECT_EQ(options_error(options), "--jpeg-quality: needs an integer from 1 to 100, got 101");
  options = pixels("out/");
  options.shard_rows = 2;
  options.shard_size = "1MB";
  EXPECT_EQ(options_error(options), "--shard-rows excludes --shard-size");
  options = pixels("out/");
  options.shard_size = "lots";
  EXPECT_NE(options_error(options).find("--shard-size 'lots': expected a size such as 16MB"), std::string::npos);
  options = pixels("out.txt");
  EXPECT_EQ(options_error(options), "cannot tell the output format of '" + (dir / "out.txt").string() +
                                        "' (use .parquet or .csv)");
  options = pixels("out.parquet");
  options.shuffle_seed = 1;
  EXPECT_EQ(options_error(options), "--shuffle-on-write applies to a sharded set (an output directory)");
  options = pixels("out/");
  options.max_side = 64;
  EXPECT_EQ(options_error(options), "--max-side and --jpeg-quality apply to encoded images (an image folder, tar "
                                    "shards, a Parquet set of images)");
  options = pixels("out.parquet");
  options.layout = ConvertLayout::kPng;
  EXPECT_EQ(options_error(options), "--layout png writes a sharded set: give a directory (OUT/), not '" +
                                        (dir / "out.parquet").string() + "'");
  // What applies to pixel sets only, given for encoded images.
  options.input = dir / "folder";
  options.output = dir.path() / "images/";
  options.layout = ConvertLayout::kImage;
  EXPECT_EQ(options_error(options), "--layout and --page-rows apply to pixel sets; an image folder is written as its "
                                    "images' bytes");
  options.layout.reset();
  options.jpeg_quality = 80;
  EXPECT_EQ(options_error(options), "--jpeg-quality applies to the images --max-side re-encodes: give --max-side too");
  EXPECT_NO_THROW(check_convert_options(pixels("out.parquet")));
}

TEST(ConvertDataset, LayoutNamesParseOrListTheChoices) {
  EXPECT_EQ(parse_convert_layout("columns"), ConvertLayout::kColumns);
  EXPECT_EQ(parse_convert_layout("image"), ConvertLayout::kImage);
  EXPECT_EQ(parse_convert_layout("png"), ConvertLayout::kPng);
  try {
    parse_convert_layout("rows");
    ADD_FAILURE() << "no OptionsError";
  } catch (const OptionsError& error) {
    EXPECT_STREQ(error.what(), "unknown layout 'rows' (use columns, image or png)");
  }
}

// The text `feeder convert` prints, from the report's values alone: names from the data escaped.
TEST(ConvertReportText, AnEncodedSetsReportIsTheCommandsText) {
  ConvertReport report;
  report.set = ConvertedSet::kEncodedImages;
  report.input_name = "photos\x1b[2J/";
  report.output_name = "out/";
  report.num_rows = 11;
  report.shards = {{"part-00000.parquet", 8, 1, 3000}, {"part-00001.parquet", 3, 1, 1200}};
  report.input_bytes = 4096;
  report.output_bytes = 4200;
  report.read_seconds = 0.25;
  report.write_seconds = 0.5;
  report.labeled = true;
  report.num_classes = 2;
  report.class_names = {"cat", "dog\r"};
  report.skipped = "1 files that are not images, 0 images of formats feeder does not decode";
  report.order = "the folder's order, sorted by class";
  report.not_images = {1, {"photos/dog/x.jpg: not an image"}};
  report.reencoded = ReencodedImages{64, 90, 3, 30000, 9000, 0.125};
  report.not_decoded = {2, {"a.jpg: bad JPEG", "b.jpg: bad JPEG"}};
  EXPECT_EQ(format_convert_report(report),
            "| input | output | images | classes | shards | row groups | encoded | output | read s | write s |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n"
            "| photos\\x1B[2J/ | out/ | 11 | 2 | 2 | 2 | 4.0 KiB | 4.1 KiB | 0.250 | 0.500 |\n"
            "\n"
            "labels: 0 cat, 1 dog\\x0D\n"
            "skipped: 1 files that are not images, 0 images of formats feeder does not decode\n"
            "not images: 1, written as they are; the first: photos/dog/x.jpg: not an image\n"
            "re-encoded: 3 images larger than 64 px on a side, as JPEG of quality 90: 29 KiB -> 8.8 KiB, 0.125 s\n"
            "not decoded: 2, written as they are; the first: a.jpg: bad JPEG; b.jpg: bad JPEG\n"
            "rows in the folder's order, sorted by class: give --shuffle-on-write SEED for a set that streams well\n");
  report.shuffle_seed = 7;
  report.class_names.clear();
  report.labeled = false;
  report.skipped.clear();
  report.not_images = {};
  report.reencoded.reset();
  const std::string text = format_convert_report(report);
  EXPECT_NE(text.find("\nunlabeled: no .cls members\nrows shuffled with seed 7\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("not decoded"), std::string::npos) << text;  // said with the re-encoding only
}

TEST(ConvertReportText, APixelSetsReportsAreTheCommandsText) {
  ConvertReport report;
  report.set = ConvertedSet::kFile;
  report.input_name = "in.csv";
  report.output_name = "out.parquet";
  report.format = "parquet columns ZSTD";
  report.num_rows = 30;
  report.shape = ImageShape{1, 28, 28};
  report.input_bytes = 3'000'000;
  report.output_bytes = 1'000'000;
  report.read_seconds = 0.5;
  report.write_seconds = 0.25;
  EXPECT_EQ(format_convert_report(report),
            "| input | output | format | rows | shape | input MB | output MB | ratio | read s | write s | total s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n"
            "| in.csv | out.parquet | parquet columns ZSTD | 30 | 1x28x28 | 3.0 | 1.0 | 3.00x | 0.500 | 0.250 | 0.750 |\n");
  report.set = ConvertedSet::kShardedPixels;
  report.output_name = "shards/";
  report.shards = {{"part-00000.parquet", 20, 2, 600'000}, {"part-00001.parquet", 10, 1, 400'000}};
  report.label_runs = LabelRuns{2, 15};
  EXPECT_EQ(format_convert_report(report),
            "| input | output | format | rows | shape | shards | input MB | output MB | ratio | read s | write s | total s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
            "| in.csv | shards/ | parquet columns ZSTD | 30 | 1x28x28 | 2 | 3.0 | 1.0 | 3.00x | 0.500 | 0.250 | 0.750 |\n"
            "\n"
            "| shard | rows | row groups | MB |\n"
            "|---|---|---|---|\n"
            "| part-00000.parquet | 20 | 2 | 0.6 |\n"
            "| part-00001.parquet | 10 | 1 | 0.4 |\n"
            "\n"
            "rows in 2 runs of one label (15 rows each on average, as in a set sorted by label): give --shuffle-on-write "
            "SEED for a set that streams well\n");
  report.shuffle_seed = 3;
  const std::string text = format_convert_report(report);
  EXPECT_TRUE(text.ends_with("\nrows shuffled with seed 3 (recorded in index.json)\n")) << text;
}

}  // namespace
}  // namespace feeder

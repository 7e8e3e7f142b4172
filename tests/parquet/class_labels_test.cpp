// Class names from the `huggingface` metadata Hugging Face datasets writes, on the fixtures DuckDB
// wrote with it (tests/data/images/README.md) and on metadata built here for the other cases.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feeder/formats/parquet/class_labels.h"

namespace feeder::parquet {
namespace {

const std::string kImages = std::string(FEEDER_TEST_DATA_DIR) + "/images";

FileMetadata with_huggingface(const std::string& value) {
  FileMetadata metadata;
  metadata.key_values.push_back({"other", std::string("{}")});
  metadata.key_values.push_back({"huggingface", value});
  return metadata;
}

TEST(ClassLabels, NamesOfAHuggingFaceSetWrittenByDuckDB) {
  const std::vector<std::string> expected = {"cat", "dog", "fox"};
  EXPECT_EQ(class_label_names(kImages + "/hf"), expected);
  EXPECT_EQ(class_label_names(kImages + "/hf/train-00001-of-00002.parquet"), expected);
  // Files without the key, and paths that are not Parquet: no names.
  EXPECT_TRUE(class_label_names(kImages + "/binary.parquet").empty());
  EXPECT_TRUE(class_label_names(kImages + "/README.md").empty());
  EXPECT_TRUE(class_label_names(kImages + "/no-such-dir").empty());
}

TEST(ClassLabels, OnlyAClassLabelOfTheLabelColumnGivesNames) {
  const std::string features =
      R"({"image": {"_type": "Image"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"},
          "fine": {"_type": "Value", "dtype": "int64"}})";
  const std::vector<std::string> ab = {"a", "b"};
  EXPECT_EQ(class_label_names(with_huggingface(R"({"info": {"features": )" + features + "}}")), ab);
  EXPECT_EQ(class_label_names(with_huggingface(R"({"features": )" + features + "}")), ab);  // older files
  EXPECT_TRUE(class_label_names(with_huggingface(R"({"info": {"features": )" + features + "}}"), "fine").empty());
  EXPECT_TRUE(class_label_names(with_huggingface(R"({"info": {"features": )" + features + "}}"), "other").empty());
  EXPECT_TRUE(class_label_names(with_huggingface(R"({"info": {"features": {"label": )"
                                                 R"({"_type": "ClassLabel", "names": ["a", 2]}}}})"))
                  .empty());
  EXPECT_TRUE(class_label_names(with_huggingface("not json {")).empty());
  EXPECT_TRUE(class_label_names(with_huggingface("[1, 2]")).empty());
  EXPECT_TRUE(class_label_names(FileMetadata{}).empty());
}

}  // namespace
}  // namespace feeder::parquet

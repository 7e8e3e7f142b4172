// The walk of an image folder's class folders over symbolic links: loops back to an ancestor are
// listed once, a tree too deep is refused naming where, and linked folders that are not loops are
// listed as torchvision lists them.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "feeder/error.h"
#include "feeder/image/image_folder.h"

namespace feeder {
namespace {

namespace fs = std::filesystem;

class FolderWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("feeder_walk_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    touch(root_ / "a" / "x.jpg");
    touch(root_ / "b" / "y.jpg");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void touch(const fs::path& path) { std::ofstream(path) << "not decoded by a listing"; }
  fs::path root_;
};

TEST_F(FolderWalk, TwoLinksToTheFolderItselfAreListedOnceAndTheWalkEnds) {
  fs::create_directory_symlink(".", root_ / "a" / "l1");
  fs::create_directory_symlink(".", root_ / "a" / "l2");
  fs::create_directory_symlink("..", root_ / "b" / "up");  // to the root, whose class folders loop too
  const auto start = std::chrono::steady_clock::now();
  const ImageFolderListing listing = list_image_folder(root_);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(listing.classes, (std::vector<std::string>{"a", "b"}));
  // a: x.jpg (l1 and l2 are a itself: not entered); b: y.jpg, and below up/ (the root) a once
  // (its links again not entered) and not b, an ancestor.
  EXPECT_EQ(listing.files, (std::vector<fs::path>{root_ / "a" / "x.jpg", root_ / "b" / "y.jpg",
                                                  root_ / "b" / "up" / "a" / "x.jpg"}));
  EXPECT_EQ(listing.labels, (std::vector<int64_t>{0, 1, 1}));
}

TEST_F(FolderWalk, ALinkToAnotherFolderThatIsNoLoopIsListedThroughIt) {
  fs::create_directory_symlink(fs::absolute(root_ / "b"), root_ / "a" / "more");
  const ImageFolderListing listing = list_image_folder(root_);
  // torchvision's order: by directory (a before a/more), then by name.
  EXPECT_EQ(listing.files, (std::vector<fs::path>{root_ / "a" / "x.jpg", root_ / "a" / "more" / "y.jpg",
                                                  root_ / "b" / "y.jpg"}));
  EXPECT_EQ(listing.labels, (std::vector<int64_t>{0, 0, 1}));
}

TEST_F(FolderWalk, AFolderTooDeepIsRefusedNamingIt) {
  fs::path deep = root_ / "a";
  for (int i = 0; i <= kMaxFolderDepth; ++i) deep /= "d";
  fs::create_directories(deep);
  try {
    list_image_folder(root_);
    FAIL() << "no error for a folder " << kMaxFolderDepth + 1 << " deep";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("folders deep"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(root_.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feeder

// libFuzzer target for the image folder walk (list_image_folder, feeder/image/image_folder.h): the
// input is a program that builds a small tree in a scratch directory (folders, files of image and
// other names, names that are not UTF-8, symbolic links to folders of the tree, to its files and to
// nothing), which is then listed. Every link points inside the tree, so the walk never leaves it.
// Any tree must list or throw DataError, without crashes, hangs, leaks or unbounded memory: loops
// of links, however many, are listed once.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_folder.h"

namespace fs = std::filesystem;

namespace {

const fs::path& scratch_root() {
  static const fs::path root = [] {
    fs::path path = fs::temp_directory_path() / ("feeder-folder-fuzz-" + std::to_string(::getpid()));
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(scratch_root(), ignored);
    });
    return path;
  }();
  return root;
}

// Names a step may give: images of each format and case, other files, and bytes that are not UTF-8.
const char* const kNames[] = {"a",     "b",     "c.jpg", "d.PNG", "e.webp", "f.jpeg", "g.txt",  "h.bmp",
                              "\xff",  "i\xfe.jpg", "\xee\x80\x80.png", "j.JPG", "k", "l.png", ".m.jpg", "n.tif"};

class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t next() { return at_ < size_ ? data_[at_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& root = scratch_root();
  std::error_code error;
  fs::remove_all(root, error);  // links are removed, never followed
  if (!fs::create_directories(root, error)) return 0;
  std::vector<fs::path> folders{root};
  std::vector<fs::path> files;
  Program program(data, size);
  constexpr int kMaxSteps = 48;
  for (int step = 0; step < kMaxSteps && !program.done(); ++step) {
    const uint8_t op = program.next() % 5;
    const fs::path& parent = folders[program.next() % folders.size()];
    const fs::path path = parent / kNames[program.next() % std::size(kNames)];
    if (fs::symlink_status(path, error).type() != fs::file_type::not_found) continue;
    switch (op) {
      case 0:  // a folder
        if (fs::create_directory(path, error)) folders.push_back(path);
        break;
      case 1: {  // a file of a few bytes (an image's first bytes, or not)
        std::ofstream out(path, std::ios::binary);
        const uint8_t length = program.next() % 16;
        for (uint8_t i = 0; i < length; ++i) out.put(static_cast<char>(program.next()));
        files.push_back(path);
        break;
      }
      case 2:  // a link to a folder of the tree: an ancestor, itself, or another branch
        fs::create_directory_symlink(folders[program.next() % folders.size()], path, error);
        break;
      case 3:  // a link to a file of the tree
        if (!files.empty()) fs::create_symlink(files[program.next() % files.size()], path, error);
        break;
      case 4:  // a link to nothing
        fs::create_symlink(root / "gone", path, error);
        break;
    }
  }
  try {
    const feeder::ImageFolderListing listing = feeder::list_image_folder(root);
    if (listing.files.size() != listing.sizes.size() || listing.files.size() != listing.labels.size()) std::abort();
    for (const int64_t label : listing.labels)
      if (label < 0 || label >= static_cast<int64_t>(listing.classes.size())) std::abort();
  } catch (const feeder::DataError&) {
  }
  return 0;
}

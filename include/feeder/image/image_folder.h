#pragma once

// A directory in torchvision's ImageFolder layout (root/<class>/.../<image>), read into memory as
// encoded images, or streamed when they take more than the memory budget, with the labels
// torchvision gives them: classes are the sorted names of root's
// subdirectories, indexed from 0; each class's files are taken as os.walk sorted by directory and
// then by name, as torchvision's make_dataset does. Files without an image extension are skipped, as
// torchvision skips them, and counted; so are images of formats feeder does not decode (.bmp, .ppm,
// .pgm, .tif, .tiff), which torchvision would include.
//
// Thread safety: a function; the files are read on `num_threads` threads.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/image/encoded_source.h"

namespace feeder {

struct ImageFolder {
  // In memory (an EncodedImageSource, samples in torchvision's order), or streaming (see below).
  std::shared_ptr<const SampleSource> source;
  bool streaming = false;
  int64_t encoded_bytes = 0;         // the images' files, together
  std::vector<std::string> classes;  // label i is classes[i]
  int64_t skipped_other = 0;         // files without an image extension
  int64_t skipped_unsupported = 0;   // images feeder does not decode (.bmp, .ppm, .pgm, .tif, .tiff)
  std::vector<std::string> first_unsupported;  // the first few of them (paths, sorted), to name
  std::string unreadable_note;  // ImageFolderListing::unreadable_note(), for a warning
};

// The files of an image folder, listed (with their sizes) but not read.
struct ImageFolderListing {
  std::vector<std::string> classes;          // label i is classes[i]
  std::vector<std::filesystem::path> files;  // in torchvision's order
  std::vector<int64_t> sizes;                // bytes, as listed
  std::vector<std::string> versions;         // as listed (an object's ETag), empty where none
  std::vector<int64_t> labels;
  int64_t encoded_bytes = 0;  // the files, together
  int64_t skipped_other = 0;
  int64_t skipped_unsupported = 0;
  std::vector<std::string> first_unsupported;
  // Files whose size could not be read when listed (a dangling symbolic link, a file without
  // permission), by index, with the reason: kept in their place with 0 bytes, as torchvision lists
  // them; decoding one fails (a DataError, left out with skip_bad_samples), as torchvision's read does.
  std::map<int64_t, std::string> unreadable;

  // "" or what `unreadable` holds, for a warning: how many, the first with its reason.
  std::string unreadable_note() const;
};

// "N images of formats feeder does not decode (the first: a, b, c)": what a listing left out that
// torchvision's ImageFolder would have read, for messages.
std::string describe_unsupported(int64_t count, const std::vector<std::string>& first);

// Lists `root` as open_image_folder does, reading no file; throws what it throws for the layout.
// `classes`, when given, are the class names and their order (label i is classes[i]) instead of
// root's own: another set's, so that the same label means the same class in both. Each class folder
// must then be one of them; a class without a folder has no images here.
ImageFolderListing list_image_folder(const std::filesystem::path& root, const std::vector<std::string>& classes = {});

// Files `rows` (indices into the listing) read into memory, in that order, on `num_threads` threads
// (0: one per core): an EncodedImageSource called `name`. Throws DataError naming a file that
// cannot be read or whose size changed since it was listed.
std::shared_ptr<EncodedImageSource> read_image_files(const ImageFolderListing& listing, std::span<const int64_t> rows,
                                                     int num_threads, const std::string& name);

// The deepest a class folder's subfolders are listed; deeper is refused (a loop of symbolic links
// through other paths, or a tree no image set has). A subfolder that is one of its own ancestors
// (a link to "." or to a parent) is listed once and not entered again.
inline constexpr int kMaxFolderDepth = 64;

// Files per block of a streamed folder.
inline constexpr int64_t kFolderBlockFiles = 64;

// The listing of files someone else listed (torchvision's dataset.samples), with their labels and
// class names, in that order; reads only their sizes. Throws DataError naming a file that cannot be
// read, OptionsError when there are not as many labels as files.
ImageFolderListing list_image_files(std::vector<std::filesystem::path> files, std::vector<int64_t> labels,
                                    std::vector<std::string> classes);

// The listed files, held in memory when they fit `memory_budget` (0: no limit), else streamed in
// blocks of kFolderBlockFiles: in a fixed mixed order of the files with `mix_streamed` (see
// open_image_folder), in the listing's order without it. `name` names the set in messages.
ImageFolder open_image_listing(const ImageFolderListing& listing, const std::string& name, int num_threads,
                               int64_t memory_budget, bool mix_streamed);

// Throws DataError for a root that is missing or not a directory, one without class folders, a
// class folder without images (naming it), or a file that cannot be read.
//
// When the images take more than `memory_budget` (0: no limit) they are not read now but streamed:
// the source's blocks are kFolderBlockFiles files each, read as a loader's window needs them (a
// stream's budget counts their bytes). Its samples are numbered in a fixed mixed order of the files
// (epoch_order(N, true, kFolderStreamSeed, 0) of torchvision's order), not by class, so that every
// block holds images of many classes and a window of the stream mixes them as a full shuffle would:
// a folder is sorted by class, and blocks of neighbouring files would each hold one. A file that
// changed size since the folder was listed fails the batch that needs it, named.
// `classes`: as list_image_folder's.
ImageFolder open_image_folder(const std::filesystem::path& root, int num_threads = 0, int64_t memory_budget = 0,
                              const std::vector<std::string>& classes = {});
inline constexpr uint64_t kFolderStreamSeed = 0x1a9e5f01d3c7b2e5;

// Whether an image folder reads a file of this name: .jpg, .jpeg, .png or .webp, in any case.
bool is_image_file_name(const std::string& name);

}  // namespace feeder

#include "feeder/image/image_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include <xxhash.h>

#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/io/file_system.h"
#include "feeder/io/object_storage.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"
#include "feeder/util/utf8.h"

namespace fs = std::filesystem;

namespace feeder {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool ends_with_any(const std::string& name, std::initializer_list<const char*> endings) {
  return std::any_of(endings.begin(), endings.end(), [&](const char* ending) {
    const size_t n = std::strlen(ending);
    return name.size() >= n && name.compare(name.size() - n, n, ending) == 0;
  });
}

// Reads a whole file into `out` (exactly `size` bytes, as listed, of the version listed); throws
// DataError naming it. Opened as listed: an object in a store is then one request, not two.
void read_whole(const fs::path& path, uint8_t* out, int64_t size, const std::string& version) {
  FileEntry listed(path, FileKind::kFile, size);
  listed.version = version;
  const std::shared_ptr<const RandomAccessFile> file = file_system_for(path).open_listed(listed);
  if (file->size() != size)
    throw DataError(path.string() + ": its size changed to " + std::to_string(file->size()) + " bytes since the folder "
                    "was listed (" + std::to_string(size) + ")");
  if (file->read_at(0, std::span<uint8_t>(out, static_cast<size_t>(size))) != size)
    throw DataError(path.string() + ": cannot read: it became shorter while being read");
}

// A folder held in memory and the same folder streamed order their files differently (the stream
// mixes the classes into its blocks), so a state saved in one mode is of another dataset in the other.
constexpr const char* kFolderModesNote =
    "an image folder held in memory (within the memory budget) and the same folder streamed (over it) order "
    "its files differently, so a state saved in one cannot continue in the other: give the memory budget it "
    "was saved with";

// A folder within the budget: its files' bytes in memory (the folder's order, as torchvision's).
class HeldImageFolder final : public EncodedImageSource {
 public:
  using EncodedImageSource::EncodedImageSource;
  std::string other_dataset_note() const override { return std::string(kFolderModesNote) + " (held here)"; }
};

// A folder too large for the budget: the files in a fixed mixed order (see open_image_folder), in
// blocks of kFolderBlockFiles, each block read file by file into the stream's buffer.
class StreamedImageFolder final : public SampleSource {
 public:
  StreamedImageFolder(std::string name, std::vector<fs::path> files, std::vector<int64_t> sizes,
                      std::vector<std::string> versions, std::vector<int64_t> labels,
                      std::map<int64_t, std::string> unreadable)
      : name_(std::move(name)), files_(std::move(files)), sizes_(std::move(sizes)), versions_(std::move(versions)),
        labels_(std::move(labels)), unreadable_(std::move(unreadable)) {
    const auto count = static_cast<int64_t>(files_.size());
    for (int64_t first = 0; first < count; first += kFolderBlockFiles) block_starts_.push_back(first);
    block_starts_.push_back(count);
    XXH3_state_t* state = XXH3_createState();
    if (!state) throw std::bad_alloc();
    XXH3_64bits_reset(state);
    for (int64_t i = 0; i < count; ++i) {
      const std::string path = files_[static_cast<size_t>(i)].string();
      XXH3_64bits_update(state, path.data(), path.size() + 1);
      XXH3_64bits_update(state, &sizes_[static_cast<size_t>(i)], sizeof(int64_t));
      XXH3_64bits_update(state, &labels_[static_cast<size_t>(i)], sizeof(int64_t));
    }
    fingerprint_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  }

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  // Encoded images, each labeled by its class folder.
  const Schema& schema() const override { return schema_; }
  // XXH3 of the files' paths, sizes and labels in the stream's order (not of their bytes, which
  // are not read to open the folder).
  uint64_t fingerprint() const override { return fingerprint_; }
  std::string other_dataset_note() const override { return std::string(kFolderModesNote) + " (streamed here)"; }
  std::string name() const override { return name_; }
  std::string sample_name(int64_t i) const override { return files_.at(static_cast<size_t>(i)).string(); }
  std::span<const int64_t> block_starts() const override { return block_starts_; }
  int64_t max_read_bytes() const override { return 0; }  // files are read straight into the block
  bool reads_over_network() const override { return !files_.empty() && is_remote_path(files_.front().string()); }
  // A block's files' bytes, as listed.
  int64_t variable_bytes(int64_t block_idx, size_t field) const override {
    if (field != 0) return 0;
    int64_t bytes = 0;
    for (int64_t i = block_starts_.at(static_cast<size_t>(block_idx)); i < block_starts_[static_cast<size_t>(block_idx) + 1]; ++i)
      bytes += sizes_[static_cast<size_t>(i)];
    return bytes;
  }
  // Each block's files read straight into it.
  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>&, std::span<const BlockBuffers> out) const override {
    for (size_t b = 0; b < blocks.size(); ++b) {
      const int64_t first = block_starts_.at(static_cast<size_t>(blocks[b]));
      int64_t used = 0;
      for (int64_t i = first; i < block_starts_[static_cast<size_t>(blocks[b]) + 1]; ++i) {
        const auto at = static_cast<size_t>(i);
        if (sizes_[at] > out[b].capacity - used) throw std::logic_error(name_ + ": block buffer too small");
        if (!unreadable_.contains(i)) read_whole(files_[at], out[b].payload + used, sizes_[at], versions_[at]);
        used += sizes_[at];
        out[b].ends[i - first] = used;
        out[b].labels[i - first] = labels_[at];
      }
    }
  }
  std::vector<std::pair<int64_t, int64_t>> block_label_ranges() const override {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t b = 0; b + 1 < block_starts_.size(); ++b) {
      const auto begin = labels_.begin() + block_starts_[b];
      const auto [low, high] = std::minmax_element(begin, labels_.begin() + block_starts_[b + 1]);
      ranges.emplace_back(*low, *high);
    }
    return ranges;
  }
  std::vector<int64_t> labels_alone() const override { return labels_; }

 private:
  std::string name_;
  std::vector<fs::path> files_;  // in the stream's order
  std::vector<int64_t> sizes_;   // as listed
  std::vector<std::string> versions_;  // as listed
  std::vector<int64_t> labels_;
  std::map<int64_t, std::string> unreadable_;  // by index in the stream's order: not read, 0 bytes
  std::vector<int64_t> block_starts_;
  uint64_t fingerprint_ = 0;
  const Schema schema_ = image_schema({0, 0, 0}, true, true);
};

}  // namespace

bool is_image_file_name(const std::string& name) { return ends_with_any(lower(name), {".jpg", ".jpeg", ".png", ".webp"}); }

namespace {

// The code points Python sees in a name (os.fsdecode: UTF-8, each byte of an invalid sequence as
// the lone surrogate U+DC80..U+DCFF), for sorting as torchvision's sorted() sorts: by bytes, a
// name with such a byte (0xFF) would come after U+E000 (EE 80 80); in Python it comes before.
std::vector<char32_t> python_code_points(const std::string& name) {
  std::vector<char32_t> points;
  const auto* bytes = reinterpret_cast<const unsigned char*>(name.data());
  for (size_t i = 0; i < name.size();) {
    char32_t point = 0;
    const int length = utf8_sequence(bytes + i, name.size() - i, point);
    points.push_back(length > 0 ? point : 0xDC00 + bytes[i]);  // surrogateescape: the byte alone
    i += length > 0 ? static_cast<size_t>(length) : 1;
  }
  return points;
}

bool python_less(const std::string& a, const std::string& b) {
  // Bytes and code points order alike where the first difference is ASCII in both (the common
  // prefix decodes alike): decoded only otherwise.
  const auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  const bool a_ended = at_a == a.end(), b_ended = at_b == b.end();
  const bool ascii_before = at_a == a.begin() || static_cast<unsigned char>(at_a[-1]) < 0x80;
  if ((a_ended || b_ended) && ascii_before) return a_ended && !b_ended;  // a prefix of whole code points
  if (!a_ended && !b_ended && static_cast<unsigned char>(*at_a) < 0x80 && static_cast<unsigned char>(*at_b) < 0x80) return *at_a < *at_b;
  return python_code_points(a) < python_code_points(b);
}

// What a class folder's walk finds: image files as (directory, their listed entry), in no order yet.
struct FolderWalk {
  const FileSystem& files;
  std::vector<std::pair<std::string, FileEntry>> found;  // (directory, the file's entry)
  std::vector<std::string>& unsupported;
  int64_t& skipped_other;
  // The directories from the class folder down to the one being listed: a directory that is one
  // of its own ancestors (a symbolic link loop) is listed once, not entered again; with two such
  // loops the walk would otherwise grow without end.
  std::vector<std::pair<uint64_t, uint64_t>> ancestors;

  // Lists `dir`, whose entries are `depth` folders below the class folder, and what is below it.
  void walk(const fs::path& dir, int depth) {
    for (const FileEntry& entry : files.list(dir)) {
      if (entry.directory()) {
        if (depth >= kMaxFolderDepth)
          throw DataError(entry.path.string() + ": more than " + std::to_string(kMaxFolderDepth) +
                          " folders deep in the class folder (a loop of symbolic links?)");
        const bool known = entry.identity != std::pair<uint64_t, uint64_t>{0, 0};
        if (known && std::find(ancestors.begin(), ancestors.end(), entry.identity) != ancestors.end()) continue;
        ancestors.push_back(entry.identity);
        walk(entry.path, depth + 1);
        ancestors.pop_back();
        continue;
      }
      const std::string name = entry.path.filename().string();
      if (is_image_file_name(name))
        found.emplace_back(dir.string(), entry);
      else if (ends_with_any(lower(name), {".bmp", ".ppm", ".pgm", ".tif", ".tiff"}))
        unsupported.push_back(entry.path.string());
      else
        ++skipped_other;
    }
  }
};

// The size and version of the listing's last file, from what listing or stat'ing it said; a file
// whose size cannot be read is kept with 0 bytes and its reason.
void add_size(ImageFolderListing& listing, const FileEntry& entry) {
  if (!entry.file())
    listing.unreadable.emplace(static_cast<int64_t>(listing.sizes.size()),
                               entry.kind == FileKind::kMissing ? "No such file or directory" : "not a regular file");
  listing.sizes.push_back(entry.file() ? entry.size : 0);
  listing.versions.push_back(entry.file() ? entry.version : "");
  listing.encoded_bytes += listing.sizes.back();
}

// The listing's sizes, each file's as it is now (a stat each: files given by path, not listed).
void add_sizes(ImageFolderListing& listing) {
  const FileSystem& files = file_system_for(listing.files.empty() ? fs::path() : listing.files.front());
  for (const fs::path& file : listing.files) add_size(listing, files.stat(file));
}

}  // namespace

ImageFolderListing list_image_folder(const fs::path& root, const std::vector<std::string>& classes) {
  const FileSystem& files = file_system_for(root);
  if (!files.stat(root).directory())
    throw DataError(root.string() + ": not a directory (an image folder has one folder of images per class)");
  ImageFolderListing listing;
  for (const FileEntry& entry : files.list(root))
    if (entry.directory()) listing.classes.push_back(entry.path.filename().string());
  std::sort(listing.classes.begin(), listing.classes.end(), python_less);
  if (listing.classes.empty())
    throw DataError(root.string() + ": no class folders (an image folder has one folder of images per class: "
                    "root/<class>/<image>)");

  // torchvision's make_dataset: per class, os.walk sorted by directory, then each directory's files by name.
  // Each class folder's label: its place among root's folders, or among `classes`.
  std::vector<int64_t> folder_labels;
  for (size_t i = 0; i < listing.classes.size(); ++i) {
    if (classes.empty()) {
      folder_labels.push_back(static_cast<int64_t>(i));
      continue;
    }
    const auto it = std::find(classes.begin(), classes.end(), listing.classes[i]);
    if (it == classes.end()) {
      std::string names;
      constexpr size_t kNamesShown = 10;
      for (size_t n = 0; n < std::min(classes.size(), kNamesShown); ++n) names += (n ? ", " : "") + classes[n];
      if (classes.size() > kNamesShown) names += ", ...";
      throw DataError(root.string() + ": the class folder " + listing.classes[i] + " is not one of the " +
                      std::to_string(classes.size()) + " classes it is labeled with (" + names + ")");
    }
    folder_labels.push_back(it - classes.begin());
  }
  std::vector<std::string> empty_classes;
  std::vector<std::string> unsupported;
  for (size_t folder = 0; folder < listing.classes.size(); ++folder) {
    const int64_t label = folder_labels[folder];
    const fs::path class_dir = root / listing.classes[folder];
    FolderWalk walk{files, {}, unsupported, listing.skipped_other, {files.stat(class_dir).identity}};
    walk.walk(class_dir, 0);
    std::vector<std::pair<std::string, FileEntry>>& found = walk.found;
    if (found.empty()) empty_classes.push_back(listing.classes[folder]);
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return python_less(a.first, b.first);  // os.walk's directories, sorted
      return python_less(a.second.path.filename().string(), b.second.path.filename().string());
    });
    for (const auto& [directory, entry] : found) {
      listing.files.push_back(fs::path(directory) / entry.path.filename());
      listing.labels.push_back(label);
      add_size(listing, entry);
    }
  }
  // Listed in the directories' order: sorted, so that the same ones are named every time.
  std::sort(unsupported.begin(), unsupported.end());
  listing.skipped_unsupported = static_cast<int64_t>(unsupported.size());
  constexpr size_t kNamed = 3;
  unsupported.resize(std::min(unsupported.size(), kNamed));
  listing.first_unsupported = std::move(unsupported);
  if (!classes.empty()) listing.classes = classes;
  if (!empty_classes.empty()) {
    std::string list;
    for (const auto& name : empty_classes) list += (list.empty() ? "" : ", ") + name;
    throw DataError(root.string() + ": no images (.jpg, .jpeg, .png, .webp) in the class folder" +
                    (empty_classes.size() > 1 ? "s " : " ") + list);
  }
  return listing;
}

std::string ImageFolderListing::unreadable_note() const {
  if (unreadable.empty()) return "";
  const auto& [first, why] = *unreadable.begin();
  return std::to_string(unreadable.size()) + " listed file" + (unreadable.size() > 1 ? "s" : "") +
         " could not be read (the first: " + files[static_cast<size_t>(first)].string() + ": " + why +
         "); each fails when it is decoded, as torchvision's read fails (or is left out with on_error=\"skip\", "
         "--skip-bad-images)";
}

std::shared_ptr<EncodedImageSource> read_image_files(const ImageFolderListing& listing, std::span<const int64_t> rows,
                                                     int num_threads, const std::string& name) {
  const int threads = resolve_num_threads(num_threads, "image folder: num_threads");
  // One buffer for every file, each read into its place in parallel.
  std::vector<int64_t> offsets(rows.size() + 1, 0);
  std::vector<int64_t> labels;
  std::vector<std::string> names;
  labels.reserve(rows.size());
  names.reserve(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto at = static_cast<size_t>(rows[r]);
    offsets[r + 1] = offsets[r] + listing.sizes.at(at);
    labels.push_back(listing.labels[at]);
    names.push_back(listing.files[at].string());
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(offsets.back()));
  parallel_for(static_cast<int64_t>(rows.size()), threads, [&](int64_t r) {
    throw_if_interrupted();
    const auto at = static_cast<size_t>(r);
    const auto file = static_cast<size_t>(rows[at]);
    if (!listing.unreadable.contains(rows[at]))
      read_whole(listing.files[file], bytes.data() + offsets[at], offsets[at + 1] - offsets[at], listing.versions[file]);
  });
  return std::make_shared<HeldImageFolder>(name, std::move(bytes), std::move(offsets), std::move(labels),
                                           std::move(names), true);
}

std::string describe_unsupported(int64_t count, const std::vector<std::string>& first) {
  std::string text = std::to_string(count) + " images of formats feeder does not decode";
  if (first.empty()) return text;
  text += " (the first: ";
  for (size_t i = 0; i < first.size(); ++i) text += (i ? ", " : "") + first[i];
  return text + ")";
}

ImageFolderListing list_image_files(std::vector<fs::path> files, std::vector<int64_t> labels,
                                    std::vector<std::string> classes) {
  if (files.size() != labels.size())
    throw OptionsError("list_image_files: " + std::to_string(files.size()) + " files but " +
                       std::to_string(labels.size()) + " labels");
  ImageFolderListing listing;
  listing.classes = std::move(classes);
  listing.files = std::move(files);
  listing.labels = std::move(labels);
  add_sizes(listing);
  return listing;
}

ImageFolder open_image_listing(const ImageFolderListing& listing, const std::string& name, int num_threads,
                               int64_t memory_budget, bool mix_streamed) {
  resolve_num_threads(num_threads, "image folder: num_threads");
  ImageFolder folder;
  folder.classes = listing.classes;
  folder.encoded_bytes = listing.encoded_bytes;
  folder.skipped_other = listing.skipped_other;
  folder.skipped_unsupported = listing.skipped_unsupported;
  folder.first_unsupported = listing.first_unsupported;
  folder.unreadable_note = listing.unreadable_note();
  const auto count = static_cast<int64_t>(listing.files.size());
  if (memory_budget > 0 && listing.encoded_bytes > memory_budget) {
    // Too large to hold: streamed, in a fixed mixed order of the files (or the listing's own).
    std::vector<int64_t> order(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
    if (mix_streamed) order = epoch_order(count, true, kFolderStreamSeed, 0);
    std::vector<fs::path> files;
    std::vector<int64_t> sizes, labels;
    std::vector<std::string> versions;
    std::map<int64_t, std::string> unreadable;
    for (const int64_t i : order) {
      const auto at = static_cast<size_t>(i);
      if (const auto it = listing.unreadable.find(i); it != listing.unreadable.end())
        unreadable.emplace(static_cast<int64_t>(files.size()), it->second);
      files.push_back(listing.files[at]);
      sizes.push_back(listing.sizes[at]);
      versions.push_back(listing.versions[at]);
      labels.push_back(listing.labels[at]);
    }
    folder.source = std::make_shared<StreamedImageFolder>(name, std::move(files), std::move(sizes), std::move(versions),
                                                          std::move(labels), std::move(unreadable));
    folder.streaming = true;
    return folder;
  }
  std::vector<int64_t> all(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) all[static_cast<size_t>(i)] = i;
  folder.source = read_image_files(listing, all, num_threads, name);
  return folder;
}

ImageFolder open_image_folder(const fs::path& root, int num_threads, int64_t memory_budget,
                              const std::vector<std::string>& classes) {
  return open_image_listing(list_image_folder(root, classes), root.string(), num_threads, memory_budget, true);
}

}  // namespace feeder

#include "feeder/io/object_storage.h"
#include "feeder/image/tar_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "feeder/error.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/io/file_system.h"

namespace fs = std::filesystem;

namespace feeder {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::vector<fs::path> list_tar_files(const std::string& spec) {
  std::vector<fs::path> paths;
  const fs::path path(spec);
  const FileSystem& files = file_system_for(path);
  const FileEntry what = files.stat(path);
  if (what.directory()) {
    for (const FileEntry& entry : files.list(path))
      if (entry.file() && entry.path.extension() == ".tar") paths.push_back(entry.path);
  } else if (has_glob_chars(path.filename().string())) {
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    const std::string pattern = path.filename().string();
    if (files.stat(dir).directory())
      for (const FileEntry& entry : files.list(dir))
        if (entry.file() && ::fnmatch(pattern.c_str(), entry.path.filename().c_str(), FNM_PERIOD) == 0)
          paths.push_back(entry.path);
  } else if (what.file()) {
    paths.push_back(path);
  } else {
    throw DataError(spec + ": no such file or directory");
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw DataError(spec + ": no .tar files");
  return paths;
}

// An archive reader over a shard from byte `start` on, read in ranges through the file system: an
// entry's headers begin there. Owned by one thread.
class ShardReader {
 public:
  ShardReader(const fs::path& path, int64_t start)
      : path_(path), file_(file_system_for(path).open(path)), offset_(start) {
    archive_ = archive_read_new();
    if (!archive_) throw std::bad_alloc();
    archive_read_support_format_tar(archive_);
    archive_read_set_callback_data(archive_, this);
    archive_read_set_read_callback(archive_, &ShardReader::read);
    archive_read_set_skip_callback(archive_, &ShardReader::skip);
    if (archive_read_open1(archive_) != ARCHIVE_OK) {
      const std::string why = archive_error_string(archive_) ? archive_error_string(archive_) : "unknown error";
      close();
      throw DataError(path.string() + ": not an uncompressed tar file (" + why + ")");
    }
  }
  ~ShardReader() { close(); }
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  // The next entry, or nullptr at the end of the archive. Throws DataError for a damaged one.
  archive_entry* next() {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(archive_, &entry);
    if (status == ARCHIVE_EOF) return nullptr;
    if (status < ARCHIVE_WARN) {
      // A reader made at a member's header that finds none there: the file is not (or no more) a tar.
      if (!read_any_) throw DataError(path_.string() + ": not an uncompressed tar file (" + error() + ")");
      // Reaching the next header skips the last member's data: a tar cut short is cut there.
      throw DataError(path_.string() + ": after the member " + last_member_ + ": " + error());
    }
    read_any_ = true;
    const char* name = archive_entry_pathname(entry);
    last_member_ = name ? name : "";
    return entry;
  }
  const RandomAccessFile& file() const { return *file_; }
  // The current entry's header position, from the start of the shard.
  int64_t header_position(int64_t start) const { return start + archive_read_header_position(archive_); }
  // Reads the current entry's `size` bytes into `out`.
  void read_data(uint8_t* out, int64_t size, const char* member) {
    int64_t done = 0;
    while (done < size) {
      const la_ssize_t n = archive_read_data(archive_, out + done, static_cast<size_t>(size - done));
      if (n < 0) throw DataError(path_.string() + ": " + member + ": " + error());
      if (n == 0) throw DataError(path_.string() + ": " + member + ": the tar ends inside it (truncated)");
      done += n;
    }
  }

 private:
  // libarchive's C code calls this: a failed read is reported through it, never thrown across it.
  static la_ssize_t read(archive* a, void* data, const void** buffer) {
    auto* self = static_cast<ShardReader*>(data);
    try {
      const int64_t n = self->file_->read_at(self->offset_, self->buffer_);
      self->offset_ += n;
      *buffer = self->buffer_;
      return static_cast<la_ssize_t>(n);
    } catch (const std::exception& e) {
      archive_set_error(a, EIO, "%s", e.what());
      return -1;
    }
  }
  static la_int64_t skip(archive*, void* data, la_int64_t request) {
    static_cast<ShardReader*>(data)->offset_ += request;  // past the end, reads return 0: truncation
    return request;
  }
  std::string error() const {
    const char* text = archive_error_string(archive_);
    return text ? text : "damaged tar";
  }
  void close() {
    if (archive_) archive_read_free(archive_);
    archive_ = nullptr;
  }

  fs::path path_;
  std::shared_ptr<const RandomAccessFile> file_;
  archive* archive_ = nullptr;
  int64_t offset_ = 0;
  bool read_any_ = false;  // an entry was read
  std::string last_member_;  // the name of the entry next() returned last, for its errors
  alignas(64) uint8_t buffer_[64 << 10];
};

// One sample's image member.
struct Member {
  std::string name;
  int64_t header = 0;  // offset of its first header in the shard
  int64_t size = 0;
};

bool is_image_extension(const std::string& extension) {
  return extension == "jpg" || extension == "jpeg" || extension == "png" || extension == "webp";
}

class TarShardSource final : public SampleSource {
 public:
  explicit TarShardSource(const std::string& spec) : name_(spec) {
    shards_ = list_tar_files(spec);
    block_starts_.push_back(0);
    bool some_labeled = false;
    bool some_unlabeled = false;
    std::string unlabeled_example;
    for (size_t shard = 0; shard < shards_.size(); ++shard) {
      const size_t first = members_.size();
      scan(shard, some_labeled, some_unlabeled, unlabeled_example);
      for (size_t s = first; s < members_.size(); s += kTarBlockSamples) {
        block_starts_.push_back(static_cast<int64_t>(std::min(members_.size(), s + kTarBlockSamples)));
      }
      shard_first_.push_back(static_cast<int64_t>(first));
    }
    shard_first_.push_back(static_cast<int64_t>(members_.size()));
    if (members_.empty()) throw DataError(spec + ": no images (key.jpg, .jpeg, .png, .webp) in its tar shards");
    if (some_labeled && some_unlabeled)
      throw DataError(unlabeled_example + ": no label (key.cls), but other samples have one");
    labeled_ = some_labeled;
    schema_ = image_schema({0, 0, 0}, true, labeled_);
    XXH3_state_t* state = XXH3_createState();
    if (!state) throw std::bad_alloc();
    XXH3_64bits_reset(state);
    for (size_t i = 0; i < members_.size(); ++i) {
      XXH3_64bits_update(state, members_[i].name.data(), members_[i].name.size() + 1);
      XXH3_64bits_update(state, &members_[i].size, sizeof(int64_t));
      XXH3_64bits_update(state, &labels_[i], sizeof(int64_t));
    }
    for (const fs::path& shard : shards_) XXH3_64bits_update(state, shard.filename().c_str(), shard.filename().string().size() + 1);
    fingerprint_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    for (const Member& member : members_) encoded_bytes_ += member.size;
  }

  int64_t size() const override { return static_cast<int64_t>(members_.size()); }
  // Encoded images, labeled when the shards' samples have a key.cls.
  const Schema& schema() const override { return schema_; }
  // XXH3 of the shards' names and their members' names, sizes and labels.
  uint64_t fingerprint() const override { return fingerprint_; }
  std::string name() const override { return name_; }
  std::string sample_name(int64_t i) const override {
    return shards_[shard_of(i)].string() + ": " + members_.at(static_cast<size_t>(i)).name;
  }
  std::span<const int64_t> block_starts() const override { return block_starts_; }
  int64_t max_read_bytes() const override { return int64_t{64} << 10; }  // a reader's buffer
  bool reads_over_network() const override { return !shards_.empty() && is_remote_path(shards_.front().string()); }
  // A block's members' bytes.
  int64_t variable_bytes(int64_t block_idx, size_t field) const override {
    if (field != 0) return 0;
    int64_t bytes = 0;
    for (int64_t i = block_starts_.at(static_cast<size_t>(block_idx)); i < block_starts_[static_cast<size_t>(block_idx) + 1]; ++i)
      bytes += members_[static_cast<size_t>(i)].size;
    return bytes;
  }
  std::vector<std::pair<int64_t, int64_t>> block_label_ranges() const override {
    if (!labeled_) return {};
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t b = 0; b + 1 < block_starts_.size(); ++b) {
      const auto [low, high] = std::minmax_element(labels_.begin() + block_starts_[b], labels_.begin() + block_starts_[b + 1]);
      ranges.emplace_back(*low, *high);
    }
    return ranges;
  }

  void read_blocks(std::span<const int64_t> blocks, std::vector<uint8_t>&, std::span<const BlockBuffers> out) const override {
    for (size_t b = 0; b < blocks.size(); ++b)
      read_block_of(blocks[b], out[b].payload, out[b].capacity, out[b].ends, out[b].labels);
  }

  int64_t num_shards() const { return static_cast<int64_t>(shards_.size()); }
  int64_t encoded_bytes() const { return encoded_bytes_; }
  int64_t skipped_members() const { return skipped_; }

 private:
  // One pass over the shard from the block's first image header, taking its images in order.
  void read_block_of(int64_t block_idx, uint8_t* bytes, int64_t capacity, int64_t* ends, int64_t* labels) const {
    const int64_t first = block_starts_.at(static_cast<size_t>(block_idx));
    const int64_t last = block_starts_[static_cast<size_t>(block_idx) + 1];
    const fs::path& shard = shards_[shard_of(first)];
    const int64_t start = members_[static_cast<size_t>(first)].header;
    ShardReader reader(shard, start);
    int64_t next = first;
    int64_t used = 0;
    while (next < last) {
      archive_entry* entry = reader.next();
      const Member& wanted = members_[static_cast<size_t>(next)];
      if (!entry) throw DataError(shard.string() + ": " + wanted.name + ": missing (the shard changed after it was opened)");
      if (reader.header_position(start) != wanted.header) continue;
      if (archive_entry_pathname(entry) != wanted.name || archive_entry_size(entry) != wanted.size)
        throw DataError(shard.string() + ": " + wanted.name + ": changed after the shard was opened");
      if (wanted.size > capacity - used) throw std::logic_error(name_ + ": block buffer too small");
      reader.read_data(bytes + used, wanted.size, wanted.name.c_str());
      used += wanted.size;
      ends[next - first] = used;
      labels[next - first] = labels_[static_cast<size_t>(next)];
      ++next;
    }
  }

  size_t shard_of(int64_t sample) const {
    return static_cast<size_t>(std::upper_bound(shard_first_.begin(), shard_first_.end(), sample) - shard_first_.begin() - 1);
  }

  // Reads a shard's headers and labels: its samples, in the order their images come.
  void scan(size_t shard_idx, bool& some_labeled, bool& some_unlabeled, std::string& unlabeled_example) {
    const fs::path& shard = shards_[shard_idx];
    ShardReader reader(shard, 0);
    const int64_t shard_bytes = reader.file().size();
    struct Key {
      int64_t sample = -1;
      std::optional<int64_t> label;
      std::string label_member;
    };
    std::map<std::string, Key> keys;
    while (archive_entry* entry = reader.next()) {
      if (archive_entry_filetype(entry) != AE_IFREG) continue;
      const std::string name = archive_entry_pathname(entry);
      const size_t slash = name.rfind('/');
      const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
      if (dot == std::string::npos) {
        ++skipped_;
        continue;
      }
      const std::string key = name.substr(0, dot);
      const std::string extension = lower(name.substr(dot + 1));
      Key& found = keys[key];
      if (is_image_extension(extension)) {
        if (found.sample >= 0)
          throw DataError(shard.string() + ": " + name + ": a second image for the key '" + key + "' (" +
                          members_[static_cast<size_t>(found.sample)].name + ")");
        const int64_t size = archive_entry_size(entry);
        if (size < 0 || size > shard_bytes)
          throw DataError(shard.string() + ": " + name + ": its header claims " + std::to_string(size) +
                          " bytes, more than the shard's " + std::to_string(shard_bytes));
        found.sample = static_cast<int64_t>(members_.size());
        members_.push_back({name, reader.header_position(0), size});
        labels_.push_back(kNoLabel);
      } else if (extension == "cls") {
        if (found.label)  // which one is the label? WebDataset refuses a key's duplicates too
          throw DataError(shard.string() + ": " + name + ": a second label for the key '" + key + "' (" +
                          found.label_member + ")");
        const int64_t size = archive_entry_size(entry);
        if (size > 64) throw DataError(shard.string() + ": " + name + ": a label of " + std::to_string(size) + " bytes");
        char text[65] = {};
        reader.read_data(reinterpret_cast<uint8_t*>(text), size, name.c_str());
        const char* begin = text;
        const char* end = text + size;
        while (begin < end && std::isspace(static_cast<unsigned char>(*begin))) ++begin;
        while (end > begin && std::isspace(static_cast<unsigned char>(end[-1]))) --end;
        int64_t label = 0;
        const auto [at, status] = std::from_chars(begin, end, label);
        if (status != std::errc() || at != end || begin == end)
          throw DataError(shard.string() + ": " + name + ": label '" + std::string(begin, end) + "' is not an integer");
        found.label = label;
        found.label_member = name;
      } else {
        ++skipped_;
      }
    }
    check_end_blocks(reader.file());
    for (auto& [key, found] : keys) {
      if (found.sample < 0) {
        if (found.label) throw DataError(shard.string() + ": " + found.label_member + ": a label without an image");
        continue;
      }
      if (found.label) {
        labels_[static_cast<size_t>(found.sample)] = *found.label;
        some_labeled = true;
      } else if (!some_unlabeled) {
        some_unlabeled = true;
        unlabeled_example = shard.string() + ": " + members_[static_cast<size_t>(found.sample)].name;
      }
    }
  }

  // A tar ends with two zero blocks of 512 bytes (then padding to its record size, also zeros): a
  // shard cut after a member would otherwise read as a shorter, valid one.
  static void check_end_blocks(const RandomAccessFile& shard) {
    constexpr int64_t kEndBytes = 1024;
    uint8_t tail[kEndBytes] = {};
    const int64_t size = shard.size();
    const int64_t got = size >= kEndBytes ? shard.read_at(size - kEndBytes, tail) : 0;
    if (got != kEndBytes || std::any_of(tail, tail + kEndBytes, [](uint8_t byte) { return byte != 0; }))
      throw DataError(shard.name() + ": truncated: a tar file ends with two zero blocks, this one (" +
                      std::to_string(size) + " bytes) does not");
  }

  std::string name_;
  std::vector<fs::path> shards_;
  std::vector<Member> members_;      // per sample, its image, in shard order
  std::vector<int64_t> labels_;      // per sample
  std::vector<int64_t> shard_first_;  // (shards + 1) first sample of each shard, then size()
  std::vector<int64_t> block_starts_;
  bool labeled_ = false;
  Schema schema_;
  int64_t skipped_ = 0;
  int64_t encoded_bytes_ = 0;
  uint64_t fingerprint_ = 0;
};

}  // namespace

TarShards open_tar_shards(const std::string& spec) {
  auto source = std::make_shared<TarShardSource>(spec);
  TarShards shards;
  shards.num_shards = source->num_shards();
  shards.encoded_bytes = source->encoded_bytes();
  shards.skipped_members = source->skipped_members();
  shards.source = std::move(source);
  return shards;
}

}  // namespace feeder

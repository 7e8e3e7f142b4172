#include "feeder/image/encoded_rows.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"
#include "feeder/stopwatch.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"
#include "image/detail/png_encoder.h"

namespace fs = std::filesystem;

namespace feeder {
namespace {

class FolderRowReader final : public EncodedRowReader {
 public:
  FolderRowReader(ImageFolderListing listing, std::string name, int num_threads)
      : listing_(std::move(listing)), name_(std::move(name)), num_threads_(num_threads) {}
  int64_t size() const override { return static_cast<int64_t>(listing_.files.size()); }
  bool labeled() const override { return true; }
  int64_t encoded_bytes() const override { return listing_.encoded_bytes; }

 protected:
  std::shared_ptr<const EncodedImageSource> read_rows(std::span<const int64_t> rows) override {
    return read_image_files(listing_, rows, num_threads_, name_);
  }

 private:
  ImageFolderListing listing_;
  std::string name_;
  int num_threads_;
};

// One block of a streaming source: its images back to back, row r's ending at ends[r].
struct Block {
  int64_t first = 0;  // the block's first row
  int64_t rows = 0;
  std::vector<uint8_t> bytes;
  std::vector<int64_t> ends;
  std::vector<int64_t> labels;
  std::vector<uint8_t> scratch;
  BlockValues values;  // read and dropped: a conversion writes images and labels

  void read(const SampleSource& source, int64_t block_idx) {
    first = source.block_starts()[static_cast<size_t>(block_idx)];
    rows = source.block_rows(block_idx);
    const int64_t capacity = source.payload_bytes(block_idx);
    bytes.resize(static_cast<size_t>(std::max<int64_t>(capacity, 1)));
    ends.resize(static_cast<size_t>(rows));
    labels.resize(static_cast<size_t>(rows));
    source.read_block(block_idx, scratch,
                      {.payload = bytes.data(), .capacity = capacity, .ends = ends.data(), .labels = labels.data(),
                       .values = values.block(source, block_idx)});
  }
  int64_t begin(int64_t r) const { return r == 0 ? 0 : ends[static_cast<size_t>(r) - 1]; }
};

class StreamRowReader final : public EncodedRowReader {
 public:
  StreamRowReader(std::shared_ptr<const SampleSource> source, int64_t encoded_bytes, bool any_order,
                  fs::path spill_dir, std::function<void(int64_t, int64_t)> progress)
      : source_(std::move(source)),
        encoded_bytes_(encoded_bytes),
        any_order_(any_order),
        spill_dir_(std::move(spill_dir)),
        progress_(std::move(progress)) {
    if (!source_->encoded() || random_access(*source_))
      throw OptionsError(source_->name() + ": not a streaming source of encoded images");
  }
  ~StreamRowReader() override {
    if (spill_fd_ >= 0) ::close(spill_fd_);
  }
  StreamRowReader(const StreamRowReader&) = delete;
  StreamRowReader& operator=(const StreamRowReader&) = delete;

  int64_t size() const override { return source_->size(); }
  bool labeled() const override { return source_->labeled(); }
  int64_t encoded_bytes() const override { return encoded_bytes_; }

 protected:
  std::shared_ptr<const EncodedImageSource> read_rows(std::span<const int64_t> rows) override {
    return any_order_ ? read_spilled(rows) : read_in_order(rows);
  }

 private:
  std::shared_ptr<const EncodedImageSource> read_in_order(std::span<const int64_t> rows) {
    EncodedImagesBuilder out;
    for (const int64_t row : rows) {
      throw_if_interrupted();
      if (row != next_row_)
        throw OptionsError(source_->name() + ": rows of a stream are read in order: asked for row " +
                           std::to_string(row) + ", the next is " + std::to_string(next_row_));
      while (row >= block_.first + block_.rows) block_.read(*source_, next_block_++);
      const int64_t r = row - block_.first;
      const int64_t begin = block_.begin(r);
      const int64_t end = block_.ends[static_cast<size_t>(r)];
      std::copy(block_.bytes.begin() + begin, block_.bytes.begin() + end,
                out.add(end - begin, block_.labels[static_cast<size_t>(r)], source_->sample_name(row)));
      ++next_row_;
    }
    return out.finish(source_->name(), source_->labeled());
  }

  // Copies every image into the spill file, in the source's order, once.
  void spill() {
    std::string pattern = (spill_dir_ / ".feeder-spill-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
      throw DataError(spill_dir_.string() + ": cannot create a spill file for a shuffle on write: " + std::strerror(errno));
    ::unlink(pattern.c_str());  // gone from the directory now; its space is freed when the fd closes
    try {
      copy_to_spill(fd);
    } catch (...) {
      ::close(fd);  // a spill cut short is not used: a later read starts it again
      spill_offsets_.clear();
      spill_labels_.clear();
      throw;
    }
    spill_fd_ = fd;
  }

  void copy_to_spill(int fd) {
    spill_offsets_.assign(1, 0);
    spill_labels_.clear();
    const int64_t blocks = source_->num_blocks();
    Block block;
    for (int64_t b = 0; b < blocks; ++b) {
      throw_if_interrupted();
      block.read(*source_, b);
      const int64_t used = block.rows > 0 ? block.ends.back() : 0;
      write_spill(fd, block.bytes.data(), used);
      for (int64_t r = 0; r < block.rows; ++r) {
        spill_offsets_.push_back(spill_offsets_.back() + block.ends[static_cast<size_t>(r)] - block.begin(r));
        spill_labels_.push_back(block.labels[static_cast<size_t>(r)]);
      }
      if (progress_) progress_(b + 1, blocks);
    }
  }

  void write_spill(int fd, const uint8_t* data, int64_t size) {
    int64_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, static_cast<size_t>(size - done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        throw DataError(spill_dir_.string() + ": cannot write the spill file of a shuffle on write (it holds a copy "
                        "of the images, " + std::to_string(encoded_bytes_ >> 20) + " MiB): " +
                        (n < 0 ? std::strerror(errno) : "nothing written"));
      done += n;
    }
  }

  std::shared_ptr<const EncodedImageSource> read_spilled(std::span<const int64_t> rows) {
    if (spill_fd_ < 0) spill();
    EncodedImagesBuilder out;
    for (const int64_t row : rows) {
      throw_if_interrupted();
      const auto at = static_cast<size_t>(row);
      const int64_t begin = spill_offsets_.at(at);
      const int64_t size = spill_offsets_[at + 1] - begin;
      uint8_t* target = out.add(size, spill_labels_[at], source_->sample_name(row));
      int64_t done = 0;
      while (done < size) {
        const ssize_t n = ::pread(spill_fd_, target + done, static_cast<size_t>(size - done), begin + done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
          throw DataError(spill_dir_.string() + ": cannot read the spill file of a shuffle on write: " +
                          (n < 0 ? std::strerror(errno) : "it is shorter than written"));
        done += n;
      }
    }
    return out.finish(source_->name(), source_->labeled());
  }

  std::shared_ptr<const SampleSource> source_;
  int64_t encoded_bytes_;
  bool any_order_;
  fs::path spill_dir_;
  std::function<void(int64_t, int64_t)> progress_;
  // In order: the block holding the next rows.
  int64_t next_row_ = 0;
  int64_t next_block_ = 0;
  Block block_;
  // Any order: the spill file and where each row's image is in it.
  int spill_fd_ = -1;
  std::vector<int64_t> spill_offsets_;
  std::vector<int64_t> spill_labels_;
};

// A pixel set's images, each encoded as a PNG of its own when its row is read.
class PngRowReader final : public EncodedRowReader {
 public:
  PngRowReader(std::shared_ptr<const ImageStore> store, std::string name, int num_threads)
      : store_(std::move(store)), name_(std::move(name)), num_threads_(num_threads) {
    const ImageShape& shape = store_->shape();
    if (store_->pixel_type() != PixelType::kUint8)
      throw OptionsError(name_ + ": images of float pixels have no PNG form (PNG holds uint8 levels)");
    if (shape.channels != 1 && shape.channels != 3)
      throw OptionsError(name_ + ": images of " + std::to_string(shape.channels) +
                         " channels have no PNG form here (1: gray, 3: RGB)");
    // Shards are cut by bytes before any is written: the mean size of up to 256 images spread over
    // the set stands for all of them.
    const int64_t size = store_->size();
    const int64_t probes = std::min<int64_t>(size, 256);
    int64_t probed_bytes = 0;
    for (int64_t p = 0; p < probes; ++p) probed_bytes += static_cast<int64_t>(encode(p * size / probes).size());
    encoded_bytes_ = probes == 0 ? 0 : static_cast<int64_t>(static_cast<double>(probed_bytes) / probes * size);
  }
  int64_t size() const override { return store_->size(); }
  bool labeled() const override { return store_->labeled(); }
  int64_t encoded_bytes() const override { return encoded_bytes_; }

 protected:
  std::shared_ptr<const EncodedImageSource> read_rows(std::span<const int64_t> rows) override {
    std::vector<std::vector<uint8_t>> encoded(rows.size());
    parallel_for(static_cast<int64_t>(rows.size()), resolve_num_threads(num_threads_, "png: num_threads"),
                 [&](int64_t i) {
                   throw_if_interrupted();
                   encoded[static_cast<size_t>(i)] = encode(rows[static_cast<size_t>(i)]);
                 });
    EncodedImagesBuilder out;
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::vector<uint8_t>& bytes = encoded[i];
      std::copy(bytes.begin(), bytes.end(),
                out.add(static_cast<int64_t>(bytes.size()), store_->labels()[static_cast<size_t>(rows[i])],
                        name_ + ": image " + std::to_string(rows[i])));
    }
    return out.finish(name_, labeled());
  }

 private:
  // Row `row` ((C,H,W) in the store) as a PNG of (H,W,C) pixels.
  std::vector<uint8_t> encode(int64_t row) const {
    const ImageShape& shape = store_->shape();
    const uint8_t* image = store_->pixels().data() + row * store_->image_bytes();
    if (shape.channels == 1) return detail::encode_png(image, shape.width, shape.height, 1);
    const int64_t plane = shape.height * shape.width;
    std::vector<uint8_t> interleaved(static_cast<size_t>(plane * shape.channels));
    for (int64_t p = 0; p < plane; ++p)
      for (int64_t c = 0; c < shape.channels; ++c)
        interleaved[static_cast<size_t>(p * shape.channels + c)] = image[c * plane + p];
    return detail::encode_png(interleaved.data(), shape.width, shape.height, static_cast<int>(shape.channels));
  }

  std::shared_ptr<const ImageStore> store_;
  std::string name_;
  int num_threads_;
  int64_t encoded_bytes_ = 0;
};

}  // namespace

std::shared_ptr<const EncodedImageSource> EncodedRowReader::read(std::span<const int64_t> rows) {
  for (const int64_t row : rows)
    if (row < 0 || row >= size())
      throw std::out_of_range("encoded rows: no row " + std::to_string(row) + " (the set has " +
                              std::to_string(size()) + ")");
  const Stopwatch time;
  std::shared_ptr<const EncodedImageSource> images = read_rows(rows);
  read_seconds_ += time.seconds();
  if (labeled())
    for (int64_t i = 0; i < images->size(); ++i) labels_seen_.insert(images->sample(i).label);
  constexpr size_t kReasonsKept = 3;
  for (int64_t i = 0; i < images->size(); ++i) {
    try {
      read_image_header(images->sample(i).bytes, images->sample_name(i));
    } catch (const DataError& e) {
      ++unreadable_;
      if (first_unreadable_.size() < kReasonsKept) first_unreadable_.push_back(e.what());
    }
  }
  return images;
}

std::unique_ptr<EncodedRowReader> folder_row_reader(ImageFolderListing listing, std::string name, int num_threads) {
  return std::make_unique<FolderRowReader>(std::move(listing), std::move(name), num_threads);
}

std::unique_ptr<EncodedRowReader> png_row_reader(std::shared_ptr<const ImageStore> store, std::string name,
                                                 int num_threads) {
  return std::make_unique<PngRowReader>(std::move(store), std::move(name), num_threads);
}

std::unique_ptr<EncodedRowReader> stream_row_reader(std::shared_ptr<const SampleSource> source, int64_t encoded_bytes,
                                                    bool any_order, const fs::path& spill_dir,
                                                    const std::function<void(int64_t, int64_t)>& progress) {
  return std::make_unique<StreamRowReader>(std::move(source), encoded_bytes, any_order, spill_dir, progress);
}

}  // namespace feeder

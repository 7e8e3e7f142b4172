#pragma once

// Reading whole files (gzip inflated transparently, or mapped) and writing files atomically.
//
// Thread safety: the functions keep no state: any thread. MappedFile and FileBytes are read-only
// once made and may be read from several threads; an AtomicFileWriter is used by one thread.
// Ownership: each class owns its mapping, buffer or temporary file and releases it when destroyed.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace feeder {

// Reads a whole file into memory. Files that start with the gzip magic are inflated transparently
// (concatenated members included). Throws DataError naming the file on any failure.
std::vector<uint8_t> read_file(const std::filesystem::path& path);

// Reads a file as is, without inflating.
std::vector<uint8_t> read_file_raw(const std::filesystem::path& path);

// True when the bytes start with the gzip magic number.
bool has_gzip_magic(std::span<const uint8_t> bytes);

// Inflates gzip data (one or more concatenated members). `name` is used in error messages.
std::vector<uint8_t> gunzip(const uint8_t* data, size_t size_bytes, const std::string& name);

// A read-only view of a whole regular file through mmap. Reading a 133 MB CSV this way costs a
// tenth of copying it into a vector, whose first touch of every page is paid serially before
// parsing starts; mapped pages are faulted in by whichever threads read them instead.
// Lifetime: bytes() stays valid until this object is destroyed or assigned to; moving it keeps the
// address, so views survive a move. Files are replaced by rename (AtomicFileWriter), which leaves
// an existing mapping intact; a file truncated in place while mapped raises SIGBUS on access past
// its new end, as with any mapping. The bytes are read-only and may be read from several threads.
class MappedFile {
 public:
  // Maps nothing: bytes() is empty.
  MappedFile() = default;
  // Maps all of `path`; an empty file gives empty bytes() (there is nothing to map). Throws
  // DataError naming the file (and the system error) when it cannot be opened, stat'ed or mapped,
  // or is not a regular file. Callers that also accept pipes check is_regular_file first and use
  // read_file / read_file_raw otherwise.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_bytes_}; }

 private:
  void unmap() noexcept;

  const uint8_t* data_ = nullptr;  // nullptr when nothing is mapped (default, moved from, empty file)
  size_t size_bytes_ = 0;
};

// A whole file's raw bytes (no gzip handling): regular files are mapped (MappedFile), pipes and
// anything else are read into memory, which also reports a path that cannot be opened. Or bytes
// already in memory. Move-only; bytes() stays valid, also across a move, until it is destroyed.
class FileBytes {
 public:
  FileBytes() = default;
  explicit FileBytes(const std::filesystem::path& path);
  explicit FileBytes(std::vector<uint8_t> bytes) : buffer_(std::move(bytes)) {}

  std::span<const uint8_t> bytes() const {
    return mapped_.bytes().empty() ? std::span<const uint8_t>(buffer_) : mapped_.bytes();
  }

 private:
  MappedFile mapped_;  // both keep their address when moved
  std::vector<uint8_t> buffer_;
};

// Writes an output file so that nothing is lost on failure: bytes go to a temporary file beside the
// target, which is renamed into place only by commit(). Destroying it uncommitted removes the temp.
// Not thread safe; one writer per file.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path target);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size_bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  uint64_t bytes_written() const { return bytes_written_; }
  // Flushes, syncs and renames the temp file onto the target.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
  uint64_t bytes_written_ = 0;
  bool committed_ = false;
};

// Convenience: writes `text` to `target` atomically.
void write_file_atomically(const std::filesystem::path& target, std::string_view text);

// Throws the DataError writing `target` would (no such directory, no permission, a directory
// there), now: for an output written at the end of long work, so that the work is not lost.
void check_can_write(const std::filesystem::path& target);

}  // namespace feeder

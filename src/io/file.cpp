#include "feeder/io/file.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feeder/error.h"
#include "feeder/io/file_system.h"

namespace feeder {
namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

bool has_gzip_magic(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<uint8_t> read_file_raw(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw DataError(path.string() + ": cannot open: " + errno_text());
  // fopen succeeds on a directory, whose "size" from fseek/ftell is nonsense.
  struct stat info {};
  if (::fstat(::fileno(file), &info) == 0 && S_ISDIR(info.st_mode)) {
    std::fclose(file);
    throw DataError(path.string() + ": cannot read: is a directory");
  }
  std::vector<uint8_t> bytes;
  if (std::fseek(file, 0, SEEK_END) == 0) {
    long size = std::ftell(file);
    if (size > 0) bytes.reserve(static_cast<size_t>(size));
    std::rewind(file);
  }
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) throw DataError(path.string() + ": read error");
  return bytes;
}

MappedFile::MappedFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path.string() + ": cannot open: " + errno_text());
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const std::string error = errno_text();
    ::close(fd);
    throw DataError(path.string() + ": cannot stat: " + error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw DataError(path.string() + ": cannot map: not a regular file");
  }
  // mmap rejects a zero length; an empty file simply has no bytes.
  if (info.st_size > 0) {
    const size_t size_bytes = static_cast<size_t>(info.st_size);
    void* data = ::mmap(nullptr, size_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const std::string error = errno_text();
      ::close(fd);
      throw DataError(path.string() + ": cannot map " + std::to_string(size_bytes) + " bytes: " + error);
    }
    data_ = static_cast<const uint8_t*>(data);
    size_bytes_ = size_bytes;
  }
  // The mapping holds its own reference to the file.
  ::close(fd);
}

MappedFile::~MappedFile() { unmap(); }

FileBytes::FileBytes(const std::filesystem::path& path) {
  std::error_code ignored;
  if (std::filesystem::is_regular_file(path, ignored)) mapped_ = MappedFile(path);
  else buffer_ = read_file_raw(path);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

void MappedFile::unmap() noexcept {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_bytes_);
  data_ = nullptr;
  size_bytes_ = 0;
}

std::vector<uint8_t> gunzip(const uint8_t* data, size_t size_bytes, const std::string& name) {
  std::vector<uint8_t> out;
  // The ISIZE trailer of the last member is the uncompressed size mod 2^32: a good first guess.
  size_t guess = size_bytes * 4;
  if (size_bytes >= 18) {
    uint32_t isize;
    std::memcpy(&isize, data + size_bytes - 4, 4);
    if (isize > 0 && isize < (1u << 31)) guess = isize;
  }
  out.resize(guess);
  z_stream stream{};
  // 16 + MAX_WBITS: gzip framing only.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw DataError(name + ": cannot initialise zlib");
  stream.next_in = const_cast<Bytef*>(data);
  stream.avail_in = static_cast<uInt>(size_bytes);
  size_t produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2 + 4096);
    stream.next_out = out.data() + produced;
    size_t room = out.size() - produced;
    stream.avail_out = static_cast<uInt>(std::min<size_t>(room, 1u << 30));
    uInt before = stream.avail_out;
    int rc = inflate(&stream, Z_NO_FLUSH);
    produced += before - stream.avail_out;
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      // Another gzip member follows: keep going.
      if (inflateReset(&stream) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) {
      inflateEnd(&stream);
      throw DataError(name + ": truncated gzip data (ends after " + std::to_string(produced) +
                      " uncompressed bytes)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string what = stream.msg ? stream.msg : "inflate failed";
      inflateEnd(&stream);
      throw DataError(name + ": corrupt gzip data at compressed byte " +
                      std::to_string(size_bytes - stream.avail_in) + ": " + what);
    }
  }
  inflateEnd(&stream);
  out.resize(produced);
  return out;
}

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  const FileBytes file = file_system_for(path).read_all(path);
  const std::span<const uint8_t> bytes = file.bytes();
  if (!has_gzip_magic(bytes)) return {bytes.begin(), bytes.end()};
  return gunzip(bytes.data(), bytes.size(), path.string());
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target) : target_(std::move(target)) {
  temp_ = target_;
  temp_ += ".tmp-" + std::to_string(::getpid());
  file_ = std::fopen(temp_.c_str(), "wb");
  if (!file_) throw DataError(target_.string() + ": cannot create output: " + errno_text());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_) std::fclose(file_);
  if (!committed_) {
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
  }
}

void AtomicFileWriter::write(const void* data, size_t size_bytes) {
  if (size_bytes == 0) return;
  if (std::fwrite(data, 1, size_bytes, file_) != size_bytes)
    throw DataError(target_.string() + ": write failed: " + errno_text());
  bytes_written_ += size_bytes;
}

void AtomicFileWriter::commit() {
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    throw DataError(target_.string() + ": write failed: " + errno_text());
  std::fclose(file_);
  file_ = nullptr;
  std::error_code error;
  std::filesystem::rename(temp_, target_, error);
  if (error) throw DataError(target_.string() + ": cannot rename output into place: " + error.message());
  committed_ = true;
  // The rename is durable once the directory is synced too (a crash could otherwise lose it).
  const std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file_atomically(const std::filesystem::path& target, std::string_view text) {
  const std::unique_ptr<WritableFile> file = file_system_for(target).create(target);
  file->write(text);
  file->commit();
}

void check_can_write(const std::filesystem::path& target) {
  std::error_code error;
  if (std::filesystem::is_directory(target, error))
    throw DataError(target.string() + ": cannot create output: it is a directory");
  AtomicFileWriter probe(target);  // its temporary file goes with it, uncommitted
}

}  // namespace feeder

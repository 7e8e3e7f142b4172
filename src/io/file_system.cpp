#include "feeder/io/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "feeder/error.h"
#include "io/detail/remote_file_systems.h"

namespace feeder {

void RandomAccessFile::read_exactly(int64_t offset, std::span<uint8_t> out, const std::string& what) const {
  const int64_t got = read_at(offset, out);
  if (got < static_cast<int64_t>(out.size()))
    throw DataError(name() + ": file ended after " + std::to_string(offset + got) + " bytes while reading " + what);
}

std::vector<uint8_t> RandomAccessFile::read_exactly(int64_t offset, int64_t size_bytes, const std::string& what) const {
  std::vector<uint8_t> bytes(static_cast<size_t>(size_bytes));
  read_exactly(offset, bytes, what);
  return bytes;
}

namespace {

// A descriptor opened once; pread at any offset from any thread.
class LocalFile final : public RandomAccessFile {
 public:
  explicit LocalFile(const std::filesystem::path& path) : name_(path.string()) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(name_ + ": cannot open: " + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd_, &info) != 0) {
      const std::string error = std::strerror(errno);
      ::close(fd_);
      throw DataError(name_ + ": cannot stat: " + error);
    }
    if (!S_ISREG(info.st_mode)) {
      ::close(fd_);
      throw DataError(name_ + ": not a regular file");
    }
    size_ = static_cast<int64_t>(info.st_size);
  }
  ~LocalFile() override { ::close(fd_); }
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  const std::string& name() const override { return name_; }
  int64_t size() const override { return size_; }
  int64_t size_now() const override {
    struct stat info {};
    return ::fstat(fd_, &info) == 0 ? static_cast<int64_t>(info.st_size) : size_;
  }
  int64_t read_at(int64_t offset, std::span<uint8_t> out) const override {
    int64_t done = 0;
    const auto wanted = static_cast<int64_t>(out.size());
    while (done < wanted) {
      const ssize_t got = ::pread(fd_, out.data() + done, static_cast<size_t>(wanted - done), static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw DataError(name_ + ": cannot read at byte " + std::to_string(offset + done) + ": " + std::strerror(errno));
      if (got == 0) break;  // the end of the file
      done += got;
    }
    return done;
  }

 private:
  std::string name_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// A temporary file beside the target, renamed into place on commit.
class LocalWritableFile final : public WritableFile {
 public:
  explicit LocalWritableFile(const std::filesystem::path& path) : writer_(path) {}
  void write(const void* data, size_t size_bytes) override { writer_.write(data, size_bytes); }
  uint64_t bytes_written() const override { return writer_.bytes_written(); }
  void commit() override { writer_.commit(); }

 private:
  AtomicFileWriter writer_;
};

class LocalFileSystem final : public FileSystem {
 public:
  std::unique_ptr<WritableFile> create(const std::filesystem::path& path) const override {
    return std::make_unique<LocalWritableFile>(path);
  }
  std::shared_ptr<const RandomAccessFile> open(const std::filesystem::path& path) const override {
    return std::make_shared<const LocalFile>(path);
  }
  FileBytes read_all(const std::filesystem::path& path) const override { return FileBytes(path); }
  std::vector<FileEntry> list(const std::filesystem::path& directory) const override {
    namespace fs = std::filesystem;
    std::vector<FileEntry> entries;
    std::error_code error;
    for (auto it = fs::directory_iterator(directory, error); !error && it != fs::directory_iterator(); it.increment(error))
      entries.push_back(stat(it->path()));
    if (error) throw DataError(directory.string() + ": cannot list: " + error.message());
    return entries;
  }
  void remove(const std::filesystem::path& path) const override {
    std::error_code error;
    std::filesystem::remove(path, error);
    if (error) throw DataError(path.string() + ": cannot remove: " + error.message());
  }
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) const override {
    std::error_code error;
    std::filesystem::rename(from, to, error);
    if (error) throw DataError(from.string() + ": cannot rename to " + to.string() + ": " + error.message());
  }
  void make_directories(const std::filesystem::path& path) const override {
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error) throw DataError(path.string() + ": cannot create the directory: " + error.message());
  }
  FileEntry stat(const std::filesystem::path& path) const override {
    struct stat info {};
    FileEntry entry{path, FileKind::kMissing, 0};
    if (::stat(path.c_str(), &info) != 0) return entry;
    entry.kind = S_ISREG(info.st_mode) ? FileKind::kFile : S_ISDIR(info.st_mode) ? FileKind::kDirectory : FileKind::kOther;
    if (entry.file()) entry.size = static_cast<int64_t>(info.st_size);
    entry.identity = {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino)};
    return entry;
  }
};

}  // namespace

const FileSystem& local_file_system() {
  static const LocalFileSystem file_system;
  return file_system;
}

const FileSystem& file_system_for(const std::filesystem::path& path) {
  if (const FileSystem* remote = detail::remote_file_system_for(path.string())) return *remote;
  return local_file_system();
}

}  // namespace feeder

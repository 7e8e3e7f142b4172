#pragma once

// The one door to bytes: every reader (Parquet, tar shards, image files, index.json, IDX and CSV)
// opens, sizes, reads and lists through a FileSystem, and no reader calls open, pread or mmap
// itself; every output file of the library (Parquet, CSV, index.json, checkpoints) is created
// through it and appears whole or not at all. The local disk is the first implementation; a store where each read is a network round
// trip fits behind the same interface, which is why reads are of ranges, may be issued from any
// number of threads at once, and whole-file reads are one call.
//
// Thread safety: a FileSystem and a RandomAccessFile are immutable once made; every method may be
// called from any number of threads at once, with any number of reads outstanding.
// Ownership: a RandomAccessFile owns what it opened (a descriptor) and releases it when the last
// shared_ptr to it goes; FileBytes own their mapping or buffer.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "feeder/io/file.h"

namespace feeder {

// A file opened for reading: its size when it was opened, and reads of byte ranges.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;

  // The path (or address) as errors name it.
  virtual const std::string& name() const = 0;
  // Bytes, when the file was opened.
  virtual int64_t size() const = 0;
  // Reads up to out.size() bytes from `offset` into `out`; returns how many, fewer only where the
  // file ends. Throws DataError naming the file when the read fails.
  virtual int64_t read_at(int64_t offset, std::span<uint8_t> out) const = 0;
  // Bytes now (a file may change after it is opened): to say where a short read ended.
  virtual int64_t size_now() const = 0;
  // Reads smaller than this cost about as much as reads this large (each is a network round trip):
  // a reader walking many small pieces (page headers) reads this much at a time and walks the copy.
  // 0 where small reads are cheap (a local disk).
  virtual int64_t gather_read_bytes() const { return 0; }
  // What version of the file was opened (an object's ETag), to tell a file replaced after it was
  // first seen; empty where there is none (a local file).
  virtual std::string version() const { return ""; }

  // Exactly out.size() bytes from `offset`, or a DataError naming the file, `what` was read and
  // where the file ended ("x.parquet: file ended after 100 bytes while reading its footer").
  void read_exactly(int64_t offset, std::span<uint8_t> out, const std::string& what) const;
  std::vector<uint8_t> read_exactly(int64_t offset, int64_t size_bytes, const std::string& what) const;
};

enum class FileKind { kMissing, kFile, kDirectory, kOther };

// What a path holds: one entry of a listing, or a stat.
struct FileEntry {
  FileEntry() = default;
  FileEntry(std::filesystem::path path_, FileKind kind_, int64_t size_ = 0)
      : path(std::move(path_)), kind(kind_), size(size_) {}

  std::filesystem::path path;
  FileKind kind = FileKind::kMissing;
  int64_t size = 0;  // bytes of a file; 0 otherwise
  // What a directory is, whatever path reaches it (device and inode on a local disk), to find a
  // walk's cycles through links; {0, 0} where a store has no links, or it is not known.
  std::pair<uint64_t, uint64_t> identity{0, 0};
  std::string version;  // a file's version where the store has one (an object's ETag); else empty
  bool file() const { return kind == FileKind::kFile; }
  bool directory() const { return kind == FileKind::kDirectory; }
};

// A file being written: visible under its name, whole, only once commit() returns; destroyed
// uncommitted (an error, an interrupt), it leaves nothing behind. One thread writes it.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual void write(const void* data, size_t size_bytes) = 0;
  void write(std::string_view text) { write(text.data(), text.size()); }
  virtual uint64_t bytes_written() const = 0;
  virtual void commit() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens a regular file for reading; throws DataError naming it ("cannot open: ...", "not a
  // regular file").
  virtual std::shared_ptr<const RandomAccessFile> open(const std::filesystem::path& path) const = 0;
  // Opens a file as a listing gave it (`listed`: its path, size and version): a store where asking
  // for them costs a round trip (an object's HEAD) takes them as listed, and a read of an object
  // replaced since fails naming it; the local disk opens it as open() does.
  virtual std::shared_ptr<const RandomAccessFile> open_listed(const FileEntry& listed) const { return open(listed.path); }
  // A whole file's raw bytes (no gzip handling): a regular local file is mapped, anything else
  // (a pipe) read. Throws DataError naming it.
  virtual FileBytes read_all(const std::filesystem::path& path) const = 0;
  // The entries of a directory (one level, in no order; symbolic links followed for the kind and
  // size: a link to nothing is kMissing). Throws DataError naming the directory.
  virtual std::vector<FileEntry> list(const std::filesystem::path& directory) const = 0;
  // What `path` holds (symbolic links followed); kMissing when nothing is there. Never throws for
  // a path that is missing.
  virtual FileEntry stat(const std::filesystem::path& path) const = 0;
  // A file to write at `path`, replacing what is there when committed (the local disk: a temporary
  // file beside it, renamed into place: AtomicFileWriter). Throws DataError naming it.
  virtual std::unique_ptr<WritableFile> create(const std::filesystem::path& path) const = 0;
  // Removes a file, or an empty directory; nothing when nothing is there. Throws DataError naming it.
  virtual void remove(const std::filesystem::path& path) const = 0;
  // Moves a file to `to`, replacing what is there (an object store copies it, then removes it).
  virtual void rename(const std::filesystem::path& from, const std::filesystem::path& to) const = 0;
  // Makes a directory and its parents where they are missing (an object store has none to make).
  virtual void make_directories(const std::filesystem::path& path) const = 0;
};

// The local disk: open/pread on a descriptor held per opened file, mmap for whole files.
const FileSystem& local_file_system();

// The file system that holds `path`: S3 for s3://, a web server for http:// and https://
// (feeder/io/object_storage.h), the local disk for any other.
const FileSystem& file_system_for(const std::filesystem::path& path);

}  // namespace feeder

#include "io/detail/disk_cache.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "feeder/error.h"
#include "io/detail/cache_key.h"
#include "io/detail/http_client.h"
#include "io/detail/request_abort.h"
#include "util/mutex.h"

namespace fs = std::filesystem;

namespace feeder::detail {
namespace {

// Each block carries an XXH3-64 of every kChunkBytes of it, after its data: a read checks only
// the chunks it covers, so a small read from a large block costs little more than its bytes. Then
// its signature (cache_key.h), checked over the whole block the first time this process reads the
// block's file (and again whenever the file changed since: its inode or ctime).
constexpr int64_t kChunkBytes = int64_t{64} << 10;
constexpr int64_t kSignatureBytes = 32;
// Files whose signature this process checked, remembered at most (then forgotten and checked again).
constexpr size_t kMaxVerifiedBlocks = size_t{1} << 20;
// A block not read for this long has its time renewed when read (the order eviction follows).
constexpr int64_t kTouchSeconds = 60;
// Temporary files older than this were left by a process that died writing them.
constexpr int64_t kStaleTempSeconds = 3600;

int64_t seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t chunk_count(int64_t block_bytes) { return (block_bytes + kChunkBytes - 1) / kChunkBytes; }
int64_t block_file_bytes(int64_t block_bytes) { return block_bytes + 8 * chunk_count(block_bytes) + kSignatureBytes; }

// What a block's file was when its signature was checked: another file, or the same one written to
// since, is checked again.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  int64_t changed_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const struct stat& info) {
  return {info.st_dev, info.st_ino, int64_t{info.st_ctim.tv_sec} * 1000000000 + info.st_ctim.tv_nsec};
}

std::string hex128(const std::string& text) {
  const XXH128_hash_t hash = XXH3_128bits(text.data(), text.size());
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return out;
}

// Closes a descriptor when it goes.
struct Descriptor {
  int fd = -1;
  explicit Descriptor(int fd_) : fd(fd_) {}
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
};

bool read_fully(int fd, int64_t offset, uint8_t* out, int64_t size) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, static_cast<size_t>(size), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n, offset += n, size -= n;
  }
  return true;
}

bool write_fully(int fd, const uint8_t* data, int64_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, static_cast<size_t>(size));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;  // nothing written and no reason given: a failure all the same
    if (n <= 0) return false;
    data += n, size -= n;
  }
  return true;
}

// A block some thread of this process is reading from the store: the others wanting it wait for
// its bytes instead of asking again.
struct Pending {
  bool done = false;    // GUARDED_BY(State::inflight_mutex)
  bool failed = false;  // GUARDED_BY(State::inflight_mutex); the waiters then read it themselves
  std::shared_ptr<const std::vector<uint8_t>> run;  // the request's bytes, once done
  int64_t offset_in_run = 0;
};

}  // namespace

struct DiskCache::State {
  fs::path directory;
  fs::path blocks;  // blocks/<2 hex>/<object's 32 hex>.<block index>
  int64_t limit = 0;
  std::atomic<uint64_t> temp_counter{0};
  std::atomic<bool> write_failure_said{false};
  CacheKey key{};

  mutable Mutex verified_mutex;
  mutable std::map<std::string, FileStamp> verified GUARDED_BY(verified_mutex);  // block file -> as checked

  // True when the file at `path` (open as `fd`, `info`) carries a good signature: checked once per
  // file as it is now.
  bool signed_by_key(const fs::path& path, int fd, const struct stat& info, int64_t block_bytes) const {
    const FileStamp stamp = stamp_of(info);
    {
      MutexLock lock(verified_mutex);
      auto found = verified.find(path.string());
      if (found != verified.end() && found->second == stamp) return true;
    }
    std::vector<uint8_t> whole(static_cast<size_t>(block_file_bytes(block_bytes)));
    if (!read_fully(fd, 0, whole.data(), static_cast<int64_t>(whole.size()))) return false;
    const std::span<const uint8_t> data(whole.data(), static_cast<size_t>(block_bytes));
    const auto signature = sign_block(key, path.filename().string(), data);
    if (std::memcmp(signature.data(), whole.data() + whole.size() - kSignatureBytes, kSignatureBytes) != 0) return false;
    MutexLock lock(verified_mutex);
    if (verified.size() >= kMaxVerifiedBlocks) verified.clear();
    verified[path.string()] = stamp;
    return true;
  }

  // The lock file holds the bytes of blocks in the directory (8 bytes, host order), read and
  // written under its flock; `lock_mutex` keeps this process's threads to one holder at a time.
  Mutex lock_mutex;
  int lock_fd = -1;
  ~State() {
    if (lock_fd >= 0) ::close(lock_fd);
  }

  Mutex inflight_mutex;
  CondVar inflight_done;
  std::map<std::string, std::shared_ptr<Pending>> inflight GUARDED_BY(inflight_mutex);

  fs::path block_path(const std::string& object, int64_t block) const {
    return blocks / object.substr(0, 2) / (object + "." + std::to_string(block));
  }

  // The bytes [in_block, in_block + out.size()) of a block of `block_bytes` from its file; false
  // when it is not there whole and sound (a damaged one is removed).
  bool read_block(const fs::path& path, int64_t block_bytes, int64_t in_block, std::span<uint8_t> out) const {
    Descriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd < 0) return false;
    struct stat info {};
    if (::fstat(file.fd, &info) != 0 || info.st_size != block_file_bytes(block_bytes)) return damaged(path);
    if (!signed_by_key(path, file.fd, info, block_bytes)) return damaged(path);
    const int64_t first = in_block / kChunkBytes;
    const int64_t last = (in_block + static_cast<int64_t>(out.size()) - 1) / kChunkBytes;
    const int64_t begin = first * kChunkBytes, end = std::min(block_bytes, (last + 1) * kChunkBytes);
    thread_local std::vector<uint8_t> scratch;
    scratch.resize(static_cast<size_t>(end - begin));
    std::vector<uint64_t> sums(static_cast<size_t>(last - first + 1));
    if (!read_fully(file.fd, begin, scratch.data(), end - begin) ||
        !read_fully(file.fd, block_bytes + 8 * first, reinterpret_cast<uint8_t*>(sums.data()), 8 * (last - first + 1)))
      return damaged(path);
    for (int64_t chunk = first; chunk <= last; ++chunk) {
      const int64_t from = chunk * kChunkBytes - begin;
      const int64_t bytes = std::min(kChunkBytes, block_bytes - chunk * kChunkBytes);
      if (XXH3_64bits(scratch.data() + from, static_cast<size_t>(bytes)) != sums[static_cast<size_t>(chunk - first)])
        return damaged(path);
    }
    // Written to while it was read (after its signature was checked): not handed on.
    struct stat after {};
    if (::fstat(file.fd, &after) != 0 || !(stamp_of(after) == stamp_of(info))) return damaged(path);
    std::memcpy(out.data(), scratch.data() + (in_block - begin), out.size());
    if (seconds_now() - info.st_mtim.tv_sec > kTouchSeconds)
      ::futimens(file.fd, nullptr);  // recently used: evicted after the blocks not read since
    count_storage_cache_read(static_cast<int64_t>(out.size()));
    return true;
  }

  bool damaged(const fs::path& path) const {
    ::unlink(path.c_str());  // a damaged block (cut short, changed on the disk) is read again
    return false;
  }

  // Keeps a block's bytes; a failure to is said once, and costs only the copy.
  void write_block(const fs::path& path, std::span<const uint8_t> data) {
    if (::access(path.c_str(), F_OK) == 0) return;  // another process kept it meanwhile
    std::vector<uint64_t> sums(static_cast<size_t>(chunk_count(static_cast<int64_t>(data.size()))));
    for (size_t chunk = 0; chunk < sums.size(); ++chunk) {
      const size_t from = chunk * kChunkBytes;
      sums[chunk] = XXH3_64bits(data.data() + from, std::min<size_t>(kChunkBytes, data.size() - from));
    }
    const fs::path temp = path.parent_path() / (".tmp-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(temp_counter.fetch_add(1)));
    Descriptor file(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (file.fd < 0 && errno == ENOENT) {
      ::mkdir(path.parent_path().c_str(), 0755);
      file.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    // The first failure's errno: opening, writing, closing or renaming.
    int error = file.fd < 0 ? errno : 0;
    const auto signature = sign_block(key, path.filename().string(), data);
    if (!error && (!write_fully(file.fd, data.data(), static_cast<int64_t>(data.size())) ||
                   !write_fully(file.fd, reinterpret_cast<const uint8_t*>(sums.data()), 8 * static_cast<int64_t>(sums.size())) ||
                   !write_fully(file.fd, signature.data(), kSignatureBytes)))
      error = errno;
    if (file.fd >= 0 && ::close(std::exchange(file.fd, -1)) != 0 && !error) error = errno;
    if (!error && ::rename(temp.c_str(), path.c_str()) != 0) error = errno;
    if (error) {
      ::unlink(temp.c_str());
      if (!write_failure_said.exchange(true))
        std::cerr << "feeder: warning: cannot keep remote data in the cache " << directory.string() << " ("
                  << std::strerror(error) << "): reading on without keeping what is read\n";
      return;
    }
    add_bytes(block_file_bytes(static_cast<int64_t>(data.size())));
  }

  // The lock file's count of bytes, under its flock (held by this thread while `body` runs).
  template <typename Body>
  void with_lock(Body&& body) {
    MutexLock lock(lock_mutex);
    if (::flock(lock_fd, LOCK_EX) != 0) return;
    int64_t bytes = 0;
    if (::pread(lock_fd, &bytes, sizeof(bytes), 0) != sizeof(bytes)) bytes = -1;  // never counted
    bytes = body(bytes);
    if (::pwrite(lock_fd, &bytes, sizeof(bytes), 0) != sizeof(bytes)) bytes = -1;
    ::flock(lock_fd, LOCK_UN);
  }

  void add_bytes(int64_t bytes) {
    with_lock([&](int64_t total) {
      if (total < 0) return evict();
      total += bytes;
      return limit > 0 && total > limit ? evict() : total;
    });
  }

  // Counts the blocks and removes the least recently used until they fit in seven eighths of the
  // limit (room to write before the next count); removes temporary files left by dead processes.
  // Returns the bytes left. The caller holds the lock file's flock.
  int64_t evict() {
    struct Block {
      fs::path path;
      int64_t bytes;
      int64_t used;
    };
    std::vector<Block> found;
    int64_t total = 0;
    const int64_t now = seconds_now();
    std::error_code error;
    for (fs::directory_iterator shelf(blocks, error), end; !error && shelf != end; shelf.increment(error)) {
      std::error_code inner;
      for (fs::directory_iterator it(shelf->path(), inner), last; !inner && it != last; it.increment(inner)) {
        struct stat info {};
        if (::stat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
        if (it->path().filename().string().starts_with(".tmp-")) {
          if (now - info.st_mtim.tv_sec > kStaleTempSeconds) ::unlink(it->path().c_str());
          continue;
        }
        found.push_back({it->path(), static_cast<int64_t>(info.st_size), static_cast<int64_t>(info.st_mtim.tv_sec)});
        total += info.st_size;
      }
    }
    if (limit <= 0 || total <= limit) return total;
    std::sort(found.begin(), found.end(), [](const Block& a, const Block& b) { return a.used < b.used; });
    const int64_t target = limit - limit / 8;
    for (const Block& block : found) {
      if (total <= target) break;
      if (::unlink(block.path.c_str()) == 0 || errno == ENOENT) total -= block.bytes;
    }
    return total;
  }
};

namespace {

// An object read through the cache.
class CachedFile final : public RandomAccessFile {
 public:
  CachedFile(std::shared_ptr<DiskCache::State> state, std::shared_ptr<const RandomAccessFile> file, std::string object)
      : state_(std::move(state)), file_(std::move(file)), object_(std::move(object)) {}

  const std::string& name() const override { return file_->name(); }
  int64_t size() const override { return file_->size(); }
  int64_t size_now() const override { return file_->size_now(); }
  int64_t gather_read_bytes() const override { return file_->gather_read_bytes(); }
  std::string version() const override { return file_->version(); }

  int64_t read_at(int64_t offset, std::span<uint8_t> out) const override {
    const int64_t size = file_->size();
    if (offset >= size || out.empty()) return 0;
    const int64_t end = offset + std::min<int64_t>(static_cast<int64_t>(out.size()), size - offset);
    int64_t at = offset;
    while (at < end) {
      const int64_t block = at / DiskCache::kBlockBytes;
      const int64_t block_begin = block * DiskCache::kBlockBytes;
      const int64_t bytes = std::min(end, block_begin + block_bytes(block)) - at;
      const std::span<uint8_t> piece = out.subspan(static_cast<size_t>(at - offset), static_cast<size_t>(bytes));
      if (state_->read_block(state_->block_path(object_, block), block_bytes(block), at - block_begin, piece)) {
        at += bytes;
        continue;
      }
      if (state_->write_failure_said.load(std::memory_order_relaxed)) {
        // Nothing can be kept (the disk is full, the directory gone): a whole block fetched for a
        // small read would be thrown away, so only what was asked is read.
        file_->read_exactly(at, piece, "bytes " + std::to_string(at) + "-" + std::to_string(at + bytes - 1));
        at += bytes;
        continue;
      }
      at = fetch(block, (end - 1) / DiskCache::kBlockBytes, offset, at, end, out);
    }
    return end - offset;
  }

 private:
  int64_t block_bytes(int64_t block) const {
    return std::min(DiskCache::kBlockBytes, file_->size() - block * DiskCache::kBlockBytes);
  }
  std::string key(int64_t block) const { return object_ + "." + std::to_string(block); }

  // Block `first` is not on the disk: its bytes from the thread already reading it, or read here
  // with the missing blocks after it up to `last` in one request, kept, and handed to any thread
  // that waited for them. Copies what [at, end) needs into `out` (which starts at `offset`);
  // returns where the bytes copied end.
  int64_t fetch(int64_t first, int64_t last, int64_t offset, int64_t at, int64_t end, std::span<uint8_t> out) const {
    std::vector<std::pair<int64_t, std::shared_ptr<Pending>>> claimed;
    std::shared_ptr<Pending> other;
    {
      MutexLock lock(state_->inflight_mutex);
      auto found = state_->inflight.find(key(first));
      if (found != state_->inflight.end()) {
        other = found->second;
      } else {
        claimed.emplace_back(first, std::make_shared<Pending>());
        state_->inflight.emplace(key(first), claimed.back().second);
        for (int64_t block = first + 1; block <= last; ++block) {
          if (state_->inflight.count(key(block)) || ::access(state_->block_path(object_, block).c_str(), F_OK) == 0) break;
          claimed.emplace_back(block, std::make_shared<Pending>());
          state_->inflight.emplace(key(block), claimed.back().second);
        }
      }
    }
    if (other) return wait_for(other, first, offset, at, end, out);
    // Kept by a thread that finished after this one looked: read from the disk after all.
    if (::access(state_->block_path(object_, first).c_str(), F_OK) == 0) {
      finish(claimed, nullptr);
      return at;
    }

    const int64_t run_begin = first * DiskCache::kBlockBytes;
    const int64_t run_end = claimed.back().first * DiskCache::kBlockBytes + block_bytes(claimed.back().first);
    auto run = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(run_end - run_begin));
    try {
      file_->read_exactly(run_begin, *run, "bytes " + std::to_string(run_begin) + "-" + std::to_string(run_end - 1));
    } catch (...) {
      finish(claimed, nullptr);
      throw;
    }
    for (const auto& [block, pending] : claimed) {
      const int64_t from = block * DiskCache::kBlockBytes - run_begin;
      state_->write_block(state_->block_path(object_, block),
                          std::span<const uint8_t>(*run).subspan(static_cast<size_t>(from), static_cast<size_t>(block_bytes(block))));
      pending->offset_in_run = from;
    }
    finish(claimed, run);
    const int64_t copied_end = std::min(end, run_end);
    std::memcpy(out.data() + (at - offset), run->data() + (at - run_begin), static_cast<size_t>(copied_end - at));
    return copied_end;
  }

  void finish(const std::vector<std::pair<int64_t, std::shared_ptr<Pending>>>& claimed,
              const std::shared_ptr<const std::vector<uint8_t>>& run) const {
    MutexLock lock(state_->inflight_mutex);
    for (const auto& [block, pending] : claimed) {
      pending->run = run;
      pending->failed = !run;
      pending->done = true;
      state_->inflight.erase(key(block));
    }
    state_->inflight_done.notify_all();
  }

  // Waits for another thread's read of `block`, as long as this thread's own requests are wanted.
  // Its bytes, or (it failed: its reader's requests were aborted, say) the block read here.
  int64_t wait_for(const std::shared_ptr<Pending>& pending, int64_t block, int64_t offset, int64_t at, int64_t end,
                   std::span<uint8_t> out) const {
    std::shared_ptr<const std::vector<uint8_t>> run;
    int64_t offset_in_run = 0;
    {
      MutexLock lock(state_->inflight_mutex);
      while (!pending->done) {
        if (request_abort_asked()) throw RequestAborted();
        state_->inflight_done.wait_until(state_->inflight_mutex,
                                         std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
      }
      if (pending->failed) return at;  // read it again: the caller finds it missing
      run = pending->run;
      offset_in_run = pending->offset_in_run;
    }
    const int64_t block_begin = block * DiskCache::kBlockBytes;
    const int64_t copied_end = std::min(end, block_begin + block_bytes(block));
    std::memcpy(out.data() + (at - offset), run->data() + offset_in_run + (at - block_begin),
                static_cast<size_t>(copied_end - at));
    return copied_end;
  }

  std::shared_ptr<DiskCache::State> state_;
  std::shared_ptr<const RandomAccessFile> file_;
  std::string object_;  // the identity's hash: the blocks' names
};

}  // namespace

DiskCache::DiskCache(fs::path directory, int64_t limit_bytes) : state_(std::make_shared<State>()) {
  state_->directory = directory;
  state_->blocks = directory / "blocks";
  state_->limit = limit_bytes;
  state_->key = load_cache_key(directory);
  std::error_code error;
  fs::create_directories(state_->blocks, error);
  if (error) throw OptionsError("cache_dir " + directory.string() + ": cannot make it: " + error.message());
  const fs::path lock = directory / "lock";
  state_->lock_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (state_->lock_fd < 0)
    throw OptionsError("cache_dir " + directory.string() + ": cannot write in it: " + std::strerror(errno));
  if (limit_bytes > 0) enforce_limit();
}

DiskCache::~DiskCache() = default;

std::shared_ptr<const RandomAccessFile> DiskCache::wrap(std::shared_ptr<const RandomAccessFile> file,
                                                        const std::string& identity) const {
  return std::make_shared<const CachedFile>(state_, std::move(file), hex128(identity));
}

int64_t DiskCache::bytes_estimate() const {
  int64_t out = 0;
  state_->with_lock([&](int64_t total) { return out = total < 0 ? state_->evict() : total; });
  return out;
}

void DiskCache::enforce_limit() const {
  state_->with_lock([&](int64_t) { return state_->evict(); });
}

namespace {

// The caches of the process, one per (directory, limit). Never destroyed: file systems made with
// them live as long as the process. A forked child starts with none (the parent's may be locked
// by its threads at the fork) and makes its own, over the same files.
struct Caches {
  Mutex mutex;
  std::map<std::pair<std::string, int64_t>, std::shared_ptr<const DiskCache>> by_directory GUARDED_BY(mutex);
};
Caches* g_caches = nullptr;

Caches& caches() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_caches = new Caches();
    ::pthread_atfork(nullptr, nullptr, [] { g_caches = new Caches(); });
  });
  return *g_caches;
}

}  // namespace

std::shared_ptr<const DiskCache> disk_cache_for(const fs::path& directory, int64_t limit_bytes) {
  Caches& all = caches();
  MutexLock lock(all.mutex);
  std::shared_ptr<const DiskCache>& cache =
      all.by_directory[{fs::absolute(directory).lexically_normal().string(), limit_bytes}];
  if (!cache) cache = std::make_shared<const DiskCache>(directory, limit_bytes);
  return cache;
}

}  // namespace feeder::detail

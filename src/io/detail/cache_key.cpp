#include "io/detail/cache_key.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "feeder/error.h"

namespace fs = std::filesystem;

namespace feeder::detail {
namespace {

fs::path key_path(const fs::path& cache_dir) {
  if (const char* file = std::getenv("FEEDER_CACHE_KEY"); file && *file) return file;
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config) return fs::path(config) / "feeder" / "cache-key";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".config" / "feeder" / "cache-key";
  return cache_dir / "key";
}

bool read_key(const fs::path& path, CacheKey& key) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, key.data(), key.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(key.size()))
    throw OptionsError("the disk cache's key " + path.string() + " is not 32 bytes: remove it (a new one is made, "
                       "and the blocks signed with the old one are read from the store again)");
  return true;
}

[[noreturn]] void cannot_make(const fs::path& path, const std::string& why) {
  throw OptionsError("the disk cache's key " + path.string() + ": cannot make it (" + why +
                     "); set FEEDER_CACHE_KEY to a file that can be written");
}

}  // namespace

CacheKey load_cache_key(const fs::path& cache_dir) {
  const fs::path path = key_path(cache_dir);
  CacheKey key{};
  if (read_key(path, key)) return key;
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) cannot_make(path, error.message());
  if (::getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) cannot_make(path, std::strerror(errno));
  // Written whole under a temporary name, then linked into place: link fails if another process
  // made the key meanwhile, and then its key is the one.
  const fs::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) cannot_make(path, std::strerror(errno));
  const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
  const int write_errno = errno;
  ::close(fd);
  if (!written) {
    ::unlink(temp.c_str());
    cannot_make(path, std::strerror(write_errno));
  }
  const int linked = ::link(temp.c_str(), path.c_str());
  const int link_errno = errno;
  ::unlink(temp.c_str());
  if (linked != 0 && link_errno != EEXIST) cannot_make(path, std::strerror(link_errno));
  if (linked != 0 && !read_key(path, key)) cannot_make(path, "made by another process, then gone");
  return key;
}

std::array<uint8_t, 32> sign_block(const CacheKey& key, std::string_view name, std::span<const uint8_t> data) {
  std::array<uint8_t, 32> block_key{}, out{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(name.data()),
            name.size(), block_key.data(), &length) ||
      !HMAC(EVP_sha256(), block_key.data(), static_cast<int>(block_key.size()), data.data(), data.size(), out.data(),
            &length))
    throw std::runtime_error("HMAC-SHA256 failed");
  return out;
}

}  // namespace feeder::detail

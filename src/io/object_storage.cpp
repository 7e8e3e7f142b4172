#include "feeder/io/object_storage.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <mutex>
#include <vector>

#include "feeder/error.h"
#include "io/detail/aws_config.h"
#include "io/detail/http_client.h"
#include "io/detail/remote_file_systems.h"
#include "util/mutex.h"

namespace feeder {
namespace {

// The settings, and the file systems made with them: made when a remote path is first taken,
// again after the settings change. Those made before stay alive (files opened on them keep their
// settings), a few bytes for each change of settings.
struct Remote {
  detail::Mutex mutex;
  StorageOptions options GUARDED_BY(mutex);
  std::unique_ptr<FileSystem> http GUARDED_BY(mutex);
  std::unique_ptr<FileSystem> s3 GUARDED_BY(mutex);
  std::vector<std::unique_ptr<FileSystem>> retired GUARDED_BY(mutex);
  // "scheme://host:port" -> "user:password", from URLs given with userinfo (without_url_secrets).
  std::map<std::string, std::string> credentials GUARDED_BY(mutex);
};

// Never destroyed: files may outlive static destruction. A forked child gets a state of its own
// with the same settings: the parent's file systems keep connections (sockets the parent goes on
// using) and locks the parent's threads may hold, so the child leaves them alone and connects anew.
Remote* g_remote = nullptr;

void lock_before_fork() NO_THREAD_SAFETY_ANALYSIS { g_remote->mutex.lock(); }
void unlock_after_fork() NO_THREAD_SAFETY_ANALYSIS { g_remote->mutex.unlock(); }
void renew_in_forked_child() NO_THREAD_SAFETY_ANALYSIS {
  Remote* parent = g_remote;  // locked by this thread (lock_before_fork): its settings are whole
  g_remote = new Remote();
  g_remote->options = parent->options;
  g_remote->credentials = parent->credentials;
}

Remote& remote() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_remote = new Remote();
    ::pthread_atfork(lock_before_fork, unlock_after_fork, renew_in_forked_child);
  });
  return *g_remote;
}

}  // namespace

StorageOptions StorageOptions::resolved() const {
  StorageOptions out = *this;
  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"})
    if (out.endpoint.empty()) out.endpoint = detail::environment_value(variable);
  if (out.region.empty()) out.region = detail::find_aws_region(out.profile);
  if (out.region.empty()) out.region = "us-east-1";
  if (out.ca_bundle.empty()) out.ca_bundle = detail::environment_value("AWS_CA_BUNDLE");
  return out;
}

void set_storage_options(const StorageOptions& options) {
  Remote& state = remote();
  detail::MutexLock lock(state.mutex);
  state.options = options;
  if (state.http) state.retired.push_back(std::move(state.http));
  if (state.s3) state.retired.push_back(std::move(state.s3));
}

StorageOptions storage_options() {
  Remote& state = remote();
  detail::MutexLock lock(state.mutex);
  return state.options;
}

AddressingStyle parse_addressing_style(std::string_view name) {
  if (name == "auto") return AddressingStyle::kAuto;
  if (name == "path") return AddressingStyle::kPath;
  if (name == "virtual") return AddressingStyle::kVirtual;
  throw OptionsError("addressing style '" + std::string(name) + "': expected auto, path or virtual");
}

bool is_remote_path(const std::string& path) {
  return path.starts_with("s3://") || path.starts_with("http://") || path.starts_with("https://");
}

namespace {

// "%61" as "a": userinfo is percent-encoded in a URL, and sent as it reads.
std::string percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// "scheme://authority" of a URL (no userinfo), and where its authority ends.
std::pair<std::string, size_t> url_origin(const std::string& url) {
  const size_t start = url.find("://") + 3;
  const size_t end = std::min(url.find_first_of("/?#", start), url.size());
  return {url.substr(0, end), end};
}

}  // namespace

std::string without_url_secrets(const std::string& path) {
  if (!is_remote_path(path)) return path;
  std::string url = path.substr(0, path.find('#'));
  const size_t start = url.find("://") + 3;
  const size_t end = std::min(url.find_first_of("/?", start), url.size());
  const size_t at = url.rfind('@', end);
  if (at == std::string::npos || at < start || url.starts_with("s3://")) return url;
  const std::string userinfo = percent_decoded(url.substr(start, at - start));
  url.erase(start, at + 1 - start);
  Remote& state = remote();
  detail::MutexLock lock(state.mutex);
  state.credentials[url_origin(url).first] = userinfo;
  return url;
}

namespace detail {

std::string url_credentials(const std::string& url) {
  Remote& state = remote();
  MutexLock lock(state.mutex);
  const auto found = state.credentials.find(url_origin(url).first);
  return found == state.credentials.end() ? "" : found->second;
}

}  // namespace detail

namespace detail {

const FileSystem* remote_file_system_for(const std::string& path) {
  if (!is_remote_path(path)) return nullptr;
  // A presigned URL's query is its signature: refused here, the one door every path passes, so that
  // it never becomes the name every message gives a set.
  if (path.find('?') != std::string::npos)
    throw DataError(url_without_query(path) + ": a URL with a query (a presigned URL) is not taken as a path: give "
                    "s3://bucket/key with credentials, or a URL without one");
  Remote& state = remote();
  MutexLock lock(state.mutex);
  std::unique_ptr<FileSystem>& file_system = path.starts_with("s3://") ? state.s3 : state.http;
  if (!file_system) {
    const StorageOptions options = state.options.resolved();
    file_system = path.starts_with("s3://") ? make_s3_file_system(options) : make_http_file_system(options);
  }
  return file_system.get();
}

}  // namespace detail
}  // namespace feeder

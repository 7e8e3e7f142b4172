#include "io/detail/remote_file_systems.h"

namespace feeder::detail {
namespace {

// A plain web server: objects by URL, read by range requests. It has no listing: a set there is a
// file's URL, or a directory's URL with feeder's index.json in it (which names every shard).
class HttpObjects final : public RemoteObjects {
 public:
  explicit HttpObjects(const StorageOptions& options) : client_(options) {}
  HttpRequest request(const std::string& path, const std::string& method, std::vector<std::string> headers,
                      const QueryParams& query, std::span<const uint8_t> body) const override {
    HttpRequest request;
    request.method = method;
    request.url = path;
    if (!query.empty()) request.url += (path.find('?') == std::string::npos ? "?" : "&") + canonical_query(query);
    request.name = url_without_query(path);
    request.credentials = url_credentials(path);
    request.headers = std::move(headers);
    request.body = body;
    return request;
  }
  [[noreturn]] void fail(const std::string& path, const HttpResponse& response, const std::string& doing) const override {
    std::string reason = response.status == 403 ? "forbidden" : response.status == 401 ? "unauthorized" : "";
    throw DataError(url_without_query(path) + ": HTTP " + std::to_string(response.status) + (reason.empty() ? "" : " " + reason) +
                    " while " + doing);
  }
  const HttpClient& client() const override { return client_; }

 private:
  HttpClient client_;
};

class HttpFileSystem final : public FileSystem {
 public:
  explicit HttpFileSystem(const StorageOptions& options) : objects_(std::make_shared<HttpObjects>(options)) {}

  std::shared_ptr<const RandomAccessFile> open(const std::filesystem::path& path) const override {
    return objects_->open(path.string());
  }
  FileBytes read_all(const std::filesystem::path& path) const override { return objects_->read_all(path.string()); }
  std::vector<FileEntry> list(const std::filesystem::path& directory) const override {
    const std::filesystem::path index = index_of(directory);
    FileEntry entry = objects_->head(index.string());
    if (!entry.file())
      throw DataError(url_without_query(directory.string()) + ": an HTTP server has no listing, and there is no " +
                      std::string(kIndexName) + " here: give the URL of a file, or of a directory with feeder's " +
                      std::string(kIndexName) + " (feeder convert writes it)");
    return {entry};
  }
  FileEntry stat(const std::filesystem::path& path) const override {
    const std::string url = path.string();
    // A URL ending in '/' names a directory (list() says what it needs); another one is a file, or
    // a directory known by its index.
    if (url.ends_with('/')) return {path, FileKind::kDirectory, 0};
    FileEntry entry = objects_->head(url);
    if (!entry.file() && objects_->head(index_of(path).string()).file()) entry = {path, FileKind::kDirectory, 0};
    return entry;
  }
  std::unique_ptr<WritableFile> create(const std::filesystem::path& path) const override { read_only(path); }
  void remove(const std::filesystem::path& path) const override { read_only(path); }
  void rename(const std::filesystem::path& from, const std::filesystem::path&) const override { read_only(from); }
  void make_directories(const std::filesystem::path& path) const override { read_only(path); }

 private:
  [[noreturn]] static void read_only(const std::filesystem::path& path) {
    throw DataError(url_without_query(path.string()) + ": an HTTP server is read only here: write to s3:// or a local directory");
  }
  static constexpr std::string_view kIndexName = "index.json";
  static std::filesystem::path index_of(const std::filesystem::path& directory) {
    const std::string url = directory.string();
    return url.ends_with('/') ? std::filesystem::path(url + std::string(kIndexName)) : directory / kIndexName;
  }
  std::shared_ptr<HttpObjects> objects_;
};

}  // namespace

std::unique_ptr<FileSystem> make_http_file_system(const StorageOptions& options) {
  return std::make_unique<HttpFileSystem>(options);
}

}  // namespace feeder::detail

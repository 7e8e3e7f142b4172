#include "io/detail/remote_file.h"

#include <cstdlib>
#include <string>

#include "io/detail/disk_cache.h"

namespace feeder::detail {
namespace {

// A version named by Last-Modified (a server that gives no ETag: Python's http.server, some
// proxies) reads "last-modified: <date>"; one named by its ETag is the ETag itself.
constexpr std::string_view kLastModified = "last-modified: ";

std::string version_of(const HttpResponse& response) {
  const std::string etag = response.header("etag");
  if (!etag.empty()) return etag;
  const std::string modified = response.header("last-modified");
  return modified.empty() ? "" : std::string(kLastModified) + modified;
}

std::string version_name(const std::string& version) {
  return version.starts_with(kLastModified) ? "Last-Modified" : "ETag";
}

// The version as its header gives it (the date without the prefix).
std::string version_value(const std::string& version) {
  return version.starts_with(kLastModified) ? version.substr(kLastModified.size()) : version;
}

// An opened object: its size and version then (its ETag, else its Last-Modified); every read a range
// request made with If-Match (or If-Unmodified-Since), its reply's version compared with the one opened.
class RemoteFile final : public RandomAccessFile {
 public:
  RemoteFile(std::shared_ptr<const RemoteObjects> objects, std::string name, int64_t size, std::string etag)
      : objects_(std::move(objects)), name_(std::move(name)), size_(size), etag_(std::move(etag)) {}

  const std::string& name() const override { return name_; }
  int64_t size() const override { return size_; }
  int64_t size_now() const override { return objects_->head(name_).size; }
  // A round trip costs about as much as a megabyte at a few hundred MB/s.
  int64_t gather_read_bytes() const override { return int64_t{1} << 20; }
  std::string version() const override { return etag_; }
  int64_t read_at(int64_t offset, std::span<uint8_t> out) const override {
    if (offset >= size_ || out.empty()) return 0;
    const int64_t wanted = std::min<int64_t>(static_cast<int64_t>(out.size()), size_ - offset);
    std::vector<std::string> headers{"Range: bytes=" + std::to_string(offset) + "-" + std::to_string(offset + wanted - 1)};
    if (etag_.starts_with(kLastModified))
      headers.push_back("If-Unmodified-Since: " + version_value(etag_));
    else
      headers.push_back("If-Match: " + etag_);
    const HttpResponse response =
        objects_->send(name_, "GET", headers, {}, {}, out.first(static_cast<size_t>(wanted)));
    if (response.status == 412)
      throw DataError(name_ + ": changed since it was opened (its " + version_name(etag_) + " is no longer " +
                      version_value(etag_) + "): the object was replaced while being read");
    if (response.status == 416) return 0;
    if (response.status != 206 && response.status != 200) objects_->fail(name_, response, "reading bytes " + std::to_string(offset) + "-" + std::to_string(offset + wanted - 1));
    if (response.status == 200 && offset != 0)
      throw DataError(name_ + ": the server ignored the range request (answered 200 with the whole object)");
    // A server (or a proxy) that ignores If-Match or If-Unmodified-Since still names the version it
    // sent; one that names none cannot be told from the version opened.
    const std::string version = version_of(response);
    if (version != etag_)
      throw DataError(name_ + ": changed since it was opened (its " + version_name(etag_) + " is " +
                      (version.empty() ? std::string("not given") : version_value(version)) + ", was " +
                      version_value(etag_) + "): the object was replaced while being read");
    if (response.status == 206) check_range(response.header("content-range"), offset, wanted);
    if (response.body_bytes != wanted)
      throw TransientError(name_ + ": " + std::to_string(response.body_bytes) + " bytes received of the " +
                           std::to_string(wanted) + " asked at byte " + std::to_string(offset));
    return wanted;
  }

 private:
  // A 206's Content-Range must be the range asked of the object opened: a server answering with
  // other bytes of the same length (another range, another object) is caught here.
  void check_range(const std::string& range, int64_t offset, int64_t wanted) const {
    const std::string asked = std::to_string(offset) + "-" + std::to_string(offset + wanted - 1);
    if (range == "bytes " + asked + "/" + std::to_string(size_) || range == "bytes " + asked + "/*") return;
    throw DataError(name_ + ": asked for bytes " + asked + " of " + std::to_string(size_) + ", the server sent " +
                    (range.empty() ? std::string("no Content-Range") : "'" + range.substr(0, 100) + "'"));
  }

  std::shared_ptr<const RemoteObjects> objects_;
  std::string name_;
  int64_t size_ = 0;
  std::string etag_;  // the version opened: an ETag, or "last-modified: <date>"; never empty
};

}  // namespace

HttpResponse RemoteObjects::send(const std::string& path, const std::string& method, std::vector<std::string> headers,
                                 const QueryParams& query, std::span<const uint8_t> body, std::span<uint8_t> into) const {
  const auto attempt = [&] {
    HttpRequest request = this->request(path, method, headers, query, body);
    request.into = into;
    return request;
  };
  HttpResponse response = client().perform_with_retries(attempt);
  if (redirected(path, response)) response = client().perform_with_retries(attempt);
  return response;
}

FileEntry RemoteObjects::head(const std::string& path) const {
  FileEntry entry{path, FileKind::kMissing, 0};
  const HttpResponse response = send(path, "HEAD");
  if (response.status == 404) return entry;
  if (response.status / 100 != 2) {
    const HttpResponse reason = send(path, "GET", {"Range: bytes=0-0"});
    fail(path, reason.status / 100 == 2 ? response : reason, "asking for its size");
  }
  const std::string length = response.header("content-length");
  if (length.empty()) throw DataError(path + ": the server gives no Content-Length: its size is not known");
  entry.kind = FileKind::kFile;
  entry.size = std::strtoll(length.c_str(), nullptr, 10);
  entry.version = version_of(response);
  return entry;
}

std::shared_ptr<const RandomAccessFile> RemoteObjects::open(const std::string& path) const {
  const FileEntry entry = head(path);
  if (entry.kind == FileKind::kMissing) throw DataError(path + ": cannot open: no such object (404)");
  return opened(path, entry);
}

std::shared_ptr<const RandomAccessFile> RemoteObjects::open_listed(const FileEntry& listed) const {
  if (listed.version.empty() || !listed.file()) return open(listed.path.string());
  return opened(listed.path.string(), listed);
}

std::shared_ptr<const RandomAccessFile> RemoteObjects::opened(const std::string& path, const FileEntry& entry) const {
  // Read in ranges, an object must name its version: else one replaced between two reads would be
  // read half old, half new, and nothing could tell.
  if (entry.version.empty())
    throw DataError(path + ": the server names no version of it (neither ETag nor Last-Modified), so an object "
                    "replaced while it is read in ranges could not be told from the one opened: serve it with "
                    "ETags (nginx, S3 and its kin do) or Last-Modified");
  auto file = std::make_shared<const RemoteFile>(shared_from_this(), path, entry.size, entry.version);
  const StorageOptions& options = client().options();
  if (options.cache_dir.empty()) return file;
  // The object's bytes are named by where it is, its ETag and size: a replaced object is another.
  const std::string identity = options.endpoint + "\n" + path + "\n" + entry.version + "\n" + std::to_string(entry.size);
  return disk_cache_for(options.cache_dir, options.cache_limit)->wrap(std::move(file), identity);
}

FileBytes RemoteObjects::read_all(const std::string& path) const {
  HttpResponse response = send(path, "GET");
  if (response.status == 404) throw DataError(path + ": cannot open: no such object (404)");
  if (response.status / 100 != 2) fail(path, response, "reading it");
  const std::string length = response.header("content-length");
  if (!length.empty() && std::strtoll(length.c_str(), nullptr, 10) != response.body_bytes)
    throw DataError(path + ": " + std::to_string(response.body_bytes) + " bytes received of " + length);
  return FileBytes(std::move(response.body));
}

Url parse_url(const std::string& url) {
  Url parts;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) throw DataError(url + ": not a URL (no scheme://)");
  parts.scheme = url.substr(0, scheme_end);
  const size_t host_begin = scheme_end + 3;
  const size_t path_begin = url.find('/', host_begin);
  parts.authority = url.substr(host_begin, path_begin == std::string::npos ? std::string::npos : path_begin - host_begin);
  if (path_begin != std::string::npos) parts.path = url.substr(path_begin);
  if (parts.authority.empty()) throw DataError(url + ": no host");
  return parts;
}

}  // namespace feeder::detail

#pragma once

// What the HTTP and S3 file systems share: an object store's requests (RemoteObjects, which the
// two implement: where a path's object is and how a request to it is made and signed) and a file
// opened on it (RemoteFile: its size and ETag when opened, and range reads made with If-Match, so
// that an object replaced after it was opened fails by name instead of mixing two versions).
//
// Thread safety: both are immutable once made; any thread, any number of reads at once.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/io/file_system.h"
#include "io/detail/http_client.h"
#include "io/detail/sigv4.h"

namespace feeder::detail {

class RemoteObjects : public std::enable_shared_from_this<RemoteObjects> {
 public:
  virtual ~RemoteObjects() = default;
  // A request of `method` for the object at `path`, with `headers` (and for S3 a signature).
  virtual HttpRequest request(const std::string& path, const std::string& method, std::vector<std::string> headers,
                              const QueryParams& query = {}, std::span<const uint8_t> body = {}) const = 0;
  // Throws a DataError naming `path`, saying what the server answered (its reason where it gives one).
  [[noreturn]] virtual void fail(const std::string& path, const HttpResponse& response, const std::string& doing) const = 0;
  virtual const HttpClient& client() const = 0;
  // Whether `response` says the request belongs elsewhere (S3: the bucket is in another region),
  // learnt so that request() now makes it go there; send() then makes it once more.
  virtual bool redirected(const std::string& path, const HttpResponse& response) const { return false; }

  // The request made (and made again) until it is not transient, once more where redirected().
  HttpResponse send(const std::string& path, const std::string& method, std::vector<std::string> headers = {},
                    const QueryParams& query = {}, std::span<const uint8_t> body = {}, std::span<uint8_t> into = {}) const;
  // What a HEAD tells of an object: kMissing for 404, else its size and version (ETag); fail()
  // otherwise, with the reason a GET of its first byte gives (a HEAD's answer has no body).
  FileEntry head(const std::string& path) const;
  std::shared_ptr<const RandomAccessFile> open(const std::string& path) const;
  // As listed, without a HEAD, where the listing gave a version (an ETag); else open().
  std::shared_ptr<const RandomAccessFile> open_listed(const FileEntry& listed) const;
  FileBytes read_all(const std::string& path) const;

 private:
  // The file of an object of `entry`'s size and version, through the disk cache where there is one.
  std::shared_ptr<const RandomAccessFile> opened(const std::string& path, const FileEntry& entry) const;
};

// The parts of an http(s) URL.
struct Url {
  std::string scheme;     // "http", "https"
  std::string authority;  // host[:port], as the Host header carries it
  std::string path;       // from the first '/' after the authority (empty: none)
};
Url parse_url(const std::string& url);

}  // namespace feeder::detail

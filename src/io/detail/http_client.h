#pragma once

// HTTP/1.1 through libcurl for the remote file systems: a bounded pool of connections, each kept
// alive and reused (a libcurl handle keeps its connection between requests), HTTPS with the
// system's certificate authorities or a given bundle, the usual proxy variables (libcurl reads
// http_proxy, https_proxy and no_proxy itself), and retries of transient failures with exponential
// backoff and full jitter, bounded in count and time, counted in storage_stats().
//
// Thread safety: one HttpClient serves any number of threads at once; at most max_connections
// requests run at a time, the others wait for a connection. Who owns what: the client owns its
// handles; a request's `into` span belongs to the caller and is written only during perform().

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feeder/error.h"
#include "feeder/io/object_storage.h"

namespace feeder::detail {

// A failure worth trying again: the connection refused, reset or stalled, a short body.
class TransientError : public DataError {
 public:
  using DataError::DataError;
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  // What errors and logs name: the URL without its query (a presigned URL's signature stays out).
  std::string name;
  std::vector<std::string> headers;  // "Name: value"
  std::string credentials;           // "user:password", sent as Basic authorization when set
  std::span<const uint8_t> body;     // sent with PUT and POST
  // Where the response's body goes when set (a range read straight into the caller's buffer); a
  // longer body is an error, a shorter successful one a transient failure (retried). Otherwise
  // HttpResponse::body.
  std::span<uint8_t> into;
};

// The most of an error reply's body (a status other than 2xx) kept, to be read for an S3 error's
// code or quoted: a server that sends a huge error page (a misconfigured endpoint, a hostile one)
// costs this much memory at most, and the transfer is ended there.
constexpr size_t kErrorBodyPrefixBytes = 16 * 1024;

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lowercase names
  // The reply's body, or of an error reply its first kErrorBodyPrefixBytes (then body_cut).
  std::vector<uint8_t> body;
  bool body_cut = false;
  int64_t body_bytes = 0;  // received, into `into` or `body`
  std::string header(const std::string& name) const;
  std::string body_text() const { return {body.begin(), body.end()}; }
};

class HttpClient {
 public:
  explicit HttpClient(const StorageOptions& options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One attempt. Throws TransientError for a failure worth retrying, DataError naming the request
  // for any other (no such host, a certificate not trusted); any HTTP status is returned.
  HttpResponse perform(const HttpRequest& request) const;
  // perform() until a response that is not transient (500, 502, 503, 504, 429) and no
  // TransientError, within the options' count and time; `make` builds each attempt's request (a
  // signature is made again). Throws DataError naming the request once it gives up.
  HttpResponse perform_with_retries(const std::function<HttpRequest()>& make) const;

  const StorageOptions& options() const { return options_; }

 private:
  struct Pool;
  StorageOptions options_;
  std::unique_ptr<Pool> pool_;
};

// Counts behind storage_stats(); any thread.
void count_storage_request(int64_t bytes);
void count_storage_retry();
void count_storage_failure();
void count_storage_cache_read(int64_t bytes);

// The URL without its query string: what an error may show.
std::string url_without_query(const std::string& url);

}  // namespace feeder::detail

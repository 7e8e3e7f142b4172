#pragma once

// Object storage and HTTP(S) behind the FileSystem interface: a path that starts with s3://,
// http:// or https:// names an object (or, ending in '/', a prefix) and every reader takes it as
// it takes a local path (file_system_for). The settings below are the process's own, as the AWS
// tools' environment variables are: set once, before the first remote path is opened; what they do
// not set is read from the environment and ~/.aws (StorageOptions::from_environment).
//
// Thread safety: every function may be called from any thread. set_storage_options() while
// remote files are open leaves those files on the settings they were opened with.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace feeder {

enum class AddressingStyle { kAuto, kPath, kVirtual };

struct StorageOptions {
  // S3: the endpoint ("http://127.0.0.1:4568", "https://storage.googleapis.com"); empty: AWS's
  // own for the region. From AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL.
  std::string endpoint;
  // S3: the region requests are signed for; from AWS_REGION, AWS_DEFAULT_REGION or the profile's
  // config, else us-east-1. A bucket in another region answers with its own, which is then used.
  std::string region;
  // S3: the profile of ~/.aws/credentials and ~/.aws/config (AWS_PROFILE, else "default").
  std::string profile;
  // S3: requests unsigned (a public bucket), whatever credentials there are.
  bool anonymous = false;
  // S3: bucket in the path (endpoint/bucket/key) or in the host (bucket.endpoint/key); kAuto is
  // path-style for an endpoint given, virtual-hosted for AWS's own, as botocore does.
  AddressingStyle addressing = AddressingStyle::kAuto;
  // HTTPS: a PEM file of certificate authorities instead of the system's (AWS_CA_BUNDLE).
  std::string ca_bundle;
  // Connections open at once per process (each kept alive and reused).
  int max_connections = 16;
  // Transient failures (refused or reset connections, timeouts, short reads, HTTP 500/502/503/504,
  // S3's SlowDown) are retried this many times, with exponential backoff and jitter, within
  // retry_seconds from the first attempt; then the read fails naming the URL.
  int max_retries = 8;
  double retry_seconds = 60;
  // A connection that cannot be made within this, or a transfer that moves no byte for this long,
  // is a transient failure.
  double connect_timeout_seconds = 10;
  double stall_timeout_seconds = 30;
  // Every request has a deadline: connect_timeout_seconds + stall_timeout_seconds + its bytes (those
  // asked, or the Content-Length announced, or those received) / min_bytes_per_second. A body that
  // trickles (2 bytes a second never stalls) is then a transient failure, retried.
  double min_bytes_per_second = 64 * 1024;
  // A directory on local disk where what is read is kept, so that later epochs (and later runs)
  // read it there instead of from the store; shared by every process of the node naming it. Empty:
  // nothing is written to disk. Objects without an ETag are not kept.
  std::string cache_dir;
  // The most bytes kept in cache_dir, the least recently used removed first; 0: no limit.
  int64_t cache_limit = 0;
  // The most keys one listing of a prefix may give (a page without keys counts as one): a server
  // that lists for ever (a new continuation token each page) is stopped here, by name. A listing
  // that repeats a continuation token is refused at once.
  int64_t max_listed_keys = 1'000'000;

  // Every setting left empty read from the environment (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL,
  // AWS_REGION, AWS_DEFAULT_REGION, AWS_PROFILE, AWS_CA_BUNDLE) and the profile's config.
  StorageOptions resolved() const;
};

// The settings for remote paths opened from now on.
void set_storage_options(const StorageOptions& options);
StorageOptions storage_options();

// What remote reads have cost since the process started: requests made (each attempt counts; a
// request is what an object store bills), bytes received, retries, failures given up on, and the
// bytes read from cache_dir instead.
struct StorageStats {
  int64_t requests = 0;
  int64_t bytes = 0;
  int64_t retries = 0;
  int64_t failures = 0;
  int64_t cache_bytes = 0;
  StorageStats operator-(const StorageStats& since) const {
    return {requests - since.requests, bytes - since.bytes, retries - since.retries, failures - since.failures,
            cache_bytes - since.cache_bytes};
  }
};
StorageStats storage_stats();

// "auto", "path" or "virtual"; OptionsError for another name.
AddressingStyle parse_addressing_style(std::string_view name);

// s3://, http:// or https://.
bool is_remote_path(const std::string& path);

// A path as every name, message, state and checkpoint may carry it: an http(s):// URL without its
// userinfo (`user:password@`), whose credentials the process keeps for that scheme, host and port
// and sends as Basic authorization; any remote URL without its fragment (`#...`, never sent to a
// server). Other paths as they are. The entry points (open_dataset, convert, inspect) take every
// path through it first, so that a secret in a URL is used and never printed.
std::string without_url_secrets(const std::string& path);

}  // namespace feeder

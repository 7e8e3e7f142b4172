#include <pugixml.hpp>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "io/detail/aws_config.h"
#include "io/detail/remote_file_systems.h"
#include "util/mutex.h"

namespace feeder::detail {
namespace {

constexpr std::string_view kEmptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// "s3://bucket/key" as its bucket and key.
struct S3Path {
  std::string bucket;
  std::string key;
};

S3Path parse_s3_path(const std::string& path) {
  if (!path.starts_with("s3://")) throw DataError(path + ": not an s3:// path");
  const size_t slash = path.find('/', 5);
  S3Path parts{path.substr(5, slash == std::string::npos ? std::string::npos : slash - 5),
               slash == std::string::npos ? "" : path.substr(slash + 1)};
  if (parts.bucket.empty()) throw DataError(path + ": no bucket (s3://bucket/key)");
  return parts;
}

// At most a line of a server's text, for a message: whatever the server sent, a message stays short.
std::string one_line(std::string text) {
  constexpr size_t kMaxChars = 200;
  const size_t end = text.find_first_of("\r\n");
  if (end != std::string::npos) text.resize(end);
  if (text.size() > kMaxChars) text = text.substr(0, kMaxChars) + "...";
  return text;
}

// An S3 error's code and message from its XML body ("NoSuchBucket: The specified bucket does not
// exist"), each at most a line.
std::pair<std::string, std::string> s3_error(const HttpResponse& response) {
  pugi::xml_document document;
  if (response.body.empty() || !document.load_buffer(response.body.data(), response.body.size())) return {};
  const pugi::xml_node error = document.child("Error");
  return {one_line(error.child_value("Code")), one_line(error.child_value("Message"))};
}

class S3Objects final : public RemoteObjects {
 public:
  explicit S3Objects(const StorageOptions& options)
      : client_(options),
        credentials_(options.anonymous ? AwsCredentials{} : find_aws_credentials(options.profile)),
        region_(options.region.empty() ? "us-east-1" : options.region) {
    const bool custom = !options.endpoint.empty();
    endpoint_ = parse_url(custom ? options.endpoint : "https://s3." + region_ + ".amazonaws.com");
    while (endpoint_.path.ends_with('/')) endpoint_.path.pop_back();
    virtual_hosted_ = options.addressing == AddressingStyle::kVirtual ||
                      (options.addressing == AddressingStyle::kAuto && !custom);
  }

  HttpRequest request(const std::string& path, const std::string& method, std::vector<std::string> headers,
                      const QueryParams& query, std::span<const uint8_t> body) const override {
    const S3Path object = parse_s3_path(path);
    const std::string region = region_of(object.bucket);
    Url url = endpoint_;
    if (!options_endpoint_custom() && region != region_) url.authority = "s3." + region + ".amazonaws.com";
    std::string resource = "/" + uri_encode(object.key, true);
    if (virtual_hosted_ && bucket_in_host(object.bucket)) {
      url.authority = object.bucket + "." + url.authority;
    } else {
      resource = "/" + uri_encode(object.bucket, false) + resource;
    }
    HttpRequest request;
    request.method = method;
    request.name = path;
    const std::string canonical_path = url.path + resource;
    request.url = url.scheme + "://" + url.authority + canonical_path;
    if (!query.empty()) request.url += "?" + canonical_query(query);
    request.body = body;
    request.headers = std::move(headers);
    if (credentials_.empty()) return request;  // anonymous: a public bucket
    const std::string date = amz_date_now();
    const std::string payload = body.empty() ? std::string(kEmptyPayloadHash) : sha256_hex(body);
    SigV4Request signing{method, canonical_path, query,
                         {{"host", url.authority}, {"x-amz-content-sha256", payload}, {"x-amz-date", date}}, payload};
    if (!credentials_.session_token.empty()) signing.headers.emplace_back("x-amz-security-token", credentials_.session_token);
    // S3 requires every x-amz-* header signed (x-amz-copy-source); they are sent as signed.
    for (auto it = request.headers.begin(); it != request.headers.end();) {
      const size_t colon = it->find(':');
      std::string name = it->substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      if (colon == std::string::npos || !name.starts_with("x-amz-")) {
        ++it;
        continue;
      }
      signing.headers.emplace_back(name, it->substr(it->find_first_not_of(' ', colon + 1)));
      it = request.headers.erase(it);
    }
    const SigV4Signature signature = sign_v4(signing, credentials_, region, "s3", date);
    for (const auto& [name, value] : signing.headers)
      if (name != "host") request.headers.push_back(name + ": " + value);
    request.headers.push_back("Authorization: " + signature.authorization);
    return request;
  }

  [[noreturn]] void fail(const std::string& path, const HttpResponse& response, const std::string& doing) const override {
    const auto [code, message] = s3_error(response);
    std::string text = path + ": HTTP " + std::to_string(response.status);
    if (!code.empty()) text += " " + code;
    if (!message.empty()) text += ": " + message;
    text += " (while " + doing + ")";
    if (response.status == 403 && credentials_.empty())
      text += "; no credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws), so "
              "the request was unsigned, as to a public bucket";
    if (code == "NoSuchBucket") throw DataError(path + ": no such bucket '" + parse_s3_path(path).bucket + "' (HTTP 404 NoSuchBucket)");
    throw DataError(text);
  }

  const HttpClient& client() const override { return client_; }

  // S3 answers a request signed for another region than the bucket's with its own (a 301 with
  // x-amz-bucket-region, or a 400 naming the region expected): learnt for the bucket.
  bool redirected(const std::string& path, const HttpResponse& response) const override {
    if (response.status != 301 && response.status != 307 && response.status != 400) return false;
    std::string region = response.header("x-amz-bucket-region");
    if (region.empty() && response.status == 400) {
      pugi::xml_document document;
      if (document.load_buffer(response.body.data(), response.body.size())) region = document.child("Error").child_value("Region");
    }
    const std::string bucket = parse_s3_path(path).bucket;
    if (region.empty() || region == region_of(bucket)) return false;
    MutexLock lock(mutex_);
    bucket_regions_[bucket] = region;
    return true;
  }

  // One level of `directory` (a prefix): its objects and its sub-prefixes, every page of the listing.
  std::vector<FileEntry> list(const std::string& directory, int64_t max_entries = -1) const {
    const S3Path where = parse_s3_path(directory);
    std::string prefix = where.key;
    if (!prefix.empty() && !prefix.ends_with('/')) prefix += '/';
    const std::string base = "s3://" + where.bucket + "/";
    std::string dir = directory;
    if (!dir.ends_with('/')) dir += '/';
    std::vector<FileEntry> entries;
    std::string token;
    std::set<std::string> tokens_seen;  // a server that hands one out again would list for ever
    int64_t counted = 0;                // keys, and one for each page without any
    const int64_t most = client_.options().max_listed_keys;
    for (int page = 0;; ++page) {
      QueryParams query{{"list-type", "2"}, {"delimiter", "/"}, {"prefix", prefix}};
      if (max_entries > 0) query.emplace_back("max-keys", std::to_string(max_entries));
      if (!token.empty()) query.emplace_back("continuation-token", token);
      const HttpResponse response = send(base, "GET", {}, query);
      if (response.status != 200) fail(directory, response, "listing it");
      pugi::xml_document document;
      if (!document.load_buffer(response.body.data(), response.body.size()))
        throw DataError(directory + ": the listing (page " + std::to_string(page + 1) + ") is not XML");
      const pugi::xml_node result = document.child("ListBucketResult");
      for (const pugi::xml_node contents : result.children("Contents")) {
        const std::string key = contents.child_value("Key");
        if (key.size() <= prefix.size()) continue;  // the prefix's own marker object
        // With the delimiter, keys below the prefix's level come as CommonPrefixes: a server that
        // lists them here would have another object than the one listed read.
        if (!key.starts_with(prefix) || key.find('/', prefix.size()) != std::string::npos)
          throw DataError(directory + ": the listing gives key '" + key.substr(0, 200) + "', which is not one level "
                          "below the prefix (the server ignores the delimiter '/')");
        entries.push_back({dir + key.substr(prefix.size()), FileKind::kFile, std::strtoll(contents.child_value("Size"), nullptr, 10)});
        entries.back().version = contents.child_value("ETag");
      }
      for (const pugi::xml_node common : result.children("CommonPrefixes")) {
        std::string name = std::string(common.child_value("Prefix")).substr(prefix.size());
        while (name.ends_with('/')) name.pop_back();
        if (!name.empty()) entries.push_back({dir + name, FileKind::kDirectory, 0});
      }
      counted += std::max<int64_t>(1, static_cast<int64_t>(std::distance(result.children("Contents").begin(),
                                                                            result.children("Contents").end())));
      token = result.child_value("NextContinuationToken");
      if (std::string(result.child_value("IsTruncated")) != "true" || token.empty() || max_entries > 0) break;
      if (counted >= most)
        throw DataError(directory + ": the listing passed " + std::to_string(most) + " keys in " +
                        std::to_string(page + 1) + " pages and goes on (max_listed_keys: raise it with "
                        "feeder.set_storage_options(max_listed_keys=...) or --max-listed-keys for a larger set)");
      if (!tokens_seen.insert(token).second)
        throw DataError(directory + ": the listing's page " + std::to_string(page + 1) +
                        " hands out a continuation token it had handed out before: the server would list for ever");
    }
    return entries;
  }

 private:
  bool options_endpoint_custom() const { return !client_.options().endpoint.empty(); }
  // A bucket name that can be a host name's label (no dots: they break TLS's wildcard names).
  static bool bucket_in_host(const std::string& bucket) {
    return std::all_of(bucket.begin(), bucket.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'; });
  }
  std::string region_of(const std::string& bucket) const {
    MutexLock lock(mutex_);
    const auto found = bucket_regions_.find(bucket);
    return found == bucket_regions_.end() ? region_ : found->second;
  }

  HttpClient client_;
  AwsCredentials credentials_;  // never in an error, a log or a state
  std::string region_;
  Url endpoint_;
  bool virtual_hosted_ = false;
  mutable Mutex mutex_;
  mutable std::map<std::string, std::string> bucket_regions_ GUARDED_BY(mutex_);  // learnt from redirects
};

class S3FileSystem final : public FileSystem {
 public:
  explicit S3FileSystem(const StorageOptions& options) : objects_(std::make_shared<S3Objects>(options)) {}

  std::shared_ptr<const RandomAccessFile> open_listed(const FileEntry& listed) const override {
    return objects_->open_listed(listed);
  }
  std::shared_ptr<const RandomAccessFile> open(const std::filesystem::path& path) const override {
    return objects_->open(path.string());
  }
  FileBytes read_all(const std::filesystem::path& path) const override { return objects_->read_all(path.string()); }
  std::vector<FileEntry> list(const std::filesystem::path& directory) const override {
    return objects_->list(directory.string());
  }
  FileEntry stat(const std::filesystem::path& path) const override {
    const std::string text = path.string();
    const S3Path where = parse_s3_path(text);
    if (!where.key.empty() && !where.key.ends_with('/')) {
      FileEntry entry = objects_->head(text);
      entry.path = path;
      if (entry.file()) return entry;
    }
    // A prefix is a directory when something is under it; a bucket, when it exists.
    if (!objects_->list(text, 1).empty() || where.key.empty()) return {path, FileKind::kDirectory, 0};
    return {path, FileKind::kMissing, 0};
  }
  std::unique_ptr<WritableFile> create(const std::filesystem::path& path) const override;
  void remove(const std::filesystem::path& path) const override;
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) const override;
  void make_directories(const std::filesystem::path&) const override {}  // prefixes need no making

 private:
  std::shared_ptr<S3Objects> objects_;
};

// An object being written: its bytes gathered into parts, uploaded as a multipart upload once one
// part is full (each part sent as soon as it is), or by one PUT at commit() when smaller; visible
// only once commit() completes it. Destroyed uncommitted, it aborts the upload, so S3 keeps (and
// bills) no parts. One thread writes it.
class S3WritableFile final : public WritableFile {
 public:
  // Parts of 16 MiB: S3 takes 5 MiB to 5 GiB a part and at most 10,000 parts, so an object of up to
  // 156 GiB; the memory held is one part.
  static constexpr size_t kPartBytes = size_t{16} << 20;

  S3WritableFile(std::shared_ptr<const S3Objects> objects, std::string path)
      : objects_(std::move(objects)), path_(std::move(path)) {}
  ~S3WritableFile() override {
    if (committed_ || upload_id_.empty()) return;
    try {
      objects_->send(path_, "DELETE", {}, {{"uploadId", upload_id_}});
    } catch (const std::exception&) {
      // Unwinding already: the parts of an unfinished upload are what a bucket's lifecycle rule ends.
    }
  }
  S3WritableFile(const S3WritableFile&) = delete;
  S3WritableFile& operator=(const S3WritableFile&) = delete;

  void write(const void* data, size_t size_bytes) override {
    const auto* bytes = static_cast<const uint8_t*>(data);
    while (size_bytes > 0) {
      const size_t take = std::min(size_bytes, kPartBytes - part_.size());
      part_.insert(part_.end(), bytes, bytes + take);
      bytes += take;
      size_bytes -= take;
      written_ += take;
      if (part_.size() == kPartBytes) upload_part();
    }
  }
  uint64_t bytes_written() const override { return written_; }
  void commit() override {
    if (upload_id_.empty()) {
      const HttpResponse response = objects_->send(path_, "PUT", {}, {}, part_);
      if (response.status / 100 != 2) objects_->fail(path_, response, "writing it");
    } else {
      if (!part_.empty()) upload_part();
      std::string body = "<CompleteMultipartUpload>";
      for (size_t i = 0; i < etags_.size(); ++i)
        body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags_[i] + "</ETag></Part>";
      body += "</CompleteMultipartUpload>";
      const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size());
      const HttpResponse response = objects_->send(path_, "POST", {}, {{"uploadId", upload_id_}}, bytes);
      // S3 may answer 200 and report the failure in the body.
      if (response.status / 100 != 2 || !s3_error(response).first.empty()) objects_->fail(path_, response, "completing its upload");
    }
    committed_ = true;
  }

 private:
  void upload_part() {
    if (upload_id_.empty()) {
      const HttpResponse response = objects_->send(path_, "POST", {}, {{"uploads", ""}});
      if (response.status / 100 != 2) objects_->fail(path_, response, "starting its upload");
      pugi::xml_document document;
      document.load_buffer(response.body.data(), response.body.size());
      upload_id_ = document.child("InitiateMultipartUploadResult").child_value("UploadId");
      if (upload_id_.empty()) throw DataError(path_ + ": the server started an upload without an UploadId");
    }
    const QueryParams query{{"partNumber", std::to_string(etags_.size() + 1)}, {"uploadId", upload_id_}};
    const HttpResponse response = objects_->send(path_, "PUT", {}, query, part_);
    if (response.status / 100 != 2) objects_->fail(path_, response, "uploading part " + std::to_string(etags_.size() + 1));
    etags_.push_back(response.header("etag"));
    part_.clear();
  }

  std::shared_ptr<const S3Objects> objects_;
  std::string path_;
  std::vector<uint8_t> part_;  // the part being filled
  uint64_t written_ = 0;
  std::string upload_id_;           // once a multipart upload is started
  std::vector<std::string> etags_;  // of the parts uploaded, in order
  bool committed_ = false;
};

std::unique_ptr<WritableFile> S3FileSystem::create(const std::filesystem::path& path) const {
  parse_s3_path(path.string());  // an error now, not at commit
  return std::make_unique<S3WritableFile>(objects_, path.string());
}

void S3FileSystem::remove(const std::filesystem::path& path) const {
  const HttpResponse response = objects_->send(path.string(), "DELETE");
  if (response.status / 100 != 2 && response.status != 404) objects_->fail(path.string(), response, "removing it");
}

void S3FileSystem::rename(const std::filesystem::path& from, const std::filesystem::path& to) const {
  // A copy within S3 (CopyObject, objects up to 5 GiB), then the source removed.
  const S3Path source = parse_s3_path(from.string());
  const HttpResponse response = objects_->send(
      to.string(), "PUT", {"x-amz-copy-source: " + uri_encode(source.bucket + "/" + source.key, true)});
  if (response.status / 100 != 2 || !s3_error(response).first.empty())
    objects_->fail(to.string(), response, "copying " + from.string() + " to it");
  remove(from);
}

}  // namespace

std::unique_ptr<FileSystem> make_s3_file_system(const StorageOptions& options) {
  return std::make_unique<S3FileSystem>(options);
}

}  // namespace feeder::detail

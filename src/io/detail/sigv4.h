#pragma once

// AWS Signature Version 4, as S3 takes it: the canonical request, the string to sign and the
// Authorization header of one request (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv4.html).
// Written over OpenSSL's SHA-256 and HMAC rather than through libcurl's CURLOPT_AWS_SIGV4 because
// each step must be checked against AWS's published test vectors and botocore's signer, which needs
// the canonical request and string to sign that libcurl keeps to itself; and because the same
// signature serves every request feeder makes (listings, ranges, multipart uploads) whatever
// libcurl's version signs.
//
// S3's rules, not the generic service's: the path is encoded once and never normalised (a key may
// hold "//" or "."). Pure functions; any thread.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace feeder::detail {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty for long-term keys
  bool empty() const { return access_key.empty(); }
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;  // decoded names and values
using HeaderList = std::vector<std::pair<std::string, std::string>>;   // names as sent

// RFC 3986 percent-encoding of everything but the unreserved characters (and '/' when kept).
std::string uri_encode(std::string_view text, bool keep_slash);
// The query as signed and as sent: each name and value encoded, sorted by name, then value.
std::string canonical_query(const QueryParams& query);
std::string sha256_hex(std::span<const uint8_t> bytes);
std::string sha256_hex(std::string_view text);

struct SigV4Request {
  std::string method;
  std::string path;  // encoded as sent ("/bucket/a%20b.parquet")
  QueryParams query;
  HeaderList headers;        // every header signed: host and x-amz-date at least
  std::string payload_hash;  // sha256_hex of the body, or "UNSIGNED-PAYLOAD"
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;      // hex
  std::string authorization;  // the Authorization header's value
};

// `amz_date`: the x-amz-date header's value (20150830T123600Z); its first 8 characters the scope's day.
SigV4Signature sign_v4(const SigV4Request& request, const AwsCredentials& credentials, const std::string& region,
                       const std::string& service, const std::string& amz_date);

// The x-amz-date of now (UTC).
std::string amz_date_now();

}  // namespace feeder::detail

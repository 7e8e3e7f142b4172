#include "io/detail/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <stdexcept>

namespace feeder::detail {
namespace {

std::string hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (const uint8_t byte : bytes) {
    text += kDigits[byte >> 4];
    text += kDigits[byte & 15];
  }
  return text;
}

std::vector<uint8_t> hmac(std::span<const uint8_t> key, std::string_view data) {
  std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
            data.size(), out.data(), &size))
    throw std::runtime_error("HMAC-SHA256 failed");
  out.resize(size);
  return out;
}

std::vector<uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A header value as signed: trimmed, each run of spaces one space.
std::string trimmed(std::string_view value) {
  std::string text;
  bool space = false;
  for (const char c : value) {
    if (c == ' ' || c == '\t') {
      space = !text.empty();
      continue;
    }
    if (space) text += ' ';
    space = false;
    text += c;
  }
  return text;
}

}  // namespace

std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kDigits[byte >> 4];
      out += kDigits[byte & 15];
    }
  }
  return out;
}

std::string canonical_query(const QueryParams& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& [name, value] : query) encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  std::sort(encoded.begin(), encoded.end());
  std::string text;
  for (const auto& [name, value] : encoded) text += (text.empty() ? "" : "&") + name + "=" + value;
  return text;
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(bytes.data(), bytes.size(), digest);
  return hex(digest);
}

std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

SigV4Signature sign_v4(const SigV4Request& request, const AwsCredentials& credentials, const std::string& region,
                       const std::string& service, const std::string& amz_date) {
  // Headers by lowercase name, a repeated header's values joined by commas in order.
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    std::string& joined = headers[lowercase(name)];
    joined += (joined.empty() ? "" : ",") + trimmed(value);
  }
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + name;
  }
  SigV4Signature out;
  out.canonical_request = request.method + "\n" + (request.path.empty() ? "/" : request.path) + "\n" +
                          canonical_query(request.query) + "\n" + canonical_headers + "\n" + signed_headers + "\n" +
                          request.payload_hash;
  const std::string day = amz_date.substr(0, 8);
  const std::string scope = day + "/" + region + "/" + service + "/aws4_request";
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(out.canonical_request);
  std::vector<uint8_t> key = hmac(bytes_of("AWS4" + credentials.secret_key), day);
  key = hmac(key, region);
  key = hmac(key, service);
  key = hmac(key, "aws4_request");
  out.signature = hex(hmac(key, out.string_to_sign));
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key + "/" + scope +
                      ", SignedHeaders=" + signed_headers + ", Signature=" + out.signature;
  return out;
}

std::string amz_date_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

}  // namespace feeder::detail

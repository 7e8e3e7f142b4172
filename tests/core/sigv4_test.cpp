// SigV4 against AWS's published test vectors (aws-sig-v4-test-suite: the generic service's cases
// whose paths S3 signs alike) and the S3 examples of AWS's "Authenticating Requests" documentation.
// The signatures are AWS's, copied from the suites; none was computed here.
#include <gtest/gtest.h>

#include "io/detail/aws_config.h"
#include "io/detail/sigv4.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace feeder::detail {
namespace {

const AwsCredentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const std::string kSuiteDate = "20150830T123600Z";
const std::string kEmptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

SigV4Signature sign_suite(const std::string& method, const std::string& path, const QueryParams& query,
                          HeaderList extra, const std::string& body = "", const AwsCredentials& credentials = kSuite) {
  SigV4Request request{method, path, query, {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", kSuiteDate}}, sha256_hex(body)};
  for (auto& header : extra) request.headers.push_back(std::move(header));
  return sign_v4(request, credentials, "us-east-1", "service", kSuiteDate);
}

std::string suite_authorization(const std::string& signed_headers, const std::string& signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=" +
         signed_headers + ", Signature=" + signature;
}

TEST(SigV4, GetVanilla) {
  const SigV4Signature signature = sign_suite("GET", "/", {}, {});
  EXPECT_EQ(signature.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + kEmptyHash);
  EXPECT_EQ(signature.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(signature.authorization,
            suite_authorization("host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

TEST(SigV4, GetUnreserved) {
  const std::string path = "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  EXPECT_EQ(uri_encode(path, true), path);
  EXPECT_EQ(sign_suite("GET", path, {}, {}).signature, "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f");
}

TEST(SigV4, QueryOrderedByNameThenValue) {
  const SigV4Signature by_name = sign_suite("GET", "/", {{"Param2", "value2"}, {"Param1", "value1"}}, {});
  EXPECT_NE(by_name.canonical_request.find("\n/\nParam1=value1&Param2=value2\n"), std::string::npos);
  EXPECT_EQ(by_name.signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  EXPECT_EQ(sign_suite("GET", "/", {{"Param1", "value2"}, {"Param1", "value1"}}, {}).signature,
            "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694");
}

TEST(SigV4, Utf8QueryEncodedByByte) {
  EXPECT_EQ(canonical_query({{"\xE1\x88\xB4", "bar"}}), "%E1%88%B4=bar");
  EXPECT_EQ(sign_suite("GET", "/", {{"\xE1\x88\xB4", "bar"}}, {}).signature,
            "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04");
}

TEST(SigV4, RepeatedHeadersJoinedInOrder) {
  const SigV4Signature order = sign_suite(
      "GET", "/", {}, {{"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}});
  EXPECT_NE(order.canonical_request.find("my-header1:value4,value1,value3,value2\n"), std::string::npos);
  EXPECT_EQ(order.authorization, suite_authorization("host;my-header1;x-amz-date",
                                                     "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"));
  EXPECT_EQ(sign_suite("GET", "/", {}, {{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}}).signature,
            "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea");
}

TEST(SigV4, HeaderValuesTrimmed) {
  const SigV4Signature trim = sign_suite("GET", "/", {}, {{"My-Header1", " value1"}, {"My-Header2", "\"a   b   c\""}});
  EXPECT_NE(trim.canonical_request.find("my-header1:value1\nmy-header2:\"a b c\"\n"), std::string::npos);
  EXPECT_EQ(trim.signature, "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
}

TEST(SigV4, PostWithBody) {
  const SigV4Signature post =
      sign_suite("POST", "/", {}, {{"Content-Type", "application/x-www-form-urlencoded"}}, "Param1=value1");
  EXPECT_EQ(post.authorization, suite_authorization("content-type;host;x-amz-date",
                                                    "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
}

TEST(SigV4, SessionTokenSigned) {
  const std::string token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
  const SigV4Signature signature = sign_suite("GET", "/", {}, {{"X-Amz-Security-Token", token}});
  EXPECT_EQ(signature.authorization, suite_authorization("host;x-amz-date;x-amz-security-token",
                                                         "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"));
}

// AWS's S3 example "GET Object": a range of examplebucket/test.txt.
TEST(SigV4, S3GetObjectExample) {
  const AwsCredentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const SigV4Request request{"GET", "/test.txt", {},
                             {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"},
                              {"x-amz-content-sha256", kEmptyHash}, {"x-amz-date", "20130524T000000Z"}},
                             kEmptyHash};
  const SigV4Signature signature = sign_v4(request, credentials, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(signature.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// AWS's S3 example "GET Bucket (List Objects)": max-keys=2&prefix=J.
TEST(SigV4, S3ListObjectsExample) {
  const AwsCredentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const SigV4Request request{"GET", "/", {{"max-keys", "2"}, {"prefix", "J"}},
                             {{"Host", "examplebucket.s3.amazonaws.com"}, {"x-amz-content-sha256", kEmptyHash},
                              {"x-amz-date", "20130524T000000Z"}},
                             kEmptyHash};
  const SigV4Signature signature = sign_v4(request, credentials, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(signature.signature, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, KeysEncodedOnceWithSlashesKept) {
  EXPECT_EQ(uri_encode("a b/c+d=e%f.parquet", true), "a%20b/c%2Bd%3De%25f.parquet");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
}

// Credentials and region as the AWS tools find them: the environment first, then the profile.
TEST(AwsConfig, EnvironmentThenProfile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("feeder-aws-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "credentials") << "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = sdefault\n"
                                        "[other]\naws_access_key_id=AKOTHER\naws_secret_access_key=sother\naws_session_token = tok\n";
  std::ofstream(dir / "config") << "[default]\nregion = eu-west-1\n[profile other]\nregion=ap-south-1\n";
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                           "AWS_DEFAULT_REGION", "AWS_PROFILE"})
    ::unsetenv(name);
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir / "credentials").c_str(), 1);
  ::setenv("AWS_CONFIG_FILE", (dir / "config").c_str(), 1);
  EXPECT_EQ(find_aws_credentials("").access_key, "AKDEFAULT");
  EXPECT_EQ(find_aws_region(""), "eu-west-1");
  const AwsCredentials other = find_aws_credentials("other");
  EXPECT_EQ(other.secret_key, "sother");
  EXPECT_EQ(other.session_token, "tok");
  EXPECT_EQ(find_aws_region("other"), "ap-south-1");
  ::setenv("AWS_PROFILE", "other", 1);
  EXPECT_EQ(find_aws_credentials("").access_key, "AKOTHER");
  ::setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
  EXPECT_EQ(find_aws_credentials("").access_key, "AKENV");
  EXPECT_EQ(find_aws_region(""), "us-west-2");
  ::setenv("AWS_PROFILE", "missing", 1);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  EXPECT_TRUE(find_aws_credentials("").empty());
  for (const char* name : {"AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
                           "AWS_CONFIG_FILE"})
    ::unsetenv(name);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace feeder::detail

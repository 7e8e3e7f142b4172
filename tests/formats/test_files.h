#pragma once

// Small helpers shared by the format tests: a per-test temporary directory, file writers and a way
// to get the exact message of an expected DataError.

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "feeder/error.h"

namespace feeder::testing {

// A fresh directory for one test, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    // The counter keeps several directories of one test apart.
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("feeder-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + std::to_string(::getpid()) +
             "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline void write_gzip(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The message of the DataError that `action` throws. Records a test failure (and returns a marker
// that matches no expected text) when it throws nothing or something else.
inline std::string data_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const DataError& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected a DataError, got another exception: " << error.what();
    return "<other exception>";
  }
  ADD_FAILURE() << "expected a DataError, nothing was thrown";
  return "<nothing thrown>";
}

}  // namespace feeder::testing

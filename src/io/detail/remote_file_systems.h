#pragma once

// The file systems of remote paths (file_system_for picks them by scheme): plain HTTP(S) and S3.

#include <memory>

#include "feeder/io/file_system.h"
#include "feeder/io/object_storage.h"
#include "io/detail/remote_file.h"

namespace feeder::detail {

std::unique_ptr<FileSystem> make_http_file_system(const StorageOptions& options);
std::unique_ptr<FileSystem> make_s3_file_system(const StorageOptions& options);
// The file system of an s3://, http:// or https:// path, made with storage_options(); null for
// any other path.
const FileSystem* remote_file_system_for(const std::string& path);
// "user:password" kept by without_url_secrets() for an http(s):// URL's scheme, host and port, or
// empty.
std::string url_credentials(const std::string& url);

}  // namespace feeder::detail

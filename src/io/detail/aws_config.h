#pragma once

// Credentials and region as the AWS tools find them: the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_DEFAULT_REGION), then the profile
// (AWS_PROFILE, else "default") of ~/.aws/credentials and ~/.aws/config (or the files that
// AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE name). Read when a file system is made; any thread.

#include <string>

#include "io/detail/sigv4.h"

namespace feeder::detail {

// An environment variable's value; empty when unset.
std::string environment_value(const char* name);

// One value of an INI file's section ("[default]", "[profile x]"); empty when absent or unreadable.
// The files are a handful of lines: a small reader here rather than a dependency.
std::string ini_value(const std::string& path, const std::string& section, const std::string& key);

// The profile's name: `profile`, else AWS_PROFILE, else "default".
std::string aws_profile_name(const std::string& profile);
// Credentials from the environment, else the profile; empty when there are none (then requests go
// unsigned, as to a public bucket).
AwsCredentials find_aws_credentials(const std::string& profile);
// The region from the environment, else the profile's config; empty when none is set.
std::string find_aws_region(const std::string& profile);

}  // namespace feeder::detail

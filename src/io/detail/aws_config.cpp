#include "io/detail/aws_config.h"

#include <cstdlib>
#include <fstream>

namespace feeder::detail {
namespace {

std::string strip(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

std::string aws_file(const char* variable, const char* name) {
  if (std::string path = environment_value(variable); !path.empty()) return path;
  const std::string home = environment_value("HOME");
  return home.empty() ? "" : home + "/.aws/" + name;
}

}  // namespace

std::string environment_value(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string ini_value(const std::string& path, const std::string& section, const std::string& key) {
  std::ifstream file(path);
  std::string line, current;
  while (std::getline(file, line)) {
    line = strip(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      current = strip(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t equals = line.find('=');
    if (current == section && equals != std::string::npos && strip(line.substr(0, equals)) == key)
      return strip(line.substr(equals + 1));
  }
  return "";
}

std::string aws_profile_name(const std::string& profile) {
  if (!profile.empty()) return profile;
  const std::string named = environment_value("AWS_PROFILE");
  return named.empty() ? "default" : named;
}

AwsCredentials find_aws_credentials(const std::string& profile) {
  AwsCredentials credentials{environment_value("AWS_ACCESS_KEY_ID"), environment_value("AWS_SECRET_ACCESS_KEY"),
                             environment_value("AWS_SESSION_TOKEN")};
  if (!credentials.access_key.empty() && !credentials.secret_key.empty()) return credentials;
  const std::string name = aws_profile_name(profile);
  // The credentials file names a section by the profile; the config file by "profile <name>",
  // except the default profile.
  const std::string files[] = {aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), aws_file("AWS_CONFIG_FILE", "config")};
  const std::string sections[] = {name, name == "default" ? name : "profile " + name};
  for (int i = 0; i < 2; ++i) {
    credentials = {ini_value(files[i], sections[i], "aws_access_key_id"), ini_value(files[i], sections[i], "aws_secret_access_key"),
                   ini_value(files[i], sections[i], "aws_session_token")};
    if (!credentials.access_key.empty() && !credentials.secret_key.empty()) return credentials;
  }
  return {};
}

std::string find_aws_region(const std::string& profile) {
  for (const char* variable : {"AWS_REGION", "AWS_DEFAULT_REGION"})
    if (std::string region = environment_value(variable); !region.empty()) return region;
  const std::string name = aws_profile_name(profile);
  return ini_value(aws_file("AWS_CONFIG_FILE", "config"), name == "default" ? name : "profile " + name, "region");
}

}  // namespace feeder::detail

// The HTTP client's bounds: a server that accepts and never answers (a stalled store) ends a
// request by the stall timeout, as a transient failure retried within its bounds, and at once when
// the thread's RequestAbortScope asks (a destroyed loader's reads). Loopback only.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "io/detail/http_client.h"
#include "io/detail/request_abort.h"

namespace feeder::detail {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Listens on 127.0.0.1 and never accepts: connections wait in the backlog, unanswered.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    socklen_t size = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(::listen(fd_, 16), 0);
  }
  ~SilentServer() { ::close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/set/part-0.parquet?X-Amz-Signature=secret"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

StorageOptions quick_options() {
  StorageOptions options;
  options.stall_timeout_seconds = 1;
  options.connect_timeout_seconds = 1;
  options.max_retries = 1;
  options.retry_seconds = 10;
  return options;
}

TEST(HttpClient, AbortScopeEndsARequestInFlightWithinASecond) {
  SilentServer server;
  StorageOptions options = quick_options();
  options.stall_timeout_seconds = 30;  // only the abort can end it soon
  const HttpClient client(options);
  std::atomic<bool> abort{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abort = true;
  });
  const Clock::time_point start = Clock::now();
  {
    const RequestAbortScope scope([&] { return abort.load(); });
    HttpRequest request;
    request.url = server.url();
    EXPECT_THROW(client.perform(request), RequestAborted);
  }
  aborter.join();
  EXPECT_LT(seconds_since(start), 1.6);
  EXPECT_FALSE(request_abort_asked());  // the scope is gone with its block
}

TEST(HttpClient, StalledTransferRetriedThenGivenUpNamingTheUrlWithoutItsQuery) {
  SilentServer server;
  const HttpClient client(quick_options());
  const StorageStats before = storage_stats();
  const Clock::time_point start = Clock::now();
  try {
    client.perform_with_retries([&] {
      HttpRequest request;
      request.url = server.url();
      return request;
    });
    FAIL() << "a server that never answers gave a response";
  } catch (const DataError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("/set/part-0.parquet: "), std::string::npos) << text;
    EXPECT_NE(text.find("gave up after 2 attempts"), std::string::npos) << text;
    EXPECT_EQ(text.find("secret"), std::string::npos) << text;
  }
  EXPECT_LT(seconds_since(start), 8);
  const StorageStats spent = storage_stats() - before;
  EXPECT_EQ(spent.retries, 1);
  EXPECT_EQ(spent.failures, 1);
  EXPECT_EQ(spent.requests, 2);
}

TEST(HttpClient, RefusedConnectionIsTransient) {
  int port = 0;
  {
    SilentServer closed;  // a port that was just free, closed again
    port = std::stoi(closed.url().substr(17, 5));
  }
  const HttpClient client(quick_options());
  HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  EXPECT_THROW(client.perform(request), TransientError);
}

TEST(HttpClient, UrlWithoutQuery) {
  EXPECT_EQ(url_without_query("https://h/a/b.parquet?X-Amz-Signature=abc&x=1"), "https://h/a/b.parquet");
  EXPECT_EQ(url_without_query("https://h/a"), "https://h/a");
}

}  // namespace
}  // namespace feeder::detail

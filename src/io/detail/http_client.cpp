#include "io/detail/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "feeder/util/interrupt.h"
#include "io/detail/request_abort.h"

namespace feeder::detail {
namespace {

std::atomic<int64_t> g_requests{0}, g_bytes{0}, g_retries{0}, g_failures{0}, g_cache_bytes{0};

void init_curl() {
  static std::once_flag once;
  // curl_global_init is not thread safe: once, before any handle.
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("libcurl failed to start");
  });
}

// Where one transfer's response goes; the callbacks' user data.
struct Transfer {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  bool overflow = false;
  // The deadline (StorageOptions::min_bytes_per_second): fixed seconds, and one more for each
  // min_bytes_per_second of the reply.
  std::chrono::steady_clock::time_point started{};
  double fixed_seconds = 0;
  double min_bytes_per_second = 1;
  double limit_seconds = 0;  // when the deadline passed: the one it was
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  HttpResponse& response = *transfer.response;
  // Only a successful body goes to the caller's buffer; an error's body is kept to be quoted.
  if (!transfer.request->into.empty() && response.status / 100 == 2) {
    const std::span<uint8_t> into = transfer.request->into;
    if (response.body_bytes + static_cast<int64_t>(bytes) > static_cast<int64_t>(into.size())) {
      transfer.overflow = true;
      return 0;  // libcurl stops the transfer
    }
    std::memcpy(into.data() + response.body_bytes, data, bytes);
  } else if (response.status / 100 != 2 && response.body.size() + bytes > kErrorBodyPrefixBytes) {
    // An error page past the prefix: what is kept says enough; the rest is not read.
    const size_t kept = kErrorBodyPrefixBytes - response.body.size();
    response.body.insert(response.body.end(), data, data + kept);
    response.body_bytes += static_cast<int64_t>(kept);
    response.body_cut = true;
    return 0;  // libcurl ends the transfer (CURLE_WRITE_ERROR), which perform() takes as the reply
  } else {
    response.body.insert(response.body.end(), data, data + bytes);
  }
  response.body_bytes += static_cast<int64_t>(bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& transfer = *static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  const std::string line(data, bytes);
  if (line.starts_with("HTTP/")) {
    // A new response (after a 100 Continue, or a redirect): its own headers only.
    transfer.response->headers.clear();
    const size_t space = line.find(' ');
    transfer.response->status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    return bytes;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return bytes;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  const size_t begin = value.find_first_not_of(" \t");
  const size_t end = value.find_last_not_of(" \t\r\n");
  transfer.response->headers[name] = begin == std::string::npos ? "" : value.substr(begin, end - begin + 1);
  return bytes;
}

thread_local const RequestAbortScope* t_abort_scope = nullptr;

// Stops a transfer when the process is asked to stop (Ctrl-C), except while unwinding: then the
// request is part of removing what the stopped work wrote (a shard, an unfinished upload).
bool stop_requested() { return interrupt_requested() && std::uncaught_exceptions() == 0; }
int on_progress(void* user, curl_off_t download_total, curl_off_t downloaded, curl_off_t, curl_off_t) {
  if (stop_requested() || request_abort_asked()) return 1;
  auto& transfer = *static_cast<Transfer*>(user);
  const double bytes = static_cast<double>(std::max<int64_t>(
      {static_cast<int64_t>(transfer.request->into.size()), download_total, downloaded}));
  const double limit = transfer.fixed_seconds + bytes / transfer.min_bytes_per_second;
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - transfer.started).count() <= limit) return 0;
  transfer.limit_seconds = limit;
  return 1;
}

bool transient_code(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool transient_status(long status) {
  return status == 500 || status == 502 || status == 503 || status == 504 || status == 429;
}

}  // namespace

// A transfer's handle and the multi handle it runs in: the multi handle keeps the connection alive
// between requests, and lets perform() wait in short slices, so that a Ctrl-C stops a transfer at
// once (libcurl calls the progress callback only about once a second while nothing arrives).
struct CurlHandles {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
};

// Idle handles, each with its connection kept alive; at most max_connections handles exist.
struct HttpClient::Pool {
  std::mutex mutex;
  std::condition_variable returned;
  std::vector<CurlHandles> idle;  // guarded by mutex
  int made = 0;                   // guarded by mutex

  ~Pool() {
    for (CurlHandles& handles : idle) {
      curl_multi_cleanup(handles.multi);
      curl_easy_cleanup(handles.easy);
    }
  }
  CurlHandles take(int limit) {
    std::unique_lock lock(mutex);
    returned.wait(lock, [&] { return !idle.empty() || made < limit; });
    if (!idle.empty()) {
      CurlHandles handles = idle.back();
      idle.pop_back();
      return handles;
    }
    CurlHandles handles{curl_easy_init(), curl_multi_init()};
    if (!handles.easy || !handles.multi) {
      if (handles.easy) curl_easy_cleanup(handles.easy);
      if (handles.multi) curl_multi_cleanup(handles.multi);
      throw std::bad_alloc();
    }
    ++made;
    return handles;
  }
  void give_back(CurlHandles handles) {
    {
      std::lock_guard lock(mutex);
      idle.push_back(handles);
    }
    returned.notify_one();
  }
};

namespace {

// curl_easy_perform in slices of at most 100 ms, stopping when the process is asked to stop (or the
// request's abort scope asks): then CURLE_ABORTED_BY_CALLBACK, as the progress callback gives.
CURLcode run_transfer(const CurlHandles& handles) {
  if (curl_multi_add_handle(handles.multi, handles.easy) != CURLM_OK) return CURLE_OUT_OF_MEMORY;
  CURLcode code = CURLE_OK;
  for (;;) {
    int running = 0;
    if (curl_multi_perform(handles.multi, &running) != CURLM_OK) {
      code = CURLE_OUT_OF_MEMORY;
      break;
    }
    if (running == 0) {
      int left = 0;
      CURLMsg* message = curl_multi_info_read(handles.multi, &left);
      code = message && message->msg == CURLMSG_DONE ? message->data.result : CURLE_RECV_ERROR;
      break;
    }
    if (stop_requested() || request_abort_asked()) {
      code = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(handles.multi, nullptr, 0, 100, nullptr);
  }
  curl_multi_remove_handle(handles.multi, handles.easy);
  return code;
}

}  // namespace

RequestAbortScope::RequestAbortScope(std::function<bool()> abort) : abort_(std::move(abort)), outer_(t_abort_scope) {
  t_abort_scope = this;
}
RequestAbortScope::~RequestAbortScope() { t_abort_scope = outer_; }
bool request_abort_asked() { return t_abort_scope && t_abort_scope->abort_(); }

std::string HttpResponse::header(const std::string& name) const {
  const auto found = headers.find(name);
  return found == headers.end() ? "" : found->second;
}

std::string url_without_query(const std::string& url) { return url.substr(0, url.find('?')); }

void count_storage_request(int64_t bytes) {
  g_requests.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
}
void count_storage_retry() { g_retries.fetch_add(1, std::memory_order_relaxed); }
void count_storage_failure() { g_failures.fetch_add(1, std::memory_order_relaxed); }
void count_storage_cache_read(int64_t bytes) { g_cache_bytes.fetch_add(bytes, std::memory_order_relaxed); }

HttpClient::HttpClient(const StorageOptions& options) : options_(options), pool_(std::make_unique<Pool>()) {
  init_curl();
  options_.max_connections = std::max(1, options_.max_connections);
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::perform(const HttpRequest& request) const {
  const CurlHandles handles = pool_->take(options_.max_connections);
  struct Return {
    Pool& pool;
    CurlHandles handles;
    ~Return() { pool.give_back(handles); }
  } give_back{*pool_, handles};
  CURL* handle = handles.easy;
  // A reset keeps the handle's connection alive for the next request.
  curl_easy_reset(handle);
  HttpResponse response;
  Transfer transfer{&request, &response};
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers) headers = curl_slist_append(headers, header.c_str());
  // libcurl adds "Expect: 100-continue" to larger uploads, a round trip of its own,
  // and a form's Content-Type to every POST: neither is asked for.
  if (request.method == "PUT" || request.method == "POST") {
    headers = curl_slist_append(headers, "Expect:");
    headers = curl_slist_append(headers, "Content-Type:");
  }
  const std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, &curl_slist_free_all);
  char error_text[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &transfer);
  transfer.fixed_seconds = options_.connect_timeout_seconds + options_.stall_timeout_seconds;
  transfer.min_bytes_per_second = std::max(1.0, options_.min_bytes_per_second);
  transfer.started = std::chrono::steady_clock::now();
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_seconds * 1000));
  // A transfer moving less than one byte a second for the stall timeout is given up (and retried).
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(options_.stall_timeout_seconds)));
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!request.credentials.empty()) {
    curl_easy_setopt(handle, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(handle, CURLOPT_USERPWD, request.credentials.c_str());
  }
  curl_easy_setopt(handle, CURLOPT_BUFFERSIZE, 512L * 1024);
  if (!options_.ca_bundle.empty()) curl_easy_setopt(handle, CURLOPT_CAINFO, options_.ca_bundle.c_str());
  if (request.method == "HEAD") {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else if (request.method == "PUT" || request.method == "POST") {
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
    // Never null: a null body would make libcurl read the upload from stdin.
    static const char kNoBytes[] = "";
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.empty() ? kNoBytes : reinterpret_cast<const char*>(request.body.data()));
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    if (request.method == "PUT") curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, "PUT");
  } else if (request.method != "GET") {
    curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode code = run_transfer(handles);
  count_storage_request(response.body_bytes);
  const std::string& name = request.name.empty() ? url_without_query(request.url) : request.name;
  if (transfer.overflow)
    throw DataError(name + ": the server sent more than the " + std::to_string(request.into.size()) + " bytes asked for");
  if (code == CURLE_OK && !request.into.empty() && response.status / 100 == 2 &&
      response.body_bytes < static_cast<int64_t>(request.into.size()))
    throw TransientError(name + ": " + std::to_string(response.body_bytes) + " bytes received of the " +
                         std::to_string(request.into.size()) + " asked");  // a short body: tried again
  if (code == CURLE_ABORTED_BY_CALLBACK && transfer.limit_seconds > 0) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f", transfer.limit_seconds);
    throw TransientError(name + ": the reply took over its deadline of " + seconds + " s (" +
                         std::to_string(response.body_bytes) + " bytes received; at least " +
                         std::to_string(static_cast<int64_t>(transfer.min_bytes_per_second)) +
                         " bytes a second are expected after the connection and first-byte limits)");
  }
  if (code == CURLE_ABORTED_BY_CALLBACK) {
    if (request_abort_asked()) throw RequestAborted();
    throw Interrupted();
  }
  if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && response.body_cut)) {
    const std::string what = error_text[0] ? error_text : curl_easy_strerror(code);
    if (transient_code(code)) throw TransientError(name + ": " + what);
    throw DataError(name + ": " + what);
  }
  return response;
}

HttpResponse HttpClient::perform_with_retries(const std::function<HttpRequest()>& make) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  thread_local std::minstd_rand random(std::random_device{}());
  std::string last_error, name;
  for (int attempt = 0;; ++attempt) {
    const HttpRequest request = make();
    name = request.name.empty() ? url_without_query(request.url) : request.name;
    try {
      HttpResponse response = perform(request);
      if (!transient_status(response.status)) return response;
      std::string text = response.body_text();
      last_error = "HTTP " + std::to_string(response.status) +
                   (text.find("SlowDown") != std::string::npos ? " (SlowDown)" : "");
    } catch (const TransientError& error) {
      last_error = error.what();
      if (last_error.starts_with(name + ": ")) last_error.erase(0, name.size() + 2);
    }
    // Full jitter over an exponential ceiling: many clients backing off at once spread out.
    const double ceiling = std::min(5.0, 0.1 * static_cast<double>(1 << std::min(attempt, 10)));
    const double delay = std::uniform_real_distribution<double>(0.0, ceiling)(random);
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (attempt >= options_.max_retries || elapsed + delay > options_.retry_seconds) {
      count_storage_failure();
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", elapsed);
      throw UnreachableError(name + ": " + last_error + " (gave up after " + std::to_string(attempt + 1) + " attempts in " +
                      seconds + " s)");
    }
    count_storage_retry();
    // Slept in slices, so an interrupt ends the wait.
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
    while (Clock::now() < until) {
      if (stop_requested()) throw Interrupted();
      if (request_abort_asked()) throw RequestAborted();
      std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(20)));
    }
  }
}

}  // namespace feeder::detail

namespace feeder {

StorageStats storage_stats() {
  return {detail::g_requests.load(std::memory_order_relaxed), detail::g_bytes.load(std::memory_order_relaxed),
          detail::g_retries.load(std::memory_order_relaxed), detail::g_failures.load(std::memory_order_relaxed),
          detail::g_cache_bytes.load(std::memory_order_relaxed)};
}

}  // namespace feeder

#pragma once

// Ending a thread's requests in flight when their result is no longer wanted: a stream's reader
// whose loader is destroyed, or whose epoch's schedule was replaced. The reader opens a
// RequestAbortScope around its read; while it lives, a remote request of that thread ends within
// a second of `abort` returning true (libcurl asks at least once a second), with RequestAborted.
//
// Thread safety: a scope belongs to the thread that made it; `abort` is called on that thread and
// reads only atomics or what else is safe from there.

#include <functional>
#include <stdexcept>

namespace feeder::detail {

class RequestAborted : public std::runtime_error {
 public:
  RequestAborted() : std::runtime_error("request aborted: its result is no longer wanted") {}
};

class RequestAbortScope {
 public:
  explicit RequestAbortScope(std::function<bool()> abort);
  ~RequestAbortScope();
  RequestAbortScope(const RequestAbortScope&) = delete;
  RequestAbortScope& operator=(const RequestAbortScope&) = delete;

 private:
  std::function<bool()> abort_;
  const RequestAbortScope* outer_;
  friend bool request_abort_asked();
};

// Whether the innermost scope of this thread asks its requests to end.
bool request_abort_asked();

}  // namespace feeder::detail

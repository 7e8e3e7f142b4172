#pragma once

// The exceptions feeder throws. Plain values that own their messages: a worker's exception is
// carried to the consumer thread as a std::exception_ptr and rethrown there unchanged.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace feeder {

// Thrown for bad input: a malformed, truncated or unreadable file. The message always starts with
// the file name and the place in it ("train.csv: line 3, column 17: ..."), so it can be shown as is.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A DataError of storage that stopped answering, or kept failing, for longer than its retries allow
// (a server down, hung or too slow). The message says how many attempts were made in how long;
// nothing else is asked of that storage before it is thrown.
class UnreachableError : public DataError {
 public:
  using DataError::DataError;
};

// Thrown when distributed training cannot go on: a rank that died or never came, a master that is
// not reachable, a collective past its timeout, ranks run with different settings. The message
// starts with "rank R: " and says what happened.
class DistributedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when options are invalid; the message says what to change.
class OptionsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An OptionsError of a memory budget too small for a stream: what it needs against what it was
// given, so that a caller that shares out a budget can say it in its own terms without reading
// the message.
class BudgetError : public OptionsError {
 public:
  BudgetError(const std::string& message, int64_t needed_bytes, int64_t given_bytes, bool window_can_shrink)
      : OptionsError(message), needed_bytes(needed_bytes), given_bytes(given_bytes), window_can_shrink(window_can_shrink) {}

  int64_t needed_bytes;      // the smallest budget that would do (at least)
  int64_t given_bytes;       // the budget given
  bool window_can_shrink;    // a smaller shuffle window would also do
};

}  // namespace feeder

#pragma once

// The exceptions feeder throws. Plain values that own their messages: a worker's exception is
// carried to the consumer thread as a std::exception_ptr and rethrown there unchanged.

#include <stdexcept>
#include <string>

namespace feeder {

// Thrown for bad input: a malformed, truncated or unreadable file. The message always starts with
// the file name and the place in it ("train.csv: line 3, column 17: ..."), so it can be shown as is.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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

}  // namespace feeder

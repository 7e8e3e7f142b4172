#pragma once

// Spreading independent work items over threads: the one loop behind the CSV reader's chunks, the
// Parquet writer's pages and column blocks and the Parquet image reader's column groups, so that all
// of them follow one policy:
//  - Thread counts: 0 means one per core; a negative count is refused (resolve_num_threads throws
//    OptionsError naming the option, parallel_for throws std::invalid_argument).
//  - Errors: the exception of the lowest failing index is rethrown, whatever the timing and the
//    number of threads. Callers number items in file order, so a message names the first bad place.
//  - Threads that cannot start: nothing more is claimed, the threads already running finish the
//    item they hold and are joined, and ThreadStartError is thrown.
//
// Callers: library code (formats readers and writers), from whichever thread calls them. No thread
// outlives the call, and no state is kept between calls, so concurrent and nested calls are allowed
// (a nested call starts threads of its own).

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace feeder {

// Thrown when the system refuses to start a thread (std::thread's std::system_error, usually
// EAGAIN when a process or user thread limit is reached). The message says how many threads were
// asked for and how many had started.
class ThreadStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resolves an options field: 0 -> one thread per core (std::thread::hardware_concurrency(), at
// least 1), a positive count as is. A negative count throws OptionsError:
// "<what> must be 0 (one per core) or positive, got -2".
int resolve_num_threads(int requested, std::string_view what);

// Runs body(idx) exactly once for every idx in [0, num_items), on min(num_threads, num_items)
// threads: the calling thread and the ones it starts. Threads claim indices in increasing order and
// the call returns only after every started thread has been joined.
//
// When body throws, no further index is claimed (indices already claimed still finish), and the
// exception of the lowest index that threw is rethrown on the calling thread with its message
// intact. Indices are claimed in order, so every lower index has run by then: it is the first
// error in index order over the whole range, for any timing. Higher indices may not have run.
//
// num_threads: 0 = one per core, as in every options struct; negative throws std::invalid_argument
// before anything runs (options should be checked earlier, with resolve_num_threads, whose message
// names the option). One thread runs everything on the calling thread, in index order.
//
// body is called concurrently from several threads, with distinct indices: it may write its own
// per-index slots freely, anything else shared needs synchronising.
void parallel_for(int64_t num_items, int num_threads, const std::function<void(int64_t)>& body);

namespace detail {

// Starts a thread running `work`; the default is std::thread's constructor.
using ThreadStarter = std::function<std::thread(std::function<void()> work)>;

// parallel_for with thread creation replaced, so that tests can make a start fail.
void parallel_for_with_starter(int64_t num_items, int num_threads, const std::function<void(int64_t)>& body,
                               const ThreadStarter& start_thread);

}  // namespace detail
}  // namespace feeder

#pragma once

// One epoch of a loader as a range, so that a training loop reads
//
//   for (auto& batch : loader.epoch(e)) { ... }
//
// instead of start_epoch(e) followed by `while (auto batch = loader.next())`. It is a thin view
// over those two calls and gives the same batches in the same order; loaders keep both interfaces.
//
// Ownership: the range and its iterators point at the loader, which must outlive them; the range
// owns the batch the iterator currently points at (released before the next one is fetched, as in
// the while loop). Thread safety: none of its own; like the loader, one consumer thread uses it.
// Leaving the loop early (break, return, an exception) needs nothing: the loader's next
// start_epoch() or its destructor cancels what was left of the epoch.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>

namespace feeder {

// `Loader` has start_epoch(int64_t) and next() -> std::optional<Value>. An input range: begin()
// starts the epoch (calling it again starts the epoch over), and each step calls next() once.
template <class Loader, class Value>
class EpochRange {
 public:
  EpochRange(Loader& loader, int64_t epoch) : loader_(&loader), epoch_(epoch) {}

  class iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = Value;
    using difference_type = std::ptrdiff_t;

    iterator() = default;
    Value& operator*() const { return *range_->current_; }
    Value* operator->() const { return &*range_->current_; }
    iterator& operator++() {
      range_->fetch_next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return it.at_end(); }

   private:
    friend class EpochRange;
    explicit iterator(EpochRange* range) : range_(range) {}
    bool at_end() const { return !range_->current_; }
    EpochRange* range_ = nullptr;
  };

  int64_t epoch() const { return epoch_; }
  // Starts the epoch and fetches its first batch; throws what start_epoch() or next() throws.
  iterator begin() {
    current_.reset();
    loader_->start_epoch(epoch_);
    fetch_next();
    return iterator(this);
  }
  std::default_sentinel_t end() const { return {}; }

 private:
  void fetch_next() {
    // The batch in hand goes back to the loader's pool before waiting for the next one.
    current_.reset();
    current_ = loader_->next();
  }

  Loader* loader_;
  int64_t epoch_;
  std::optional<Value> current_;  // empty before begin() and at the end of the epoch
};

}  // namespace feeder

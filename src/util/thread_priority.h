#pragma once

// Scheduling hints for the loader's own threads (workers, stream readers), so that waking them never
// takes a core from the thread they serve (the training loop). Best effort: a failure, or a system
// without these policies, leaves the thread as it was.

namespace feeder::detail {

// The calling thread becomes a batch thread (Linux's SCHED_BATCH, at the same nice level): it gets
// the same share of the cores, but waking it does not preempt the thread running on the core it is
// woken on; it runs when a core is free or at the next scheduler tick. A loader's worker is woken
// each time the consumer takes a batch, and would otherwise preempt the training loop there, in the
// middle of next(), for as long as it takes to assemble a batch. Workers run batches ahead of the
// consumer, so a few milliseconds' delay in starting one costs nothing.
void become_batch_thread();

// The calling thread runs at `nice` (lower priority for a positive value), as a batch thread.
void become_background_thread(int nice);

}  // namespace feeder::detail

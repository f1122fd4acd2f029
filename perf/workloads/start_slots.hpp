// start_slots.hpp: StartSlots, the pre-allocated array that task bodies write their start time to.
// A task body does one thing: `slot->store(now_ns(), release)` (a plain store on x86; the release
// lets the workload free the slots once it has read them all). No allocation, no lock, no shared
// counter; the workload learns that every task ran by scanning the slots.
// Threads: any thread may record into a slot; wait_all() and value() run on the workload's thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

#include "system.hpp"

namespace kairos::perf {

class StartSlots {
 public:
  static constexpr std::int64_t kUnset = 0;  // steady_clock never reads 0 after boot

  explicit StartSlots(std::size_t n) : n_(n), slots_(new std::atomic<std::int64_t>[n]) {
    for (std::size_t i = 0; i < n_; ++i) slots_[i].store(kUnset, std::memory_order_relaxed);
  }

  std::size_t size() const noexcept { return n_; }
  std::atomic<std::int64_t>* at(std::size_t i) noexcept { return &slots_[i]; }
  std::int64_t value(std::size_t i) const noexcept {
    return slots_[i].load(std::memory_order_acquire);
  }

  // Waits until every slot is set or the steady clock passes `give_up_ns`, polling every
  // `poll_ns` (sleeping, so that the scheduler's threads keep the cores). Returns how many slots
  // are still unset. `on_poll(done)` is called once per poll.
  template <class OnPoll>
  std::size_t wait_all(std::int64_t give_up_ns, std::int64_t poll_ns, OnPoll&& on_poll) const {
    std::size_t next = 0;  // slots [0, next) are known set
    for (;;) {
      while (next < n_ && slots_[next].load(std::memory_order_acquire) != kUnset) ++next;
      on_poll(next);
      if (next == n_) return 0;
      if (now_ns() >= give_up_ns) break;
      sleep_until_ns(now_ns() + poll_ns);
    }
    std::size_t missing = 0;
    for (std::size_t i = next; i < n_; ++i) missing += value(i) == kUnset;
    return missing;
  }

 private:
  std::size_t n_;
  std::unique_ptr<std::atomic<std::int64_t>[]> slots_;
};

}  // namespace kairos::perf

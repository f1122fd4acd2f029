// producer_tokens.hpp: one moodycamel ProducerToken per (thread, inbox), so that an enqueue
// skips the queue's implicit-producer hash lookup.
// Owners:  an inbox's ProducerTokens owns every token made for it. A thread keeps raw pointers
//          to its tokens in a small thread-local cache, each beside the owner's unique id, so a
//          new owner at a dead one's address is never mistaken for it.
// Threads: for_this_thread() is called by producers; its hit path reads only the thread-local
//          cache. The miss path, a thread's exit, and the owner's destruction take one
//          process-wide mutex: they are rare, and they must agree on whether an owner is alive
//          (a thread returns its tokens to live owners; a dying owner destroys the rest).
// Churn:   a token destroyed on its thread's exit frees its moodycamel producer for reuse by the
//          next token, so short-lived threads do not grow the inbox.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <concurrentqueue.h>

#include <kairos/detail/task.hpp>

namespace kairos::detail {

class ProducerTokens {
 public:
  using Queue = moodycamel::ConcurrentQueue<TaskBase*>;
  explicit ProducerTokens(Queue& q);
  ~ProducerTokens();  // before the queue: destroys the tokens threads still hold
  ProducerTokens(const ProducerTokens&) = delete;
  ProducerTokens& operator=(const ProducerTokens&) = delete;

  // The calling thread's token for this queue (made on first use; std::bad_alloc if it cannot).
  moodycamel::ProducerToken& for_this_thread() {
    for (const CacheEntry& e : t_cache_)
      if (e.owner == this && e.uid == uid_) return *e.token;
    return make_for_this_thread();
  }

 private:
  struct CacheEntry {
    const ProducerTokens* owner = nullptr;
    std::uint64_t uid = 0;
    moodycamel::ProducerToken* token = nullptr;
  };
  static constexpr std::size_t kCacheSize = 4;
  struct ThreadCache {
    CacheEntry entries[kCacheSize];
    std::size_t next_victim = 0;
    const CacheEntry* begin() const noexcept { return entries; }
    const CacheEntry* end() const noexcept { return entries + kCacheSize; }
    ~ThreadCache();  // returns the tokens to their live owners
  };
  static thread_local ThreadCache t_cache_;

  moodycamel::ProducerToken& make_for_this_thread();
  static void give_back(const CacheEntry& e) noexcept;  // process-wide mutex held

  Queue& queue_;
  const std::uint64_t uid_;
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> tokens_;  // process-wide mutex
};

}  // namespace kairos::detail

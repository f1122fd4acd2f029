// producer_tokens.hpp: one moodycamel ProducerToken per (thread, inbox), so that an enqueue
// skips the queue's implicit-producer hash lookup.
// Owners:  an inbox's ProducerTokens owns every token made for it. A thread keeps raw pointers
//          to its tokens in a small thread-local cache, each beside the owner's unique id, so a
//          new owner at a dead one's address is never mistaken for it.
// Threads: for_this_thread() is called by producers; its hit path reads only the thread-local
//          cache, a trivial, constant-initialised thread_local reached without a TLS guard (its
//          exit hook, t_reaper_ in the .cpp, is a separate thread_local that only the miss path
//          constructs). The miss path, a thread's exit, and the owner's destruction take one
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

class ProducerTokens;
struct ProducerTokenCacheEntry {
  const ProducerTokens* owner = nullptr;
  std::uint64_t uid = 0;
  moodycamel::ProducerToken* token = nullptr;
};
inline constexpr std::size_t kProducerTokenCacheSize = 4;
// A thread's cache: trivial, no destructor (the reaper gives the tokens back at the thread's exit).
struct ProducerTokenCache {
  ProducerTokenCacheEntry entries[kProducerTokenCacheSize];
  std::size_t next_victim = 0;
  bool reaper_armed = false;  // t_reaper_ constructed: it gives the entries back at exit
  bool exited = false;        // t_reaper_ ran: later tokens of this thread are not given back
  const ProducerTokenCacheEntry* begin() const noexcept { return entries; }
  const ProducerTokenCacheEntry* end() const noexcept { return entries + kProducerTokenCacheSize; }
};

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
  using CacheEntry = ProducerTokenCacheEntry;
  using ThreadCache = ProducerTokenCache;
  static constexpr std::size_t kCacheSize = kProducerTokenCacheSize;
  static inline constinit thread_local ThreadCache t_cache_{};
  struct Reaper {
    bool armed = false;
    ~Reaper();  // returns t_cache_'s tokens to their live owners
  };
  static thread_local Reaper t_reaper_;

  moodycamel::ProducerToken& make_for_this_thread();
  static void give_back(const CacheEntry& e) noexcept;  // process-wide mutex held

  Queue& queue_;
  const std::uint64_t uid_;
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> tokens_;  // process-wide mutex
};

}  // namespace kairos::detail

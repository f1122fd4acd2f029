// producer_tokens.hpp: one moodycamel ProducerToken per (thread, inbox), so that an enqueue
// skips the queue's implicit-producer hash lookup.
// Owners:  an inbox's ProducerTokens owns every token made for it. A thread keeps raw pointers
//          to its tokens in a small thread-local cache, each beside the owner's unique id, so a
//          new owner at a dead one's address is never mistaken for it.
// Threads: for_this_thread() is called by producers; its hit path reads only the thread-local
//          cache, a trivial, constant-initialised thread_local reached without a TLS guard (its
//          exit hook, t_release_, is a separate thread_local that only the miss path touches).
//          Inline, so that every translation unit sees its constant initializer (declared
//          constinit and defined in the .cpp, the ASan+UBSan build once reported a null `this`
//          reading it from another unit; not investigated further). The miss path, a thread's
//          exit, and the owner's destruction take one process-wide mutex: they are rare, and they
//          must agree on whether an owner is alive (a thread returns its tokens to live owners; a
//          dying owner destroys the rest).
// Churn:   a token destroyed on its thread's exit frees its moodycamel producer for reuse by the
//          next token, so short-lived threads do not grow the inbox.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <concurrentqueue.h>

#include <kairos/detail/task.hpp>

namespace kairos::detail {

// The inbox's queue. Blocks of 256 items, not moodycamel's default 32: a producer moves to a new
// block (a walk of the block's flags, a free-list take) once per 256 enqueues instead of every
// 32 (about 5 instructions per submission, docs/design.md's path budget), and above
// EXPLICIT_BLOCK_EMPTY_COUNTER_THRESHOLD (32) a block counts its dequeued items with one counter
// per bulk dequeue (the leader's side) instead of a flag per item.
struct InboxQueueTraits : moodycamel::ConcurrentQueueDefaultTraits {
  static const std::size_t BLOCK_SIZE = 256;
};
using InboxQueue = moodycamel::ConcurrentQueue<TaskBase*, InboxQueueTraits>;

class ProducerTokens;
struct ProducerTokenCacheEntry {
  const ProducerTokens* owner = nullptr;
  std::uint64_t uid = 0;
  moodycamel::ProducerToken* token = nullptr;
};
inline constexpr std::size_t kProducerTokenCacheSize = 4;
// A thread's cache: trivial, no destructor (t_release_ gives the tokens back at the thread's exit).
// At namespace scope: a nested class's member initializers are not usable in its enclosing
// class's own inline static member.
struct ProducerTokenCache {
  ProducerTokenCacheEntry entries[kProducerTokenCacheSize];
  std::size_t next_victim = 0;
  bool exited = false;  // t_release_ ran: not touched again; later tokens of this thread stay cached
  const ProducerTokenCacheEntry* begin() const noexcept { return entries; }
  const ProducerTokenCacheEntry* end() const noexcept { return entries + kProducerTokenCacheSize; }
};

class ProducerTokens {
 public:
  using Queue = InboxQueue;
  explicit ProducerTokens(Queue& q);
  ~ProducerTokens();  // before the queue: destroys the tokens threads still hold
  ProducerTokens(const ProducerTokens&) = delete;
  ProducerTokens& operator=(const ProducerTokens&) = delete;

  // The calling thread's token for this queue (made on first use; std::bad_alloc if it cannot).
  moodycamel::ProducerToken& for_this_thread() {
    // The uid alone names this owner: uids are never reused, and a free entry's is 0. The first
    // entry apart: a thread that submits to one scheduler finds it there, before the loop's setup.
    const std::uint64_t uid = uid_;
    if (t_cache_.entries[0].uid == uid) [[likely]]
      return *t_cache_.entries[0].token;
    for (const CacheEntry& e : t_cache_)
      if (e.uid == uid) return *e.token;
    return make_for_this_thread();
  }

 private:
  using CacheEntry = ProducerTokenCacheEntry;
  using ThreadCache = ProducerTokenCache;
  static constexpr std::size_t kCacheSize = kProducerTokenCacheSize;
  static inline constinit thread_local ThreadCache t_cache_{};
  struct ReleaseAtExit {
    bool armed = false;
    ~ReleaseAtExit();  // returns t_cache_'s tokens to their live owners
  };
  static thread_local ReleaseAtExit t_release_;

  moodycamel::ProducerToken& make_for_this_thread();
  static void give_back(const CacheEntry& e) noexcept;  // process-wide mutex held

  Queue& queue_;
  const std::uint64_t uid_;
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> tokens_;  // process-wide mutex
};

}  // namespace kairos::detail

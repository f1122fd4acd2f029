// producer_tokens.cpp: see producer_tokens.hpp for the ownership rules.
#include "producer_tokens.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace kairos::detail {
namespace {

// Guards every owner's token list, the registry of live owners, and their lifetimes' overlap.
std::mutex& registry_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: threads may exit after static teardown
  return *m;
}
std::unordered_map<std::uint64_t, ProducerTokens*>& live_owners() {
  static auto* m = new std::unordered_map<std::uint64_t, ProducerTokens*>;
  return *m;
}
std::atomic<std::uint64_t> g_next_uid{1};

}  // namespace

thread_local ProducerTokens::ReleaseAtExit ProducerTokens::t_release_;

ProducerTokens::ProducerTokens(Queue& q) : queue_(q), uid_(g_next_uid.fetch_add(1, std::memory_order_relaxed)) {
  std::lock_guard lock(registry_mutex());
  live_owners().emplace(uid_, this);
}

ProducerTokens::~ProducerTokens() {
  std::lock_guard lock(registry_mutex());
  live_owners().erase(uid_);
  tokens_.clear();  // cached pointers to these now fail the uid check of a live owner
}

moodycamel::ProducerToken& ProducerTokens::make_for_this_thread() {
  std::lock_guard lock(registry_mutex());
  auto token = std::make_unique<moodycamel::ProducerToken>(queue_);
  if (!token->valid()) throw std::bad_alloc();
  ThreadCache& cache = t_cache_;
  if (!cache.exited) t_release_.armed = true;  // its first use registers its destructor for this thread's exit
  CacheEntry* slot = nullptr;
  for (CacheEntry& e : cache.entries) {
    if (e.owner == nullptr) { slot = &e; break; }
    // An entry whose owner died (or was replaced at the same address) is free.
    auto it = live_owners().find(e.uid);
    if (it == live_owners().end() || it->second != e.owner) { e = CacheEntry{}; slot = &e; break; }
  }
  if (slot == nullptr) {  // all live: return the oldest to its owner
    slot = &cache.entries[cache.next_victim];
    cache.next_victim = (cache.next_victim + 1) % kCacheSize;
    give_back(*slot);
  }
  tokens_.push_back(std::move(token));
  *slot = CacheEntry{this, uid_, tokens_.back().get()};
  return *slot->token;
}

void ProducerTokens::give_back(const CacheEntry& e) noexcept {
  auto it = live_owners().find(e.uid);
  if (it == live_owners().end() || it->second != e.owner) return;  // the owner destroyed it
  auto& list = it->second->tokens_;
  auto pos = std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.get() == e.token; });
  if (pos != list.end()) list.erase(pos);  // ~ProducerToken: its producer may be reused
}

ProducerTokens::ReleaseAtExit::~ReleaseAtExit() {
  std::lock_guard lock(registry_mutex());
  ThreadCache& cache = t_cache_;
  cache.exited = true;  // a thread_local destructor that submits after this keeps its token cached
  for (CacheEntry& e : cache.entries)
    if (e.owner != nullptr) {
      give_back(e);
      e = CacheEntry{};
    }
}

}  // namespace kairos::detail

#if defined(__SANITIZE_THREAD__)
// What ThreadSanitizer cannot see, in the libraries kairos builds on (a program that links kairos
// gets these; a race in kairos's own code or in the program is still reported):
//  - moodycamel: TSan does not model std::atomic_thread_fence. moodycamel's explicit producers
//    reuse a block once Block::is_empty() sees every emptyFlag set (relaxed loads followed by an
//    acquire fence, pairing with the consumer's release stores in set_many_empty), so TSan
//    reports the producer's write into a reused slot against the consumer's earlier read of it.
//    Only those two moodycamel frames are named.
//  - libstdc++'s exception objects: a task's exception is shared by the task node's
//    std::exception_ptr and whoever get() rethrew it to (the same object, as kairos promises),
//    and the last of them to let go destroys it; often the runner, releasing the node after the
//    caller caught and read the exception. The reference count that orders the two lives in
//    libstdc++, which Debian does not build with TSan, so the destruction is reported as racing
//    the caller's read (about once in 150 runs of InvokeAny.AllFailingThrowsTheLastFailure).
//    TSan shows only the uninstrumented function that called free/delete: the lines name
//    exactly those functions of libstdc++'s exception cleanup.
extern "C" const char* __tsan_default_suppressions() {
  return "race:moodycamel::ConcurrentQueue<*>::ExplicitProducer::enqueue<*>\n"
         "race:moodycamel::ConcurrentQueue<*>::ExplicitProducer::dequeue_bulk<*>\n"
         "race:std::__exception_ptr::exception_ptr::_M_release\n"
         "race:__cxa_free_exception\n"
         "race:__cxa_decrement_exception_refcount\n"
         "race:std::exception::~exception\n"
         "race:std::runtime_error::~runtime_error\n"
         "race:std::logic_error::~logic_error\n";
}
#endif

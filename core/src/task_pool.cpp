// task_pool.cpp: see kairos/detail/task_pool.hpp for the contract.
//
// Ownership: a free node belongs to exactly one place at a time: a thread's `head` list, one of
// its `spare` chains, or one chain on a class's global stack. Chains move between threads only
// through the global stack: push is a CAS (release: the chain's links are written before),
// take is exchange(nullptr) (acquire: sees those links). Nobody pops a single chain off the
// shared stack, so the ABA problem of a Treiber pop does not arise.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>

#include <kairos/detail/task_pool.hpp>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define KAIROS_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define KAIROS_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define KAIROS_POISON(p, n) ((void)(p), (void)(n))
#define KAIROS_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace kairos::detail {
namespace {

constexpr std::size_t kChainLength = 64;         // nodes handed between threads at once
constexpr std::size_t kSlabBytes = 256 * 1024;   // one growth step of a class

struct FreeNode {
  FreeNode* next;        // within a chain
  FreeNode* next_chain;  // on a stack of chains (valid on a chain's first node)
  std::size_t length;    // of the chain (valid on a chain's first node)
};
static_assert(sizeof(FreeNode) <= kClassSizes[0]);

std::atomic<SlabAllocFn> g_slab_alloc{nullptr};

void* default_slab() noexcept { return ::operator new(kSlabBytes, std::nothrow); }
std::atomic<std::size_t> g_slab_bytes{0};

struct ClassPool {
  std::atomic<FreeNode*> chains{nullptr};  // global stack of chains
  std::mutex grow_mu;                      // carving a slab
  char* cur = nullptr;                     // grow_mu
  char* end = nullptr;                     // grow_mu

  void push_chain(FreeNode* first, std::size_t length) noexcept {
    first->length = length;
    FreeNode* top = chains.load(std::memory_order_relaxed);
    do {
      first->next_chain = top;
    } while (!chains.compare_exchange_weak(top, first, std::memory_order_release, std::memory_order_relaxed));
  }

  // Carves up to kChainLength nodes of `size` bytes into a list; throws std::bad_alloc.
  FreeNode* grow(std::size_t size, std::size_t& got) {
    std::lock_guard lock(grow_mu);
    FreeNode* list = nullptr;
    got = 0;
    while (got < kChainLength) {
      if (cur == nullptr || static_cast<std::size_t>(end - cur) < size) {
        if (got > 0) break;
        SlabAllocFn fn = g_slab_alloc.load(std::memory_order_acquire);
        void* slab = fn ? fn(kSlabBytes) : default_slab();
        if (slab == nullptr) throw std::bad_alloc();
        g_slab_bytes.fetch_add(kSlabBytes, std::memory_order_relaxed);
        cur = static_cast<char*>(slab);
        end = cur + kSlabBytes;
      }
      auto* n = reinterpret_cast<FreeNode*>(cur);
      cur += size;
      n->next = list;
      list = n;
      ++got;
    }
    return list;
  }
};

ClassPool g_pools[kClassCount];

struct ThreadCache {
  struct PerClass {
    FreeNode* head = nullptr;   // nodes ready to hand out
    std::size_t count = 0;
    FreeNode* spare = nullptr;  // chains taken from the global stack, not yet opened
  };
  PerClass cls[kClassCount];

  ~ThreadCache() { flush(); }

  void flush() noexcept {
    for (std::size_t c = 0; c < kClassCount; ++c) {
      PerClass& pc = cls[c];
      if (pc.head) g_pools[c].push_chain(pc.head, pc.count);
      while (pc.spare) {
        FreeNode* next = pc.spare->next_chain;
        g_pools[c].push_chain(pc.spare, pc.spare->length);
        pc.spare = next;
      }
      pc = PerClass{};
    }
  }
};

thread_local ThreadCache t_cache;

}  // namespace

void* task_alloc(std::uint8_t cls) {
  ThreadCache::PerClass& pc = t_cache.cls[cls];
  if (pc.head == nullptr) {
    if (pc.spare == nullptr) pc.spare = g_pools[cls].chains.exchange(nullptr, std::memory_order_acquire);
    if (pc.spare != nullptr) {
      pc.head = pc.spare;
      pc.count = pc.spare->length;
      pc.spare = pc.spare->next_chain;
    } else {
      pc.head = g_pools[cls].grow(kClassSizes[cls], pc.count);
    }
  }
  FreeNode* n = pc.head;
  pc.head = n->next;
  --pc.count;
  if (pc.head) __builtin_prefetch(pc.head, 1);  // the next allocation's node, and its link
  KAIROS_UNPOISON(n, kClassSizes[cls]);
  return n;
}

void task_free(void* p, std::uint8_t cls) noexcept {
  ThreadCache::PerClass& pc = t_cache.cls[cls];
  auto* n = static_cast<FreeNode*>(p);
  n->next = pc.head;
  pc.head = n;
  ++pc.count;
  if (pc.count >= 2 * kChainLength) {
    // Keep kChainLength for this thread's own allocations; hand the rest to the others.
    FreeNode* first = pc.head;
    FreeNode* last = first;
    for (std::size_t i = 1; i < kChainLength; ++i) last = last->next;
    pc.head = last->next;
    last->next = nullptr;
    pc.count -= kChainLength;
    g_pools[cls].push_chain(first, kChainLength);
  }
  // Poison all but the links, so a use after free of a task trips AddressSanitizer.
  KAIROS_POISON(reinterpret_cast<char*>(n) + sizeof(FreeNode), kClassSizes[cls] - sizeof(FreeNode));
}

namespace {
// Chains taken out of circulation by release_thread_cache_for_testing(), so that the next
// allocation has to grow; they return when the default slab allocator is restored.
std::mutex g_parked_mu;
FreeNode* g_parked[kClassCount] = {};
}  // namespace

void set_slab_allocator_for_testing(SlabAllocFn fn) noexcept {
  g_slab_alloc.store(fn, std::memory_order_release);
  if (fn != nullptr) return;
  std::lock_guard lock(g_parked_mu);
  for (std::size_t c = 0; c < kClassCount; ++c) {
    while (FreeNode* p = g_parked[c]) {
      g_parked[c] = p->next_chain;
      g_pools[c].push_chain(p, p->length);
    }
  }
}

void release_thread_cache_for_testing() noexcept {
  t_cache.flush();
  std::lock_guard lock(g_parked_mu);
  for (std::size_t c = 0; c < kClassCount; ++c) {
    {
      std::lock_guard grow_lock(g_pools[c].grow_mu);  // drop the rest of the current slab (test only)
      g_pools[c].cur = g_pools[c].end = nullptr;
    }
    FreeNode* p = g_pools[c].chains.exchange(nullptr, std::memory_order_acquire);
    while (p) {
      FreeNode* next = p->next_chain;
      p->next_chain = g_parked[c];
      g_parked[c] = p;
      p = next;
    }
  }
}

std::size_t slab_bytes_reserved() noexcept { return g_slab_bytes.load(std::memory_order_relaxed); }

}  // namespace kairos::detail

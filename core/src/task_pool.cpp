// task_pool.cpp: see kairos/detail/task_pool.hpp for the contract.
//
// Ownership (who may touch what):
//   ThreadCache (t_cache)     the thread it belongs to, only. Its `loaded` and `previous`
//                             magazines belong to that thread while they are there.
//   Magazine                  exactly one owner at a time: a thread's cache, one of its class's
//                             SharedStacks (full or empty), or the parked list of the tests. The
//                             owner alone writes `count`, `slots` and `next`; a magazine and the
//                             free nodes it points to change owner only through a SharedStack
//                             (push (TP2) / pop (TP3)) or under g_parked_mu.
//   LooseNode                 a free node kept singly because no magazine could be had (out of
//                             memory); owned like a magazine, through the `loose` SharedStack.
//   SharedStack::top_         any thread pushes (CAS); removals (pop, take_all) hold pop_mu_.
//   Depot::cur, end           the class's current slab and its bump pointer: carve_mu.
//   Depot::ready[i]           a populated slab nobody has carved yet (kReadySlabs slots): stored
//                             only by the holder of `preparing` into a null slot (TP5), taken by
//                             carve() (TP6).
//   Depot::preparing          a try-lock: one preparer per class at a time (TP11/TP12).
//   Depot::unpopulated        a slab carve() grew without populating it: set by carve (TP15),
//                             taken by a preparer (TP16), who populates it in place.
//   g_want                    bit c: class c may have an empty ready slot (TP8 sets, TP9 clears).
//   g_slabs                   every slab ever taken (keeps them reachable): g_registry_mu.
//   g_parked_*                free nodes set aside by the tests: g_parked_mu.
//   counters                  relaxed statistics; nothing is ordered by them.
//
// Atomic edges (each operation below names its partner):
//   (TP2) push: CAS release, publishes the element's `next`, a magazine's slots, and the nodes'
//        last writes (the freeing thread's destructor, its ASan poison) -> pairs with (TP3).
//   (TP3) pop / take_all: acquire load and CAS of `top_`; reads the element (TP2) published.
//   (TP5) prepare: ready[i].store release, publishes the populated slab -> pairs with (TP6).
//   (TP6) carve: ready[i].exchange seq_cst takes one (acquire side of TP5), then
//   (TP8) carve: g_want.fetch_or seq_cst asks for the next one. The preparer does
//   (TP9) g_want.fetch_and seq_cst, then (TP7) ready[i].load seq_cst for each slot. Dekker pair,
//        slot by slot: in the single order S of these, if TP7 reads the slab TP6 takes then
//        TP7 <S TP6, so TP9 <S TP7 <S TP6 <S TP8 and the bit TP8 sets survives TP9: no request is
//        lost. If TP7 reads null the preparer fills the slot itself.
//   (TP10) task_pool_prepare: g_want.load relaxed, a hint: a bit missed now stays set (only TP9
//        clears it, and only before checking TP7) and is seen by a later call.
//   (TP11) preparing.exchange acquire / (TP12) preparing.store release: the try-lock; TP11 seeing the
//        last TP12 orders the previous preparer's TP5 before this one's TP7, so a slab stored is
//        never overwritten (the store happens only after TP7 read null and only under the lock).
//   (TP13) set_slab_allocator_for_testing store release -> (TP14) load acquire in new_slab; the
//        setter then takes and drops every class's `preparing` and carve_mu, so a slab being
//        taken with the old allocator is in place before it returns (the next (TP11) or carve
//        lock sees (TP13)).
//   (TP15) carve: unpopulated.store relaxed -> (TP16) prepare: exchange relaxed. Only an address
//        travels: slabs are never freed, and the kernel populates without changing a byte.
//   (TP17) carve: carvable_nodes store relaxed (carve_mu's holder) -> (TP18) make_magazines_ahead:
//        relaxed loads of it and of magazines_made (fetch_add relaxed wherever a magazine is
//        made). Hints only: a stale count makes a few magazines too many or too few now, and the
//        next prepare (every new slab asks for one, TP8) reads newer ones; the magazines
//        themselves travel through the empty stack (TP2/TP3).
//   (TP19) make_magazines_ahead cut short: g_want.fetch_or relaxed, the preparer asking itself
//        for another call -> read by (TP10), a hint: a missed bit only delays the rest, and the
//        next new slab sets it again (TP8).
//
// ABA: removals from a SharedStack (pop and take_all) hold its pop_mu_, so at most one thread
// removes at a time; pushes only CAS the top (they read no shared element). While the remover
// holds x = top, x stays in the stack (only the remover could take it), so x cannot be pushed
// again; a push after the remover's load makes top a different element, and top can only return
// to x by removing that element, which only the remover does. So when the CAS finds top == x,
// nothing was pushed or removed meanwhile and x->next, written before x's push (TP2), is current.
//
// Memory bound (issue: threads that overlap must not grow the pool): a node is carved only when
// the thread's two magazines are empty, the class's stack of full magazines is empty, and no
// loose node exists. Every free node is in a thread's magazines (at most 2 x kMagazineSlots per
// thread alive and class), on the full stack, or loose; an exiting thread pushes its magazines.
// So carved nodes <= the peak of live nodes + 2 x kMagazineSlots x threads alive (+ the pushes in
// flight, one per thread alive), whatever the number of threads that came and went.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include <kairos/detail/task_pool.hpp>

#include "cache_line.hpp"
#include "task_pool_testing.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define KAIROS_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define KAIROS_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define KAIROS_LSAN_ROOT(p, n) __lsan_register_root_region((p), (n))
#else
#define KAIROS_POISON(p, n) ((void)(p), (void)(n))
#define KAIROS_UNPOISON(p, n) ((void)(p), (void)(n))
#define KAIROS_LSAN_ROOT(p, n) ((void)(p), (void)(n))
#endif

namespace kairos::detail {
namespace {

constexpr std::size_t kPageBytes = 4096;
constexpr std::size_t kMagazinesPerPrepare = 256;  // make_magazines_ahead, per call (~135 KB)
// Populated slabs kept ready per class in use. Two: a leader that prepares only when it wakes (W1:
// every kShortHighWater = 8,192 far-future submissions while the pool grows) must hand out more
// than one slab's nodes per wake (5,460 of 48 bytes), or the submitting thread grows half its
// slabs itself, faulting their pages one at a time (57-76 of ~150 slabs in a fresh million-timer
// run with one, 15-24 with two).
constexpr std::size_t kReadySlabs = 2;
constexpr std::size_t kSlabHeaderBytes = 64;  // SlabHeader, padded: nodes start on a cache line
static_assert(kClassCount <= 32, "g_want has one bit per class");

struct Magazine {
  Magazine* next = nullptr;  // on a SharedStack
  std::size_t count = 0;     // slots in use; while loaded in a cache, the cache's `top` rules
  void* slots[kMagazineSlots];
};

struct LooseNode {
  LooseNode* next;
};
static_assert(sizeof(LooseNode) <= kClassSizes[0]);

struct SlabHeader {
  SlabHeader* next;  // g_slabs
};
static_assert(sizeof(SlabHeader) <= kSlabHeaderBytes);

// A stack of elements with a `next` field: push from any thread, remove under pop_mu_.
template <class T>
class alignas(kCacheLine) SharedStack {
 public:
  constexpr SharedStack() = default;

  void push(T* x) noexcept {
    // (TP1) relaxed: a first guess of the top; the CAS below checks it.
    T* top = top_.load(std::memory_order_relaxed);
    do {
      x->next = top;
      // (TP2) release: publishes x (its next, its contents, the nodes it names); pairs with (TP3).
    } while (!top_.compare_exchange_weak(top, x, std::memory_order_release, std::memory_order_relaxed));
  }

  T* pop() noexcept {
    // (TP4) relaxed: a hint that spares an empty stack the lock; a push it misses is one in flight.
    if (top_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    std::lock_guard lock(pop_mu_);
    // (TP3) acquire: sees x->next and x's contents as its pusher's (TP2) published them.
    T* x = top_.load(std::memory_order_acquire);
    // (TP3) acquire on both outcomes: a failed CAS reloads x, which is then read the same way.
    while (x != nullptr &&
           !top_.compare_exchange_weak(x, x->next, std::memory_order_acquire, std::memory_order_acquire)) {
    }
    return x;
  }

  T* take_all() noexcept {
    std::lock_guard lock(pop_mu_);
    // (TP3) acquire: the whole chain, as its pushers' (TP2) published it.
    return top_.exchange(nullptr, std::memory_order_acquire);
  }

 private:
  std::atomic<T*> top_{nullptr};
  std::mutex pop_mu_;  // held by every removal: see "ABA" above
};

struct Depot {
  SharedStack<Magazine> full;  // magazines holding at least one node (full but for exits')
  SharedStack<Magazine> empty;
  SharedStack<LooseNode> loose;
  alignas(kCacheLine) std::mutex carve_mu;
  char* cur = nullptr;  // carve_mu: the current slab's bump pointer
  char* end = nullptr;  // carve_mu
  alignas(kCacheLine) std::atomic<char*> ready[kReadySlabs] = {};  // null: empty
  std::atomic<bool> preparing{false};
  std::atomic<char*> unpopulated{nullptr};  // a slab carve() took unpopulated, for prepare to populate
  // Nodes the slabs carve() started hold, and magazines made for the class (TP17/TP18): the
  // preparer makes empty magazines ahead from the one and the other (make_magazines_ahead).
  std::atomic<std::uint64_t> carvable_nodes{0};
  std::atomic<std::uint64_t> magazines_made{0};
};
// Each class's stacks, its carving state and its preparer's state sit on lines of their own.
static_assert(alignof(SharedStack<Magazine>) == kCacheLine && sizeof(SharedStack<Magazine>) % kCacheLine == 0);
static_assert(alignof(Depot) == kCacheLine && sizeof(Depot) % kCacheLine == 0);

constinit Depot g_depots[kClassCount];
constinit std::atomic<std::uint32_t> g_want{0};
constinit std::atomic<SlabAllocFn> g_slab_alloc{nullptr};

constinit std::atomic<std::size_t> g_slab_bytes{0};
constinit std::atomic<std::uint64_t> g_slabs_prepared{0};
constinit std::atomic<std::uint64_t> g_slabs_grown_by_alloc{0};
constinit std::atomic<std::uint64_t> g_magazines{0};
constinit std::atomic<std::uint64_t> g_spilled_frees{0};

constinit std::mutex g_registry_mu;
constinit SlabHeader* g_slabs = nullptr;  // g_registry_mu

// ---- slabs ------------------------------------------------------------------------------------

// A slab is its own anonymous mapping, not operator new's: glibc serves a 256 KiB aligned
// request from mmap or from an arena depending on its dynamic threshold (which rises when any
// large block is freed: a leader's graveyard reservation doubling under a backlog frees such
// blocks), and the arena's copy costs more resident pages than its 64 (W5 measured 46 or 51-56
// bytes per pending timer from one run to the next, at a million timers). A mapping's
// pages are exactly the slab's, page-aligned, and the kernel merges neighbouring ones into one
// area. Slabs are never unmapped (nodes live as long as the process).
// LeakSanitizer scans heap blocks but not mappings: a slab is registered as a root region, so
// what a pending task's callable owns stays reachable through it, as through operator new's block.
void* default_slab() noexcept {
  void* p = ::mmap(nullptr, kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  KAIROS_LSAN_ROOT(p, kSlabBytes);
  return p;
}

// Faults the slab's pages in from the kernel's side: the contents of a page already present do
// not change, so this may run while other threads use the slab. False if it cannot (kernels
// before 5.14, a test allocator's slab that is not page-aligned).
bool populate_in_place(void* slab) noexcept {
  auto addr = reinterpret_cast<std::uintptr_t>(slab);
  return addr % kPageBytes == 0 && ::madvise(slab, kSlabBytes, MADV_POPULATE_WRITE) == 0;
}

// Faults every page of a slab nobody uses yet in now, so that no node carved from it faults.
void populate(void* slab) noexcept {
  if (populate_in_place(slab)) return;
  auto* bytes = static_cast<volatile char*>(slab);  // touch one byte per page
  for (std::size_t off = 0; off < kSlabBytes; off += kPageBytes) bytes[off] = 0;
  bytes[kSlabBytes - 1] = 0;
}

// A registered slab (its nodes poisoned), populated if asked, or nullptr when the allocator
// refuses.
char* new_slab(bool populated) noexcept {
  // (TP14) acquire: pairs with (TP13); the function pointer is all it carries.
  SlabAllocFn fn = g_slab_alloc.load(std::memory_order_acquire);
  void* raw = fn ? fn(kSlabBytes) : default_slab();
  if (raw == nullptr) return nullptr;
  if (populated) populate(raw);
  auto* header = static_cast<SlabHeader*>(raw);
  {
    std::lock_guard lock(g_registry_mu);
    header->next = g_slabs;
    g_slabs = header;
  }
  g_slab_bytes.fetch_add(kSlabBytes, std::memory_order_relaxed);  // statistic
  char* slab = static_cast<char*>(raw);
  KAIROS_POISON(slab + kSlabHeaderBytes, kSlabBytes - kSlabHeaderBytes);
  return slab;
}

// Fills the empty magazine m with up to kMagazineSlots fresh nodes of class cls, lowest address
// on top (handed out first); throws std::bad_alloc when a slab is needed and none can be had.
void carve(std::uint8_t cls, Magazine& m) {
  Depot& d = g_depots[cls];
  const std::size_t size = kClassSizes[cls];
  std::lock_guard lock(d.carve_mu);
  if (static_cast<std::size_t>(d.end - d.cur) < size) {
    // (TP6) seq_cst: takes a slab (acquire side of TP5: its pages and poison are visible);
    // first half of the Dekker pair with the preparer's (TP9)/(TP7).
    char* slab = nullptr;
    for (std::atomic<char*>& r : d.ready)
      if ((slab = r.exchange(nullptr, std::memory_order_seq_cst)) != nullptr) break;
    // (TP8) seq_cst: asks task_pool_prepare() for the next one; second half of the pair.
    g_want.fetch_or(1u << cls, std::memory_order_seq_cst);
    if (slab == nullptr) {
      // None ready: grow here. The first slab of a class is populated at once (a one-time cost);
      // later ones are not: populating takes ~64 page faults' time in one stall (300 us on a
      // VM), so the pages fault one at a time instead, unless task_pool_prepare() populates them
      // first (TP8 asks it to).
      const bool first = d.cur == nullptr;
      slab = new_slab(first);
      if (slab == nullptr) throw std::bad_alloc();
      g_slabs_grown_by_alloc.fetch_add(1, std::memory_order_relaxed);  // statistic
      // (TP15) relaxed: only the address travels (slabs are never freed, and populating changes no
      // byte of the slab); pairs with (TP16).
      if (!first) d.unpopulated.store(slab, std::memory_order_relaxed);
    }
    d.cur = slab + kSlabHeaderBytes;
    d.end = slab + kSlabBytes;
    // (TP17) relaxed, carve_mu's holder the one writer: a count the preparer reads as a hint (TP18).
    d.carvable_nodes.store(d.carvable_nodes.load(std::memory_order_relaxed) + (kSlabBytes - kSlabHeaderBytes) / size,
                           std::memory_order_relaxed);
  }
  const std::size_t n = std::min(kMagazineSlots, static_cast<std::size_t>(d.end - d.cur) / size);
  // From a local: a store to m.slots may alias d.cur for the compiler, which then reloads it per
  // node (8 instructions a node, not 3: W1 carves every node it submits).
  char* const carved = d.cur;
  for (std::size_t i = 0; i < n; ++i) m.slots[n - 1 - i] = carved + i * size;
  d.cur = carved + n * size;
  m.count = n;
}

// ---- magazines --------------------------------------------------------------------------------

// A new empty magazine, value-initialised (its pages touched), counted; nullptr without memory.
Magazine* new_magazine(Depot& d) noexcept {
  auto* m = new (std::nothrow) Magazine{};
  if (m != nullptr) {
    d.magazines_made.fetch_add(1, std::memory_order_relaxed);  // (TP18) a hint for the preparer
    g_magazines.fetch_add(1, std::memory_order_relaxed);       // statistic
  }
  return m;
}

Magazine* empty_magazine(Depot& d) noexcept {
  if (Magazine* m = d.empty.pop()) return m;
  return new_magazine(d);
}

// Empty magazines made ahead, by the preparer (task_pool_prepare, off the hot paths): enough for
// every node the class's slabs hold (at most kMagazinesAhead), so that a burst of frees (W7's
// leader freeing 100,000 nodes in 6 ms, on a fresh process) takes made magazines from the empty
// stack instead of operator new's and its first-touch page faults for each (a 528-byte
// magazine per 64 nodes; ~1,600 of them for W7). Each is value-initialised: its pages are
// touched here. At most kMagazinesPerPrepare a call, so that a call stays as short as a slab's
// populating (the thread that carves waits for the next slab meanwhile); one cut short asks for
// the next call (TP19: the class's bit again). Counts are hints (TP18): a few more magazines than needed,
// when a freeing thread makes one meanwhile, is the whole error.
void make_magazines_ahead(Depot& d, std::uint32_t bit) noexcept {
  // (TP18) relaxed loads of hints: pairs with (TP17) and the freeing threads' counts.
  const std::uint64_t want =
      std::min<std::uint64_t>(d.carvable_nodes.load(std::memory_order_relaxed) / kMagazineSlots + 2, kMagazinesAhead);
  for (std::size_t made = 0; d.magazines_made.load(std::memory_order_relaxed) < want; ++made) {
    if (made == kMagazinesPerPrepare) {
      g_want.fetch_or(bit, std::memory_order_relaxed);  // (TP19) the next call goes on
      return;
    }
    Magazine* m = new_magazine(d);
    if (m == nullptr) return;  // made on demand later, as before
    d.empty.push(m);           // (TP2)
  }
}

// Hands a magazine to the depot: onto the full stack if it holds a node, else the empty one.
void give_back(Depot& d, Magazine* m) noexcept {
  if (m->count != 0) d.full.push(m);
  else d.empty.push(m);
}

// ---- the per-thread cache ---------------------------------------------------------------------

struct ClassCache {
  void** top = nullptr;     // loaded->slots + nodes held; pop *--top, push *top++
  void** bottom = nullptr;  // loaded->slots (top == bottom: empty, or no magazine)
  void** limit = nullptr;   // loaded->slots + kMagazineSlots (top == limit: full, or no magazine)
  Magazine* loaded = nullptr;
  Magazine* previous = nullptr;  // empty or full, never partly filled (or none)

  void load(Magazine* m) noexcept {
    loaded = m;
    bottom = m->slots;
    top = m->slots + m->count;
    limit = m->slots + kMagazineSlots;
  }
  void store_count() noexcept { loaded->count = static_cast<std::size_t>(top - bottom); }
};

// Trivial, constant-initialised: the fast paths reach it without a TLS guard. Its exit hook is a
// separate thread_local, armed by the slow paths (the fast paths need a magazine, which only a
// slow path loads).
struct ThreadCache {
  ClassCache cls[kClassCount];
  bool hooked = false;  // t_exit_hook armed
  bool exited = false;  // t_exit_hook ran: slow paths flush after themselves from now on
};
constinit thread_local ThreadCache t_cache{};

void flush(ThreadCache& t) noexcept {
  for (std::size_t c = 0; c < kClassCount; ++c) {
    ClassCache& cc = t.cls[c];
    if (cc.loaded != nullptr) {
      cc.store_count();
      give_back(g_depots[c], cc.loaded);
    }
    if (cc.previous != nullptr) give_back(g_depots[c], cc.previous);
    cc = ClassCache{};
  }
}

struct ExitHook {
  bool armed = false;
  ~ExitHook() {
    t_cache.exited = true;
    flush(t_cache);
  }
};
thread_local ExitHook t_exit_hook;

void arm_exit_hook(ThreadCache& t) noexcept {
  if (t.hooked || t.exited) return;
  t_exit_hook.armed = true;  // constructs it, registering its destructor for this thread's exit
  t.hooked = true;
}

// Prefetches a freshly loaded magazine's slots (another thread wrote them).
void prefetch_slots(const ClassCache& c) noexcept {
  for (void** p = c.bottom; p < c.top; p += 64 / sizeof(void*)) __builtin_prefetch(p, 0, 3);
}

// How many allocations ahead a node is asked for in the exclusive state. A node freed by the
// leader is still in the leader's cache: the producer's first write to it waits for the line to
// come over (a one-way handoff, 40 to 250 ns on the hosts measured), and the submission's first
// locked RMW (the sequence's xadd, IN1) waits for that write. Asked for one allocation ahead, the
// handoff hides behind one submission (~50 ns); four ahead, behind four, also on a slow-handoff
// host. Both of the node's lines (40 or 48 bytes, 8-byte aligned: it may straddle two).
constexpr std::ptrdiff_t kPrefetchAhead = 4;
inline void prefetch_node_for_write(const void* p, std::uint8_t cls) noexcept {
  prefetch_for_write(p);
  prefetch_for_write(static_cast<const char*>(p) + kClassSizes[cls] - 1);
}
// A freshly loaded magazine: the nodes the next kPrefetchAhead allocations take.
void prefetch_first_nodes(const ClassCache& c, std::uint8_t cls) noexcept {
  for (std::ptrdiff_t i = 1; i <= kPrefetchAhead && c.top - i >= c.bottom; ++i) prefetch_node_for_write(c.top[-i], cls);
}

// Takes the next node off the loaded magazine (not empty), prefetching the one kPrefetchAhead
// allocations later.
inline void* pop_node(ClassCache& c, std::uint8_t cls) noexcept {
  void* p = *--c.top;
  if (c.top - c.bottom >= kPrefetchAhead) prefetch_node_for_write(c.top[-kPrefetchAhead], cls);
  KAIROS_UNPOISON(p, kClassSizes[cls]);
  return p;
}

[[gnu::noinline]] void* alloc_slow(std::uint8_t cls) {
  ThreadCache& t = t_cache;
  ClassCache& c = t.cls[cls];
  Depot& d = g_depots[cls];
  arm_exit_hook(t);
  if (c.loaded != nullptr) {  // loaded is empty
    c.loaded->count = 0;
    if (c.previous != nullptr && c.previous->count != 0) {  // previous is full: swap
      Magazine* full = c.previous;
      c.previous = c.loaded;
      c.load(full);
      prefetch_first_nodes(c, cls);
    } else if (Magazine* m = d.full.pop()) {
      if (c.previous != nullptr) d.empty.push(c.previous);
      c.previous = c.loaded;
      c.load(m);
      prefetch_slots(c);
      prefetch_first_nodes(c, cls);
    }
  } else if (Magazine* m = d.full.pop()) {
    c.load(m);
    prefetch_slots(c);
    prefetch_first_nodes(c, cls);
  }
  if (c.top == c.bottom) {
    if (LooseNode* n = d.loose.pop()) {
      KAIROS_UNPOISON(n, kClassSizes[cls]);
      if (t.exited) flush(t);
      return n;
    }
    try {
      if (c.loaded == nullptr) {
        Magazine* m = empty_magazine(d);
        if (m == nullptr) throw std::bad_alloc();
        c.load(m);
      }
      carve(cls, *c.loaded);
      c.load(c.loaded);
    } catch (...) {
      if (t.exited) flush(t);
      throw;
    }
  }
  void* p = pop_node(c, cls);
  if (t.exited) flush(t);
  return p;
}

// A free that finds no magazine (out of memory): the node is kept singly.
void spill(Depot& d, void* p) noexcept {
  auto* n = static_cast<LooseNode*>(p);
  KAIROS_UNPOISON(n, sizeof(LooseNode));
  d.loose.push(n);
  g_spilled_frees.fetch_add(1, std::memory_order_relaxed);  // statistic
}

// p is poisoned already.
[[gnu::noinline]] void free_slow(void* p, std::uint8_t cls) noexcept {
  ThreadCache& t = t_cache;
  ClassCache& c = t.cls[cls];
  Depot& d = g_depots[cls];
  arm_exit_hook(t);
  if (c.loaded == nullptr) {
    Magazine* m = empty_magazine(d);
    if (m == nullptr) return spill(d, p);
    c.load(m);
  } else {  // loaded is full
    if (c.previous != nullptr && c.previous->count == 0) {  // previous is empty: swap
      Magazine* empty = c.previous;
      c.loaded->count = kMagazineSlots;
      c.previous = c.loaded;
      c.load(empty);
    } else {
      Magazine* empty = empty_magazine(d);
      if (empty == nullptr) return spill(d, p);
      c.loaded->count = kMagazineSlots;
      if (c.previous != nullptr) d.full.push(c.previous);  // previous is full: one push, 64 nodes
      c.previous = c.loaded;
      c.load(empty);
    }
  }
  *c.top++ = p;
  if (t.exited) flush(t);
}

// Free nodes set aside by release_thread_cache_for_testing().
std::mutex g_parked_mu;
Magazine* g_parked_magazines[kClassCount] = {};  // g_parked_mu
LooseNode* g_parked_loose[kClassCount] = {};     // g_parked_mu

}  // namespace

void* task_alloc(std::uint8_t cls) {
  ClassCache& c = t_cache.cls[cls];
  if (c.top != c.bottom) [[likely]]
    return pop_node(c, cls);
  return alloc_slow(cls);
}

template <std::uint8_t Cls>
void* TaskPoolClass<Cls>::alloc() {
  ClassCache& c = t_cache.cls[Cls];
  if (c.top != c.bottom) [[likely]]
    return pop_node(c, Cls);
  return alloc_slow(Cls);
}
static_assert(kClassCount == 12, "one TaskPoolClass instance per class, below");
template struct TaskPoolClass<0>;
template struct TaskPoolClass<1>;
template struct TaskPoolClass<2>;
template struct TaskPoolClass<3>;
template struct TaskPoolClass<4>;
template struct TaskPoolClass<5>;
template struct TaskPoolClass<6>;
template struct TaskPoolClass<7>;
template struct TaskPoolClass<8>;
template struct TaskPoolClass<9>;
template struct TaskPoolClass<10>;
template struct TaskPoolClass<11>;

void task_free(void* p, std::uint8_t cls) noexcept {
  ClassCache& c = t_cache.cls[cls];
  // The whole node: a use after free of a task trips AddressSanitizer.
  KAIROS_POISON(p, kClassSizes[cls]);
  if (c.top != c.limit) [[likely]] {
    *c.top++ = p;
    return;
  }
  free_slow(p, cls);
}

void task_free_batch(void* const* nodes, std::size_t n, std::uint8_t cls) noexcept {
  ClassCache& c = t_cache.cls[cls];
  while (n != 0) {
    auto room = static_cast<std::size_t>(c.limit - c.top);
    if (room == 0) {
      task_free(*nodes++, cls);  // takes the slow path: a fresh magazine, or exited
      --n;
      continue;
    }
    const std::size_t k = std::min(room, n);
    for (std::size_t i = 0; i < k; ++i) KAIROS_POISON(nodes[i], kClassSizes[cls]);
    std::memcpy(c.top, nodes, k * sizeof(void*));
    c.top += k;
    nodes += k;
    n -= k;
  }
}

// (TP20) relaxed: a hint, as TP10 (the leader reads it to choose its high-water interval, HW1).
bool task_pool_grows() noexcept { return g_want.load(std::memory_order_relaxed) != 0; }

void task_pool_prepare() noexcept {
  // (TP10) relaxed: a hint; see the edges at the top.
  std::uint32_t want = g_want.load(std::memory_order_relaxed);
  if (want == 0) [[likely]]
    return;
  for (std::uint32_t c = 0; c < kClassCount; ++c) {
    const std::uint32_t bit = 1u << c;
    if ((want & bit) == 0) continue;
    Depot& d = g_depots[c];
    // (TP11) acquire: pairs with the previous preparer's (TP12), after its (TP5).
    if (d.preparing.exchange(true, std::memory_order_acquire)) continue;  // another thread is at it
    // (TP9) seq_cst: clears the request before looking at the slot; pairs with (TP8) via (TP6)/(TP7).
    g_want.fetch_and(~bit, std::memory_order_seq_cst);
    // (TP16) relaxed: pairs with (TP15); the slab an allocating thread carves from, populated ahead
    // of its bump pointer from the kernel's side (never by writing: the slab is in use).
    if (char* in_use = d.unpopulated.exchange(nullptr, std::memory_order_relaxed)) populate_in_place(in_use);
    for (std::atomic<char*>& r : d.ready) {
      // (TP7) seq_cst: the other half of the Dekker pair with (TP6)/(TP8).
      if (r.load(std::memory_order_seq_cst) != nullptr) continue;
      char* slab = new_slab(true);
      if (slab == nullptr) break;
      // (TP5) release: publishes the populated, poisoned slab; pairs with (TP6).
      r.store(slab, std::memory_order_release);
      g_slabs_prepared.fetch_add(1, std::memory_order_relaxed);  // statistic
    }
    make_magazines_ahead(d, bit);  // the slab carve() just started asks for its magazines too
    // (TP12) release: pairs with the next preparer's (TP11).
    d.preparing.store(false, std::memory_order_release);
  }
}

void set_slab_allocator_for_testing(SlabAllocFn fn) noexcept {
  // (TP13) release: pairs with (TP14).
  g_slab_alloc.store(fn, std::memory_order_release);
  // Waits out every slab taken with the old allocator: a preparer or a carve that loaded it
  // before (TP13) is still inside its lock; once it leaves, the next one's (TP11) / lock acquire pairs
  // with this (TP12) / unlock, which follow (TP13), so its (TP14) reads fn. Without this a slab the old
  // allocator gave (~300 us to populate on a VM) could turn up as `ready` after the caller's
  // release_thread_cache_for_testing(), and an allocation the test expects to fail succeeds.
  for (Depot& d : g_depots) {
    // (TP11) acquire: the try-lock of task_pool_prepare(), taken by waiting instead of skipping.
    while (d.preparing.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
    { std::lock_guard carve_lock(d.carve_mu); }
    // (TP12) release: pairs with the next preparer's (TP11); carries (TP13).
    d.preparing.store(false, std::memory_order_release);
  }
  if (fn != nullptr) return;
  std::lock_guard lock(g_parked_mu);
  for (std::size_t c = 0; c < kClassCount; ++c) {
    while (Magazine* m = g_parked_magazines[c]) {
      g_parked_magazines[c] = m->next;
      g_depots[c].full.push(m);
    }
    while (LooseNode* n = g_parked_loose[c]) {
      g_parked_loose[c] = n->next;
      g_depots[c].loose.push(n);
    }
  }
}

void release_thread_cache_for_testing() noexcept {
  ThreadCache& t = t_cache;
  flush(t);
  std::lock_guard lock(g_parked_mu);
  for (std::size_t c = 0; c < kClassCount; ++c) {
    Depot& d = g_depots[c];
    for (Magazine* m = d.full.take_all(); m != nullptr;) {
      Magazine* next = m->next;
      m->next = g_parked_magazines[c];
      g_parked_magazines[c] = m;
      m = next;
    }
    for (LooseNode* n = d.loose.take_all(); n != nullptr;) {
      LooseNode* next = n->next;
      n->next = g_parked_loose[c];
      g_parked_loose[c] = n;
      n = next;
    }
    bool in_use = false;
    {
      std::lock_guard carve_lock(d.carve_mu);  // drop the rest of the current slab (tests only)
      in_use = d.cur != nullptr;
      d.cur = d.end = nullptr;
    }
    // (TP6) seq_cst, as in carve(): the ready slabs are dropped too (they stay registered) ...
    for (std::atomic<char*>& r : d.ready)
      if (r.exchange(nullptr, std::memory_order_seq_cst) != nullptr) in_use = true;
    // (TP8) seq_cst, as in carve(): ... and, for a class in use, a new one asked for.
    if (in_use) g_want.fetch_or(1u << c, std::memory_order_seq_cst);
  }
}

std::size_t slab_bytes_reserved() noexcept { return g_slab_bytes.load(std::memory_order_relaxed); }

TaskPoolStats task_pool_stats() noexcept {
  TaskPoolStats s;
  s.slab_bytes_reserved = g_slab_bytes.load(std::memory_order_relaxed);
  s.slabs_prepared = g_slabs_prepared.load(std::memory_order_relaxed);
  s.slabs_grown_by_alloc = g_slabs_grown_by_alloc.load(std::memory_order_relaxed);
  s.magazines = g_magazines.load(std::memory_order_relaxed);
  s.spilled_frees = g_spilled_frees.load(std::memory_order_relaxed);
  return s;
}

}  // namespace kairos::detail

// task_pool.hpp: process-wide pools of task memory, one per size class.
// Threads: any thread allocates and frees. Each thread caches free nodes per class in two
//          magazines (arrays of up to kMagazineSlots node pointers): allocation pops a pointer,
//          free pushes one, no atomic on the common path and no walk of a linked chain anywhere.
//          A full magazine goes to the class's global stack of full magazines in one push; an
//          allocating thread whose magazines are empty takes one full magazine from it (never
//          the whole stack), so free nodes are found by whoever needs them.
// Growth:  when no free node exists, nodes are carved by bump pointer, a magazine at a time,
//          from the class's current slab. Slabs are populated (every page touched) before their
//          first node is handed out, by task_pool_prepare(), which the engine's own threads call
//          between tasks and which keeps two populated slabs ready per class in use. So the
//          thread that submits takes no page fault on a node, and the next node it will get is
//          prefetched (for writing) one allocation ahead. A thread that finds no slab ready grows
//          one itself (counted in TaskPoolStats::slabs_grown_by_alloc): populated at once if it
//          is its class's first, else left for the next task_pool_prepare() to populate ahead of
//          the bump pointer (meanwhile its pages fault one at a time rather than in one stall).
//          task_pool_prepare() also makes empty magazines ahead (one per kMagazineSlots nodes
//          the class's slabs hold, at most kMagazinesAhead), so that a thread freeing a burst of
//          nodes takes made ones instead of allocating each (and faulting its pages) there.
// Memory:  a slab is its own anonymous mapping (mmap), never returned to the OS: its resident
//          bytes are its own pages whatever malloc did before (operator new's 256 KiB block came
//          from mmap or from an arena by glibc's moving threshold, and cost W5 up to 9 bytes more
//          per pending timer in runs where a large block had been freed first). A thread that
//          exits returns its magazines, so slab memory is bounded by the peak of live nodes plus
//          O(threads alive x 2 magazines per class), not by the number of threads that ever ran.
//          Magazines are never freed: at most kMagazinesAhead per class made ahead, plus those
//          made on demand (each a 528-byte array of 64 node pointers, so about 8 bytes per node
//          in magazines).
#pragma once
#include <cstddef>
#include <cstdint>

namespace kairos::detail {

// Node sizes served from slabs; larger (or over-aligned) tasks use operator new.
inline constexpr std::size_t kClassSizes[] = {40, 48, 56, 64, 72, 80, 96, 112, 128, 160, 192, 256};
inline constexpr std::size_t kClassCount = sizeof(kClassSizes) / sizeof(kClassSizes[0]);
inline constexpr std::uint8_t kHeapClass = 0xFF;
// Node pointers in one magazine: the unit in which free nodes move between threads.
inline constexpr std::size_t kMagazineSlots = 64;
// One growth step of a class (a slab's first 64 bytes are its bookkeeping header).
inline constexpr std::size_t kSlabBytes = 256 * 1024;
// Empty magazines task_pool_prepare() makes ahead per class, at most: one per kMagazineSlots
// nodes its slabs hold, up to this many (~1 MiB of magazines: 131,072 nodes freed in a burst).
inline constexpr std::size_t kMagazinesAhead = 2048;

constexpr std::uint8_t size_class_for(std::size_t bytes, std::size_t align) noexcept {
  if (align > 8) return kHeapClass;
  for (std::size_t i = 0; i < kClassCount; ++i)
    if (bytes <= kClassSizes[i]) return static_cast<std::uint8_t>(i);
  return kHeapClass;
}

// Memory for one node of class cls; throws std::bad_alloc when the pool cannot grow.
void* task_alloc(std::uint8_t cls);
// The same for a class known where the node is built (make_node): one entry per class, with the
// class's offsets and size folded in, about 6 instructions less per submission than
// task_alloc(cls) (docs/design.md's path budget). Defined for every class (Cls < kClassCount) in
// task_pool.cpp. A class template's static member, not a function template: a shared libkairos
// exports it under kairos::detail (cmake/kairos.map).
template <std::uint8_t Cls>
struct TaskPoolClass {
  static_assert(Cls < kClassCount);
  static void* alloc();
};
void task_free(void* p, std::uint8_t cls) noexcept;
// Frees n nodes of class cls at once (the same as n calls of task_free, in fewer steps).
void task_free_batch(void* const* nodes, std::size_t n, std::uint8_t cls) noexcept;

// Keeps two populated slabs ready for every class that has taken one since the last call (and
// populates a slab an allocating thread had to grow by itself), so that allocating threads do
// not fault. For the engine's own threads, between tasks, and whenever a leader wakes: when
// nothing is to be done it is one relaxed load and returns; when a class took a slab it
// allocates and populates the next (256 KiB: 64 pages, 15-30 us on bare metal, ~300 us on a VM
// whose host backs memory lazily). Any thread may call it, concurrently with anything; it never
// throws (a slab that cannot be had is left to the allocating thread, which then grows itself
// or gets std::bad_alloc).
void task_pool_prepare() noexcept;
// True if a class asked for a slab since the last task_pool_prepare() (its nodes are being
// carved: the pool grows). A hint, read before task_pool_prepare() clears the requests.
bool task_pool_grows() noexcept;

// Statistics: bytes of slab memory taken so far (all classes, including ready slabs).
std::size_t slab_bytes_reserved() noexcept;

struct TaskPoolStats {
  std::size_t slab_bytes_reserved = 0;     // as slab_bytes_reserved()
  std::uint64_t slabs_prepared = 0;        // populated by task_pool_prepare()
  std::uint64_t slabs_grown_by_alloc = 0;  // populated by an allocating thread that found none ready
  std::uint64_t magazines = 0;             // magazines in existence (operator new, never freed)
  std::uint64_t spilled_frees = 0;         // frees that found no magazine (out of memory): kept singly
};
TaskPoolStats task_pool_stats() noexcept;

}  // namespace kairos::detail

// task_pool.hpp: process-wide pools of task memory, one per size class.
// Threads: any thread allocates and frees. Each thread keeps a private free list per class
//          (no atomic on the common path); a thread that frees more than it allocates hands
//          chains of kChainLength nodes to a global lock-free stack, which allocating threads
//          take whole (exchange with nullptr: no ABA, since nobody pops single entries).
// Cost:    warm alloc/free is a few loads and stores; growth carves a 256 KiB slab under a mutex.
// Memory:  slabs are never returned to the OS; freed nodes are reused by any scheduler.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kairos::detail {

// Node sizes served from slabs; larger (or over-aligned) tasks use operator new.
inline constexpr std::size_t kClassSizes[] = {48, 56, 64, 72, 80, 96, 112, 128, 160, 192, 256};
inline constexpr std::size_t kClassCount = sizeof(kClassSizes) / sizeof(kClassSizes[0]);
inline constexpr std::uint8_t kHeapClass = 0xFF;

constexpr std::uint8_t size_class_for(std::size_t bytes, std::size_t align) noexcept {
  if (align > 8) return kHeapClass;
  for (std::size_t i = 0; i < kClassCount; ++i)
    if (bytes <= kClassSizes[i]) return static_cast<std::uint8_t>(i);
  return kHeapClass;
}

// Memory for one node of class cls; throws std::bad_alloc when the pool cannot grow.
void* task_alloc(std::uint8_t cls);
void task_free(void* p, std::uint8_t cls) noexcept;

// Tests: replace the slab allocator (nullptr restores operator new); an allocator returning
// nullptr makes growth fail with std::bad_alloc.
using SlabAllocFn = void* (*)(std::size_t bytes);
void set_slab_allocator_for_testing(SlabAllocFn fn) noexcept;
// Tests: hand the calling thread's cached nodes back to the global pool (and drop the spare
// chains it took), so that its next allocation must take from the global stack or grow.
void release_thread_cache_for_testing() noexcept;
// Statistics: bytes of slab memory carved so far (all classes).
std::size_t slab_bytes_reserved() noexcept;

}  // namespace kairos::detail

// task_pool_testing.hpp: the task pool's test seams (core/src/task_pool.cpp). Not installed, and
// not exported by a shared libkairos (cmake/kairos.map): the tests and the micro benchmarks that
// use them see core/src and link the static library (tests/CMakeLists.txt).
#pragma once
#include <cstddef>

namespace kairos::detail {

// Replaces the slab allocator (nullptr restores the default); an allocator returning nullptr
// makes growth fail with std::bad_alloc. Restoring the default returns the magazines that
// release_thread_cache_for_testing() set aside.
using SlabAllocFn = void* (*)(std::size_t bytes);
void set_slab_allocator_for_testing(SlabAllocFn fn) noexcept;
// Hands the calling thread's cached nodes back to the global pool, then sets aside every free
// node the global pool holds and drops the rest of the current and the ready slab of every class,
// so that the calling thread's next allocation of any class must grow.
void release_thread_cache_for_testing() noexcept;

}  // namespace kairos::detail

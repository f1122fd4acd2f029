// task_nodes.hpp: bare task nodes for the timer queue's tests (heap, sorted run, both), and the
// (deadline, seq) key their ordered references hold.
// Nodes live where the engine's do: in the task pool's slabs (class 0), with ops that name that
// class, so the heap places its slot window on them as it does on a scheduler's (timer_heap.hpp).
// Nodes of operator new (make_unique) lie wherever malloc's arena for them is: a block another
// thread freed into this one's cache can be terabytes from the rest.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>
#include <kairos/detail/task_pool.hpp>

namespace kairos::detail::testing {

using Key = std::pair<std::int64_t, std::uint64_t>;

// The ops of a test node: nothing to run or destroy through them; only its pool class is read
// (by the heap).
inline constexpr TaskOps kPooledTestOps{nullptr, nullptr, 0};
static_assert(sizeof(TaskBase) <= kClassSizes[0]);

struct PooledNodeDelete {
  void operator()(TaskBase* t) const noexcept {
    t->~TaskBase();
    task_free(t, kPooledTestOps.size_class);
  }
};
using NodePtr = std::unique_ptr<TaskBase, PooledNodeDelete>;
using Nodes = std::vector<NodePtr>;

inline NodePtr make_node_in_pool() {
  auto* t = ::new (task_alloc(kPooledTestOps.size_class)) TaskBase();
  t->ops = &kPooledTestOps;
  return NodePtr(t);
}

inline Nodes make_nodes(std::size_t n) {
  Nodes v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(make_node_in_pool());
  return v;
}

}  // namespace kairos::detail::testing

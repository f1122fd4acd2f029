// freed_nodes.hpp: the nodes one burial frees, handed back to the task pool a class at a time.
//
// A burial (Shard::bury: a batch's graveyard, after the runs) frees up to a batch of nodes, all
// of one class in W6 and W7. One task_free() call each is a call, the pool's thread-cache lookup
// and its limit test per node. Here each node's remains are destroyed at once (destruct_node,
// so a capture's destructor still runs where the node is let go) and its memory is kept, then
// freed with the others of its class in one task_free_batch() when the class changes, the buffer
// is full, or the burial ends. A node of the heap class (over-aligned: operator new) is destroyed
// and freed at once, as before.
//
// Threads: one object belongs to one burial, on one thread; the nodes it holds are dead (no
// reference left, destroyed), so nobody else can reach them. Nothing is held across user code:
// a destructor a node's destruct runs may itself free nodes (its own task_free calls), which do
// not touch this buffer.
#pragma once
#include <cstddef>
#include <cstdint>

#include <kairos/detail/task.hpp>
#include <kairos/detail/task_pool.hpp>

namespace kairos::detail {

class FreedNodes {
 public:
  FreedNodes() = default;
  FreedNodes(const FreedNodes&) = delete;
  FreedNodes& operator=(const FreedNodes&) = delete;
  ~FreedNodes() { flush(); }

  // Destroys what is left of t (its last reference is gone) and keeps its memory to free.
  void destroy(TaskBase* t) noexcept {
    const std::uint8_t cls = t->ops->size_class;
    if (cls == kHeapClass) return destroy_node(t);
    destruct_node(t);
    if (cls != cls_ || n_ == kCapacity) {
      flush();
      cls_ = cls;
    }
    nodes_[n_++] = t;
  }

  // Frees the memory kept so far.
  void flush() noexcept {
    if (n_ != 0) task_free_batch(nodes_, n_, cls_);
    n_ = 0;
  }

 private:
  static constexpr std::size_t kCapacity = 64;  // a batch's worth (Shard::kMaxBatch)
  void* nodes_[kCapacity];
  std::size_t n_ = 0;
  std::uint8_t cls_ = kHeapClass;  // the class of nodes_[0, n_)
};

}  // namespace kairos::detail

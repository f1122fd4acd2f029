// timer_heap.hpp: indexed 4-ary min-heap of one shard's pending tasks, in 4-byte slots.
// Threads: guarded by the shard's lock; no member is thread-safe.
// Order:   earliest deadline first; equal deadlines in submission order (seq).
// Cost:    push, pop and erase are O(log n); every task stores its slot (queue_slot), so erase
//          never scans and never waits for the task to reach the top. 4-ary: half the depth of a
//          binary heap, and the four children of a slot share one cache line.
// Slots:   a slot holds a task in 4 bytes, not 8: a pending timer costs its node and one slot,
//          and at a million timers 4 bytes is a tenth of the total (W5). Nodes are 8-byte aligned
//          and the task pool's slabs lie close together, so a slot is the node's distance from
//          base_ in units of 8 bytes (bit 31 clear): a window of 16 GiB, placed around the first
//          pooled node the heap sees (a slab's). A node outside the window (a callable too large
//          for the pool: operator new's memory, which may lie terabytes from the slabs; a huge
//          process) is held in the side table wide_, and its slot is kWide | its index there.
//          Such a node never places the window: one that came first would send every pooled
//          node after it to the side table, for the heap's life. Every operation works on both
//          kinds; a window of a few KiB (tests) sends most nodes to the side table.
// Memory:  try_reserve() is the only growth: it reserves n slots and n side-table entries (the
//          worst case; address space, not resident memory, until used: page_array.hpp), so push
//          never allocates.
#pragma once
#include <cstdint>
#include <new>

#include <kairos/detail/task.hpp>

#include "page_array.hpp"

namespace kairos::detail {

class TimerHeap {
  static_assert(alignof(TaskBase) >= 8, "a slot counts nodes' addresses in units of 8 bytes");

 public:
  static constexpr std::uint64_t kWindowBytes = std::uint64_t{1} << 34;  // 2^31 slots of 8 bytes

  // window_bytes: the span of addresses held in a slot itself (tests make it small).
  explicit TimerHeap(std::uint64_t window_bytes = kWindowBytes) noexcept
      : window_(window_bytes < kWindowBytes ? window_bytes : kWindowBytes) {}

  bool empty() const noexcept { return v_.empty(); }
  std::size_t size() const noexcept { return v_.size(); }
  TaskBase* top() const noexcept { return at(0); }
  TaskBase* at(std::size_t i) const noexcept { return decode(v_[i]); }
  // Tasks in the side table (tests: the window was left).
  std::size_t wide() const noexcept { return wide_used_; }

  // true iff t became the earliest. Within the capacity try_reserve() made it never allocates;
  // beyond it, it grows or throws std::bad_alloc with nothing changed.
  bool push(TaskBase* t) {
    if (v_.size() == v_.capacity()) v_.reserve(2 * v_.size() + 1);
    v_.push_within_capacity(encode(t));  // encode grows the side table first if it must
    std::size_t i = v_.size() - 1;
    t->queue_slot = static_cast<std::uint32_t>(i);
    return (wide_used_ == 0 ? sift_up<false>(i) : sift_up<true>(i)) == 0;
  }

  TaskBase* pop() noexcept {
    TaskBase* t = top();
    erase_at(0);
    return t;
  }

  // false if t is not in this heap.
  bool erase(TaskBase* t) noexcept {
    std::uint32_t i = t->queue_slot;
    if (i == kNotQueued || i >= v_.size() || at(i) != t) return false;
    erase_at(i);
    return true;
  }

  void clear() noexcept {
    for (std::size_t i = 0; i < v_.size(); ++i) at(i)->queue_slot = kNotQueued;
    v_.clear();
    wide_.clear();
    wide_free_ = kNoFree;
    wide_used_ = 0;
  }

  // Capacity for n tasks, slots and side table alike. False (nothing changed that matters) if
  // the memory is not there.
  [[nodiscard]] bool try_reserve(std::size_t n) noexcept { return v_.try_reserve(n) && wide_.try_reserve(n); }
  void reserve(std::size_t n) {  // as try_reserve, or std::bad_alloc
    if (!try_reserve(n)) throw std::bad_alloc();
  }
  std::size_t capacity() const noexcept { return v_.capacity() < wide_.capacity() ? v_.capacity() : wide_.capacity(); }

  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < v_.size(); ++i) fn(at(i));
  }

  // Removes every task for which pred(t) holds and hands it to out(t), then restores heap
  // order: O(n), in place (no allocation).
  template <class Pred, class Out>
  void remove_if(Pred&& pred, Out&& out) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < v_.size(); ++i) {
      const std::uint32_t v = v_[i];
      TaskBase* t = decode(v);
      if (pred(t)) {
        t->queue_slot = kNotQueued;
        forget(v);
        out(t);
      } else {
        v_[kept++] = v;
      }
    }
    while (v_.size() > kept) v_.pop_back();
    for (std::size_t i = 0; i < v_.size(); ++i) at(i)->queue_slot = static_cast<std::uint32_t>(i);
    for (std::size_t i = v_.size() / kArity + 1; i-- > 0;)
      if (i < v_.size()) sift_down<true>(i);
  }

  // Heap order, every queue_slot, and the side table's count; tests call it.
  bool check_invariants() const noexcept {
    std::size_t wide = 0;
    for (std::size_t i = 0; i < v_.size(); ++i) {
      if (at(i)->queue_slot != i) return false;
      if (i > 0 && filed_before(at(i), at((i - 1) / kArity))) return false;
      wide += (v_[i] & kWide) != 0;
    }
    return wide == wide_used_;
  }

 private:
  static constexpr std::size_t kArity = 4;
  static constexpr std::uint32_t kWide = 0x80000000u;
  static constexpr std::uintptr_t kNoFree = ~std::uintptr_t{0};

  // A slot for t: its distance from base_ if within the window, else a side-table entry.
  std::uint32_t encode(TaskBase* t) {
    const auto a = reinterpret_cast<std::uintptr_t>(t);
    if (!based_) [[unlikely]] {  // the window is centred on the first pooled node
      if (t->ops->size_class == kHeapClass) return encode_wide(a);
      base_ = a > window_ / 2 ? (a - window_ / 2) & ~std::uintptr_t{7} : 0;
      based_ = true;
    }
    if (a - base_ < window_) return static_cast<std::uint32_t>((a - base_) >> 3);  // below base_: wraps, too large
    return encode_wide(a);
  }
  std::uint32_t encode_wide(std::uintptr_t a) {
    std::size_t k;
    if (wide_free_ != kNoFree) {  // a free entry holds its successor's index + 1, shifted, low bit set
      k = wide_free_;
      wide_free_ = (wide_[k] >> 1) - 1;  // kNoFree after the last
      wide_[k] = a;
    } else {
      k = wide_.size();
      if (k == wide_.capacity()) wide_.reserve(2 * k + 1);  // not after try_reserve(): it covers every slot
      wide_.push_within_capacity(a);
    }
    ++wide_used_;
    return kWide | static_cast<std::uint32_t>(k);
  }

  // The sifts are compiled twice: while the side table is empty (the common case) a slot is
  // always base_ + 8 * v, with no test of kWide.
  template <bool MayBeWide>
  TaskBase* node(std::uint32_t v) const noexcept {
    if constexpr (MayBeWide) {
      if (v & kWide) [[unlikely]]
        return reinterpret_cast<TaskBase*>(wide_[v & ~kWide]);
    }
    return reinterpret_cast<TaskBase*>(base_ + (static_cast<std::uintptr_t>(v) << 3));
  }
  TaskBase* decode(std::uint32_t v) const noexcept { return node<true>(v); }

  // The slot v leaves the heap: its side-table entry, if any, is free again.
  void forget(std::uint32_t v) noexcept {
    if (!(v & kWide)) return;
    const std::size_t k = v & ~kWide;
    wide_[k] = ((wide_free_ + 1) << 1) | 1;  // odd: never a node's address
    wide_free_ = k;
    --wide_used_;
  }

  template <bool MayBeWide>
  void place(std::size_t i, std::uint32_t v) noexcept {
    v_[i] = v;
    node<MayBeWide>(v)->queue_slot = static_cast<std::uint32_t>(i);
  }

  template <bool MayBeWide>
  std::size_t sift_up(std::size_t i) noexcept {
    const std::uint32_t v = v_[i];
    const TaskBase* t = node<MayBeWide>(v);
    while (i > 0) {
      std::size_t p = (i - 1) / kArity;
      const std::uint32_t pv = v_[p];
      if (!filed_before(t, node<MayBeWide>(pv))) break;
      place<MayBeWide>(i, pv);
      i = p;
    }
    place<MayBeWide>(i, v);
    return i;
  }

  template <bool MayBeWide>
  void sift_down(std::size_t i) noexcept {
    const std::uint32_t v = v_[i];
    const TaskBase* t = node<MayBeWide>(v);
    const std::size_t n = v_.size();
    for (;;) {
      std::size_t c = i * kArity + 1;
      if (c >= n) break;
      std::size_t best = c;
      const TaskBase* b = node<MayBeWide>(v_[c]);
      std::size_t end = c + kArity < n ? c + kArity : n;
      for (std::size_t k = c + 1; k < end; ++k) {
        const TaskBase* x = node<MayBeWide>(v_[k]);
        if (filed_before(x, b)) {
          best = k;
          b = x;
        }
      }
      if (!filed_before(b, t)) break;
      place<MayBeWide>(i, v_[best]);
      i = best;
    }
    place<MayBeWide>(i, v);
  }

  void erase_at(std::size_t i) noexcept {
    const std::uint32_t gone = v_[i];
    decode(gone)->queue_slot = kNotQueued;
    forget(gone);
    const std::uint32_t last = v_.back();
    v_.pop_back();
    if (i == v_.size()) return;
    if (wide_used_ == 0) {
      place<false>(i, last);
      if (sift_up<false>(i) == i) sift_down<false>(i);
    } else {
      place<true>(i, last);
      if (sift_up<true>(i) == i) sift_down<true>(i);
    }
  }

  PageArray<std::uint32_t> v_;     // the heap's slots; grows in place (page_array.hpp)
  PageArray<std::uintptr_t> wide_;  // side table: a node's address, or a free entry's link
  std::uintptr_t wide_free_ = kNoFree;  // first free side-table entry
  std::size_t wide_used_ = 0;
  std::uintptr_t base_ = 0;  // address of slot value 0 (set by the first encode)
  bool based_ = false;
  std::uint64_t window_;
};

}  // namespace kairos::detail

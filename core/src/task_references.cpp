// task_references.cpp: the spill table of the reference count: the references of a task beyond
// kSpillAt (more than 2^20 holders), which do not fit in the state word (detail/task.hpp).
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <kairos/detail/task.hpp>

namespace kairos::detail {

// ---- the spill table: references beyond kSpillAt (detail/task.hpp) ---------------------------------
// Who owns what: g_spill (the map and every count in it) is guarded by g_spill_mu; a task's
// kSpilled bit and the chunks moved in and out of its field change only under it too (with the
// field's own RMWs), so a task in the map has kSpilled set and one not in it has it clear.
// Edges (each names its partner):
//   (RC3) spill_references: under g_spill_mu, one CAS acq_rel takes kSpillChunk off the field and
//         sets kSpilled, then the map gains the chunk -> pairs with (RC4): a refiller that sees
//         kSpilled (it reads the word under the same mutex) finds the chunk in the map.
//   (RC4) refill_references: under g_spill_mu, one CAS acq_rel gives a chunk back to the field
//         (clearing kSpilled with the map's last one) -> pairs with (RC3), and with the owners'
//         RC1 as any RMW of the word: the release sequence the last owner's RC1 acquires runs
//         through it, so the last owner still sees every other owner's writes.
// The mutex is taken only by a task with more than kSpillAt references; no allocation happens on
// any other path. No memory for the map: the chunk stays in the field (which holds 2^22 - 1),
// and the next crossing of kSpillAt tries again.
namespace {
std::mutex g_spill_mu;
std::unordered_map<const TaskBase*, std::uint64_t> g_spill;  // references held for the task
}  // namespace

void spill_references(TaskBase* t) noexcept {
  std::lock_guard lk(g_spill_mu);
  std::uint64_t* held;
  try {
    held = &g_spill[t];
  } catch (...) {  // std::bad_alloc: stays in the field
    return;
  }
  std::uint32_t s = t->state.load(std::memory_order_relaxed);
  for (;;) {
    // Releases since the crossing may have taken the field back down: spill only what leaves it
    // above the refill mark.
    if (refs_of(s) <= kSpillChunk + kRefillBelow) {
      if (*held == 0) g_spill.erase(t);
      return;
    }
    if (t->state.compare_exchange_weak(s, (s - kSpillChunk * kRefOne) | kSpilled, std::memory_order_acq_rel,
                                       std::memory_order_relaxed))  // (RC3)
      break;
  }
  *held += kSpillChunk;
}

void refill_references(TaskBase* t) noexcept {
  std::lock_guard lk(g_spill_mu);
  auto it = g_spill.find(t);
  if (it == g_spill.end()) return;  // refilled to the last chunk already (kSpilled clear)
  std::uint32_t s = t->state.load(std::memory_order_relaxed);
  const std::uint64_t back = std::min<std::uint64_t>(it->second, kSpillChunk);
  const bool last = back == it->second;
  for (;;) {
    if (refs_of(s) > kRefillBelow) return;  // another release refilled it first
    std::uint32_t n = s + static_cast<std::uint32_t>(back) * kRefOne;
    if (last) n &= ~kSpilled;
    if (t->state.compare_exchange_weak(s, n, std::memory_order_acq_rel, std::memory_order_relaxed)) break;  // (RC4)
  }
  if (last) g_spill.erase(it);
  else it->second -= back;
}

}  // namespace kairos::detail

// task_nodes.hpp: bare task nodes for the timer queue's tests (heap, sorted run, both), and the
// (deadline, seq) key their ordered references hold.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <kairos/detail/task.hpp>

namespace kairos::detail::testing {

using Key = std::pair<std::int64_t, std::uint64_t>;

inline std::vector<std::unique_ptr<TaskBase>> make_nodes(std::size_t n) {
  std::vector<std::unique_ptr<TaskBase>> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(std::make_unique<TaskBase>());
  return v;
}

}  // namespace kairos::detail::testing

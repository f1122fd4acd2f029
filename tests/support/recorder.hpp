// recorder.hpp: an ordered log of ids written by task bodies (any thread) and read by the test.
#pragma once
#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace kairos_test {

class Recorder {
 public:
  void add(int id) {
    std::lock_guard lock(mu_);
    ids_.push_back(id);
  }
  std::vector<int> ids() const {
    std::lock_guard lock(mu_);
    return ids_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return ids_.size();
  }
  void clear() {
    std::lock_guard lock(mu_);
    ids_.clear();
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> ids_;
};

// For a failure message: where two id sequences first differ, and a few ids either side of it
// (gtest prints only the first 32 of each).
inline std::string where_they_differ(const std::vector<int>& got, const std::vector<int>& want) {
  const std::size_t n = std::min(got.size(), want.size());
  std::size_t i = 0;
  while (i < n && got[i] == want[i]) ++i;
  if (i == n && got.size() == want.size()) return "the same";
  auto around = [i](const std::vector<int>& v) {
    std::string out;
    const std::size_t from = i < 3 ? 0 : i - 3;
    for (std::size_t k = from; k < std::min(v.size(), i + 5); ++k) out += (k == i ? " [" : " ") + std::to_string(v[k]) + (k == i ? "]" : "");
    return out;
  };
  return "first difference at position " + std::to_string(i) + " (sizes " + std::to_string(got.size()) + " and " +
         std::to_string(want.size()) + "): got" + around(got) + ", want" + around(want);
}

}  // namespace kairos_test

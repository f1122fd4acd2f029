// recorder.hpp: an ordered log of ids written by task bodies (any thread) and read by the test.
#pragma once
#include <cstddef>
#include <mutex>
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

}  // namespace kairos_test

// scratch_dir.hpp: ScratchDir, a directory of the test process's own under $TMPDIR (mkdtemp),
// removed with everything in it when the object goes. A test that writes files keeps one as a
// function-local static: made on first use, removed at exit, so a run leaves nothing in /tmp and
// two runs at once never share a file.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace kairos_test {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;  // a file a child process still holds open is removed anyway on Linux
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace kairos_test

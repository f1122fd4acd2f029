// subprocess.hpp: running a command and reading what it prints. Every measured run happens in a
// process of its own (a JVM, or kairos-lat itself with --child), so that no run inherits memory
// pools, JIT state or page faults from the run before it.
#pragma once
#include <string>
#include <vector>

namespace kairos::lat {

// Runs argv[0] with the arguments (no shell), its stderr shared with ours; returns its stdout and
// sets `status` to its exit code (-1 if it could not run or was killed).
std::string run_capture(const std::vector<std::string>& argv, int& status);

// The absolute path of an executable found in $PATH, or "".
std::string find_in_path(const std::string& name);

// This program's own executable (/proc/self/exe).
std::string self_exe();

}  // namespace kairos::lat

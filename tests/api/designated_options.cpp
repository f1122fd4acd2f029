// designated_options.cpp: Options as users write them, with designated initializers naming only
// the fields they change (README quick start, docs/poll-mode.md). Compiled with -Wall -Wextra
// -Wpedantic -Werror by check_warnings.sh: every member of Options must have a default member
// initializer, or g++ warns -Wmissing-field-initializers for each one left out.
#include <chrono>

#include <kairos/kairos.hpp>

using namespace std::chrono_literals;

kairos::Options quick_start_options() { return {.shards = 1, .wait = kairos::WaitPolicy::hybrid(50us)}; }
kairos::Options poll_mode_options() { return {.poll_mode = true}; }
kairos::Options last_field_options() { return {.shards = 2, .terminated = [] {}}; }
kairos::Options first_field_only() { return {.shards = 1}; }

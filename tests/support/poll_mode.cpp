// poll_mode.cpp: kairos_test::detail::poll_mode_flag (schedulers.hpp), compiled twice
// (tests/CMakeLists.txt): KAIROS_TEST_POLL_MODE=0 into kairos_test_threads_mode, which every test
// executable links, and =1 into kairos_test_poll_mode, which the *_poll_test ones link instead.
namespace kairos_test::detail {
extern const bool poll_mode_flag;
const bool poll_mode_flag = KAIROS_TEST_POLL_MODE != 0;
}  // namespace kairos_test::detail

// support.hpp: what kairos's tests share (tests/support, the kairos_test_support target), one
// definition each:
//   patience.hpp       kPatience (the one real-time bound), eventually(pred), Gate, Watchdog
//                      (kHangLimit)
//   schedulers.hpp     Scheduler / ManualScheduler (poll mode in *_poll_test), the Manual
//                      fixture (step(d): advance the clock, wait until idle), single_thread(),
//                      threads(), ns()
//   recorder.hpp       Recorder: the order in which task bodies ran
//   stress_budget.hpp  KAIROS_STRESS_SECONDS / _SEED / KAIROS_SOAK_SECONDS, sanitized_build()
//   scratch_dir.hpp    ScratchDir: a test process's own directory under $TMPDIR, removed at exit
//                      (included by the tests that write files, not here)
#pragma once
#include "patience.hpp"
#include "recorder.hpp"
#include "schedulers.hpp"
#include "stress_budget.hpp"

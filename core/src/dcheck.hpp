// dcheck.hpp: KAIROS_DCHECK(cond): a precondition checked in debug builds (NDEBUG not defined)
// and in the sanitizer builds (CMake defines KAIROS_DEBUG_CHECKS there); nothing in a release
// build, where `cond` is not evaluated (only its names count as used). For what a caller must
// hold: "mu_ held" (a Lock& parameter: KAIROS_DCHECK(lk.owns_lock())), a node unlinked from the
// timer queue, a task's state.
// A failed check prints the condition and where, then aborts.
#pragma once

#if !defined(NDEBUG) || defined(KAIROS_DEBUG_CHECKS)
#include <cstdio>
#include <cstdlib>
#define KAIROS_DCHECK(cond)                                                                     \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "kairos: check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);    \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)
#else
#define KAIROS_DCHECK(cond) ((void)sizeof((cond) ? 1 : 0))  // unevaluated, but its names count as used
#endif

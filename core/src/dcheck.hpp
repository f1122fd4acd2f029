// dcheck.hpp: KAIROS_DCHECK(cond): a precondition checked at run time in debug builds (NDEBUG not
// defined) and in the sanitizer builds (CMake defines KAIROS_DEBUG_CHECKS there); nothing in a
// release build, where `cond` is not evaluated (only its names count as used). It checks what the
// compiler cannot: a node unlinked from the timer queue, a task's state, "no kairos lock held"
// before user code may run (complete(), completion.hpp). That a shard's mu_ is held where a
// function needs it is proved at compile time instead (KAIROS_REQUIRES, thread_annotations.hpp);
// the functions handed the holder's Lock& still check lk.owns_lock() here, for the paths the
// analysis does not follow (a callee's Lock&, lambdas).
// A failed check prints the condition and where, then aborts. KAIROS_DCHECK_IS_ON is 1 where
// checks run (code that exists only to be checked is compiled under it).
#pragma once

#if !defined(NDEBUG) || defined(KAIROS_DEBUG_CHECKS)
#include <cstdio>
#include <cstdlib>
#define KAIROS_DCHECK_IS_ON 1
#define KAIROS_DCHECK(cond)                                                                     \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "kairos: check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);    \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)
#else
#define KAIROS_DCHECK_IS_ON 0
#define KAIROS_DCHECK(cond) ((void)sizeof((cond) ? 1 : 0))  // unevaluated, but its names count as used
#endif

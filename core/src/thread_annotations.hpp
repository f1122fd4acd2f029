// thread_annotations.hpp: clang's thread safety annotations (the KAIROS_ macros below, as
// Abseil's ABSL_GUARDED_BY...), a Mutex and a relockable scoped Lock that carry them.
// Threads: Mutex is a std::mutex; Lock a std::unique_lock of one. Nothing else, at run time.
//
// Why. A shard's lock (mu_, shard.hpp) guards most of its fields, and the functions that touch
// them are spread over eight files. clang's -Wthread-safety checks at compile time that each of
// them is touched with the lock held, from these annotations: a field GUARDED_BY(mu_), a function
// that REQUIRES(mu_), one that ACQUIREs or RELEASEs it. libstdc++'s std::mutex and
// std::unique_lock carry no annotations (libc++'s do, on request), so the analysis cannot see
// them lock anything: the engine locks through these wrappers instead, which cost nothing more.
// The macros are empty for other compilers; CMake's KAIROS_THREAD_SAFETY_ANALYSIS turns the
// check on (clang), and CI builds the library that way with the warnings as errors.
//
// What the analysis proves: in every function, on every path, a GUARDED_BY field is read or
// written and a REQUIRES function is called only where the mutex is held, and an ACQUIRE/RELEASE
// function leaves it as it says (the paths through a Lock's unlock() and lock() included).
// What it does not: it is one function at a time and trusts the annotations it meets (a callee's
// REQUIRES, assert_held(), the Lock's lock(Mutex&) and unlock(Mutex&), a function marked
// KAIROS_NO_THREAD_SAFETY_ANALYSIS); a lambda is a function of its own that holds nothing; it
// does not follow a pointer or reference to a guarded field past the lock (a runner's batches_
// entry, shard_leader.cpp), does not check constructors and destructors, and knows nothing of
// what an object reached through an unguarded field needs (the Inbox's leader half is called
// under mu_, as its comment says, unchecked). It checks no memory order, no lock order and
// nothing at run time; KAIROS_DCHECK (dcheck.hpp) still does what it did in debug builds.
//
// Debug builds (KAIROS_DCHECK_IS_ON) also count the Mutexes the calling thread holds, so that a
// function that may run user code can check that it holds none (no_kairos_lock_held: complete(),
// completion.hpp). A std::condition_variable wait releases and re-takes the mutex inside: the
// count stays, and nothing runs on the thread meanwhile.
#pragma once
#include <mutex>

#include "dcheck.hpp"

#if defined(__clang__)
#define KAIROS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KAIROS_THREAD_ANNOTATION(x)
#endif

#define KAIROS_CAPABILITY(x) KAIROS_THREAD_ANNOTATION(capability(x))
#define KAIROS_SCOPED_CAPABILITY KAIROS_THREAD_ANNOTATION(scoped_lockable)
#define KAIROS_GUARDED_BY(x) KAIROS_THREAD_ANNOTATION(guarded_by(x))
#define KAIROS_PT_GUARDED_BY(x) KAIROS_THREAD_ANNOTATION(pt_guarded_by(x))
#define KAIROS_REQUIRES(...) KAIROS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define KAIROS_EXCLUDES(...) KAIROS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define KAIROS_ACQUIRE(...) KAIROS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define KAIROS_RELEASE(...) KAIROS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define KAIROS_ASSERT_CAPABILITY(x) KAIROS_THREAD_ANNOTATION(assert_capability(x))
#define KAIROS_RETURN_CAPABILITY(x) KAIROS_THREAD_ANNOTATION(lock_returned(x))
#define KAIROS_NO_THREAD_SAFETY_ANALYSIS KAIROS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace kairos::detail {

#if KAIROS_DCHECK_IS_ON
inline thread_local int t_kairos_locks_held = 0;  // Mutexes this thread holds (debug builds)
inline void count_lock(int d) noexcept { t_kairos_locks_held += d; }
inline bool no_kairos_lock_held() noexcept { return t_kairos_locks_held == 0; }
#else
inline void count_lock(int) noexcept {}
inline bool no_kairos_lock_held() noexcept { return true; }
#endif

// A std::mutex the analysis can see.
class KAIROS_CAPABILITY("mutex") Mutex {
 public:
  void lock() KAIROS_ACQUIRE() { mu_.lock(); count_lock(1); }
  void unlock() KAIROS_RELEASE() { count_lock(-1); mu_.unlock(); }
  // Tells the analysis that the calling thread holds this mutex (a lambda run under it); checks
  // nothing at run time.
  void assert_held() const KAIROS_ASSERT_CAPABILITY(this) {}
  std::mutex& native() noexcept { return mu_; }  // for Lock's std::unique_lock

 private:
  std::mutex mu_;
};

// std::unique_lock<std::mutex> of a Mutex, relockable, that the analysis can see.
class KAIROS_SCOPED_CAPABILITY Lock {
 public:
  explicit Lock(Mutex& mu) KAIROS_ACQUIRE(mu) : mu_(&mu), lk_(mu.native()) { count_lock(1); }
  ~Lock() KAIROS_RELEASE() {
    if (lk_.owns_lock()) count_lock(-1);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // In the function that made this Lock: the analysis knows which mutex it holds.
  void lock() KAIROS_ACQUIRE() { take(); }
  void unlock() KAIROS_RELEASE() { give(); }
  // In a callee handed this Lock by reference: the analysis knows a Lock only in the function
  // that made it, so the callee names the mutex it re-takes or lets go (debug builds check that
  // it is this Lock's). The bodies cannot be analysed: `lk_` is libstdc++'s.
  void lock(Mutex& mu) KAIROS_ACQUIRE(mu) KAIROS_NO_THREAD_SAFETY_ANALYSIS {
    KAIROS_DCHECK(&mu == mu_);
    take();
  }
  void unlock(Mutex& mu) KAIROS_RELEASE(mu) KAIROS_NO_THREAD_SAFETY_ANALYSIS {
    KAIROS_DCHECK(&mu == mu_);
    give();
  }
  bool owns_lock() const noexcept { return lk_.owns_lock(); }
  // For std::condition_variable::wait, which returns with the mutex held again.
  std::unique_lock<std::mutex>& native() noexcept { return lk_; }

 private:
  void take() KAIROS_NO_THREAD_SAFETY_ANALYSIS { lk_.lock(); count_lock(1); }
  void give() KAIROS_NO_THREAD_SAFETY_ANALYSIS { count_lock(-1); lk_.unlock(); }

  Mutex* const mu_;
  std::unique_lock<std::mutex> lk_;
};

}  // namespace kairos::detail

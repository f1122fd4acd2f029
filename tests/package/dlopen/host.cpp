// host.cpp <plugin.so> [tasks]: loads a kairos-using plugin with dlopen() (this program does not
// link kairos) and calls it from the main thread and from a thread started before the dlopen().
// Exit 0 when both calls ran every task. check_shared.sh runs it with no static TLS to spare.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <plugin.so> [tasks]\n", argv[0]);
    return 2;
  }
  const int tasks = argc > 2 ? std::atoi(argv[2]) : 1000;
  using Run = int (*)(int);
  std::atomic<Run> run{nullptr};
  std::atomic<int> earlier_result{-1};
  std::thread earlier([&] {  // exists before the library does: its TLS is made lazily
    Run r;
    while ((r = run.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
    earlier_result.store(r(tasks));
  });
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  auto r = lib != nullptr ? reinterpret_cast<Run>(dlsym(lib, "plugin_run")) : nullptr;
  if (r == nullptr) {  // the earlier thread is let go before the exit (a joinable thread terminates)
    std::printf("%s: %s\n", lib == nullptr ? "dlopen failed" : "no plugin_run", dlerror());
    run.store([](int) { return -1; }, std::memory_order_release);
    earlier.join();
    return 1;
  }
  run.store(r, std::memory_order_release);
  const int main_result = r(tasks);
  earlier.join();
  std::printf("tasks run: main thread %d, earlier thread %d, of %d each\n", main_result, earlier_result.load(), tasks);
  return main_result == tasks && earlier_result.load() == tasks ? 0 : 1;
}

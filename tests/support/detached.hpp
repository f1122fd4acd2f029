// detached.hpp: the smallest coroutine type, for tests that co_await kairos: it starts at once,
// nobody awaits it, its frame ends with it (kairos imposes no coroutine type; docs/coroutines.md).
#pragma once
#include <coroutine>
#include <exception>

namespace kairos_test {

struct Detached {
  struct promise_type {
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

}  // namespace kairos_test

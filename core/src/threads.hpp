// threads.hpp: per-thread OS settings for scheduler threads (threads.cpp).
#pragma once
#include <string>

namespace kairos::detail {

void set_current_thread_name(const std::string& name) noexcept;  // cut to 15 characters
bool pin_current_thread(int cpu) noexcept;
void set_timer_slack_1ns() noexcept;  // sleeps end within 1 ns of their deadline, not 50 us

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace kairos::detail

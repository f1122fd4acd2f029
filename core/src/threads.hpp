// threads.hpp: per-thread OS settings for scheduler threads (threads.cpp).
#pragma once
#include <string>

#include <kairos/detail/futex.hpp>  // cpu_relax

namespace kairos::detail {

void set_current_thread_name(const std::string& name) noexcept;  // cut to 15 characters
bool pin_current_thread(int cpu) noexcept;
void set_timer_slack_1ns() noexcept;  // sleeps end within 1 ns of their deadline, not 50 us

}  // namespace kairos::detail

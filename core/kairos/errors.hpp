// errors.hpp: the exceptions kairos throws at its API edge.
// RejectedExecution: a submission after shutdown(), or over capacity, under Rejection::abort.
// CancelledError:    get() on a cancelled task, or on a task dropped after shutdown_now().
// TimeoutError:      invoke_any() with a timeout that passed before a task completed normally.
// Bad arguments throw std::invalid_argument; a task's own exception comes back unchanged.
#pragma once
#include <stdexcept>

namespace kairos {

struct RejectedExecution : std::runtime_error { using runtime_error::runtime_error; };
struct CancelledError    : std::runtime_error { using runtime_error::runtime_error; };
struct TimeoutError      : std::runtime_error { using runtime_error::runtime_error; };

}  // namespace kairos

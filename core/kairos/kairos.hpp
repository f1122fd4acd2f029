// kairos.hpp: everything kairos offers, in one include.
#pragma once
#include <kairos/clock.hpp>
#include <kairos/coro.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/options.hpp>
#include <kairos/rejection.hpp>
#include <kairos/scheduler.hpp>
#include <kairos/stats.hpp>
#include <kairos/task.hpp>
#include <kairos/version.hpp>
#include <kairos/wait.hpp>
#if __has_include(<kairos/latency_histogram.hpp>)
#include <kairos/latency_histogram.hpp>
#endif
#if __has_include(<kairos/pacer.hpp>)
#include <kairos/pacer.hpp>
#endif

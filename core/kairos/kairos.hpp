// kairos.hpp: the scheduler in one include: everything of the kairos target (libkairos).
// LatencyHistogram comes with it (it is the type of ShardStats::lateness). The latency kit is a
// component of its own (the kairos::latency target, kairos-latency.pc): include
// <kairos/pacer.hpp> and <kairos/hdr_codec.hpp> by name and link it.
#pragma once
#include <kairos/clock.hpp>
#include <kairos/coro.hpp>
#include <kairos/duration.hpp>
#include <kairos/errors.hpp>
#include <kairos/future.hpp>
#include <kairos/latency_histogram.hpp>
#include <kairos/options.hpp>
#include <kairos/rejection.hpp>
#include <kairos/scheduler.hpp>
#include <kairos/stats.hpp>
#include <kairos/task.hpp>
#include <kairos/version.hpp>
#include <kairos/wait.hpp>

// Wall-clock timing of an operation and its baselines, interleaved so that all of them see the
// same machine state (frequency, caches, neighbours) over the measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bench/record.hpp"

namespace hk::bench {

struct TimingOptions {
  double min_seconds = 0.3;  // keep repeating until the rounds together took this long ...
  int min_repetitions = 5;   // ... and every function ran at least this often
};

/// Order statistics of one function's repetitions, in nanoseconds.
struct TimingStats {
  double median_ns = 0, min_ns = 0, max_ns = 0, q1_ns = 0, q3_ns = 0;
  std::int64_t repetitions = 0;
};

/// Runs every function once as a warm-up, then rounds in which each runs once in turn, until
/// `options` are met. Returns one TimingStats per function, in the order given.
std::vector<TimingStats> time_interleaved(std::span<const std::function<void()>> functions,
                                          const TimingOptions& options);

/// Sets the fields every record of a hetkern run has, in this order: schedule, threads, isa
/// (the active level), median_ns, min_ns, q1_ns, q3_ns, max_ns, repetitions.
void set_run_fields(Record& r, const std::string& schedule, int threads, const TimingStats& s);

}  // namespace hk::bench

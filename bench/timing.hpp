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
  /// When set: each function takes its turn as a run of repetitions (about turn_seconds, after one
  /// that is not recorded), and every turn starts this long after the last one ended, so that the
  /// OpenMP workers the last turn left spinning (for KMP_BLOCKTIME, 200 ms by default) are asleep:
  /// two libraries on one libomp (oneDNN's calls bind to hetkern's) then each run as if alone,
  /// where calls alternated one by one charged every switch to the second (docs/benchmarks.md).
  double pause_seconds = 0;
  double turn_seconds = 0.05;
};

/// The pause that outlasts this process's OpenMP workers' spinning after a parallel region
/// (kmp_get_blocktime), plus a margin.
double spin_pause_seconds();

/// Order statistics of one function's repetitions, in nanoseconds.
struct TimingStats {
  double median_ns = 0, min_ns = 0, max_ns = 0, q1_ns = 0, q3_ns = 0;
  std::int64_t repetitions = 0;
};

/// Runs every function once as a warm-up, then rounds in which each runs once in turn (or in runs
/// with pauses between them, see TimingOptions), until `options` are met. Returns one
/// TimingStats per function, in the order given.
std::vector<TimingStats> time_interleaved(std::span<const std::function<void()>> functions,
                                          const TimingOptions& options);

/// Sets the fields every record of a hetkern run has, in this order: schedule, threads, isa
/// (the active level), median_ns, min_ns, q1_ns, q3_ns, max_ns, repetitions.
void set_run_fields(Record& r, const std::string& schedule, int threads, const TimingStats& s);

}  // namespace hk::bench

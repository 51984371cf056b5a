// Interleaved wall-clock timing of an operation and its baselines (timing.hpp).
#include "bench/timing.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "hetkern/info.hpp"
#include "runtime/tuning/quantile.hpp"

namespace hk::bench {
namespace {

using Clock = std::chrono::steady_clock;

TimingStats summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {detail::quantile(samples, 0.5), samples.front(), samples.back(), detail::quantile(samples, 0.25),
          detail::quantile(samples, 0.75), std::int64_t(samples.size())};
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Turns with pauses: each function runs as many times in a row as fill about turn_seconds (from
// its warm-up's time), after one run that is not recorded, and no turn starts until
// pause_seconds after the last one ended. Rounds go on until the recorded runs took min_seconds
// and every function has min_repetitions, or five rounds have passed (the pauses, not the
// runs, then take the time).
std::vector<std::vector<double>> time_in_turns(std::span<const std::function<void()>> functions,
                                               const TimingOptions& options) {
  const auto pause = [&] { std::this_thread::sleep_for(std::chrono::duration<double>(options.pause_seconds)); };
  std::vector<int> run_length;
  for (const auto& f : functions) {
    pause();
    const auto t0 = Clock::now();
    f();
    run_length.push_back(int(std::clamp(options.turn_seconds / std::max(seconds_since(t0), 1e-9), 1.0, 1000.0)));
  }
  std::vector<std::vector<double>> samples(functions.size());
  double measured = 0;
  for (int round = 0;; ++round) {
    bool enough = true;
    for (const auto& s : samples) enough &= std::int64_t(s.size()) >= options.min_repetitions;
    if (enough && (measured >= options.min_seconds || round >= 5)) break;
    for (std::size_t i = 0; i < functions.size(); ++i) {
      pause();
      functions[i]();
      for (int r = 0; r < run_length[i]; ++r) {
        const auto t0 = Clock::now();
        functions[i]();
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
        samples[i].push_back(ns);
        measured += ns * 1e-9;
      }
    }
  }
  return samples;
}

}  // namespace

double spin_pause_seconds() { return kmp_get_blocktime() * 1e-3 + 0.05; }

std::vector<TimingStats> time_interleaved(std::span<const std::function<void()>> functions,
                                          const TimingOptions& options) {
  std::vector<std::vector<double>> samples(functions.size());
  if (options.pause_seconds > 0) {
    samples = time_in_turns(functions, options);
  } else {
    for (const auto& f : functions) f();
    const auto start = Clock::now();
    for (int round = 0;; ++round) {
      if (round >= std::max(1, options.min_repetitions) && seconds_since(start) >= options.min_seconds) break;
      for (std::size_t i = 0; i < functions.size(); ++i) {
        const auto t0 = Clock::now();
        functions[i]();
        samples[i].push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
      }
    }
  }
  std::vector<TimingStats> stats;
  for (auto& s : samples) stats.push_back(summarize(std::move(s)));
  return stats;
}

void set_run_fields(Record& r, const std::string& schedule, int threads, const TimingStats& s) {
  r.set("schedule", schedule);
  r.set("threads", threads);
  r.set("isa", name_of(active_isa()));
  r.set("median_ns", s.median_ns);
  r.set("min_ns", s.min_ns);
  r.set("q1_ns", s.q1_ns);
  r.set("q3_ns", s.q3_ns);
  r.set("max_ns", s.max_ns);
  r.set("repetitions", s.repetitions);
}

}  // namespace hk::bench

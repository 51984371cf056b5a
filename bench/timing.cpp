// Interleaved wall-clock timing of an operation and its baselines (timing.hpp).
#include "bench/timing.hpp"

#include <algorithm>
#include <chrono>

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

}  // namespace

std::vector<TimingStats> time_interleaved(std::span<const std::function<void()>> functions,
                                          const TimingOptions& options) {
  for (const auto& f : functions) f();
  std::vector<std::vector<double>> samples(functions.size());
  const auto start = Clock::now();
  for (int round = 0;; ++round) {
    if (round >= std::max(1, options.min_repetitions) &&
        std::chrono::duration<double>(Clock::now() - start).count() >= options.min_seconds)
      break;
    for (std::size_t i = 0; i < functions.size(); ++i) {
      const auto t0 = Clock::now();
      functions[i]();
      samples[i].push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
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

// The autotuner: measure candidates of a schedule space, keep the fastest.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "hetkern/error.hpp"
#include "hetkern/tuning.hpp"
#include "runtime/tuning/dispatch.hpp"
#include "runtime/tuning/quantile.hpp"
#include "runtime/tuning/schedule_space.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

namespace hk {
namespace {

using Clock = std::chrono::steady_clock;
using detail::SpacePoint;
using detail::TuneWorkload;

// A full measurement (the sweep's, the finalists') and the search's screening one.
constexpr double full_seconds = 0.02;
constexpr double screen_seconds = 0.001;
constexpr int min_repetitions = 5;
constexpr int screen_repetitions = 3;
// Spaces this small are screened whole.
constexpr std::size_t exhaustive_max = 8;
constexpr double noisy_spread = 0.10;
constexpr int noisy_retries = 2;
// Screening measurements are not repeated: the finalists are measured again in full.
constexpr int finalists = 2;
constexpr double finalist_seconds = 0.003;
constexpr int random_restarts = 2;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Stats {
  double median = 0, q1 = 0, q3 = 0;
  std::int64_t repetitions = 0;
  double relative_spread() const { return median > 0 ? (q3 - q1) / median : 0; }
};

Stats summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {detail::quantile(samples, 0.5), detail::quantile(samples, 0.25), detail::quantile(samples, 0.75), std::int64_t(samples.size())};
}

// Interleaved rounds over the given schedules (already checked and warmed up).
std::vector<Stats> time_rounds(TuneWorkload& w, const std::vector<Schedule>& schedules, double min_seconds,
                               int min_reps) {
  std::vector<std::vector<double>> samples(schedules.size());
  const auto start = Clock::now();
  for (int round = 0; round < min_reps || seconds_since(start) < min_seconds; ++round) {
    for (std::size_t i = 0; i < schedules.size(); ++i) {
      const auto t0 = Clock::now();
      w.run(schedules[i]);
      samples[i].push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
  }
  std::vector<Stats> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

// One schedule, re-measured while noisy; the attempt with the smallest relative spread counts.
Stats measure(TuneWorkload& w, const Schedule& s, double min_seconds, int min_reps, int retries) {
  Stats best = time_rounds(w, {s}, min_seconds, min_reps).front();
  for (int retry = 0; retry < retries && best.relative_spread() > noisy_spread; ++retry) {
    const Stats again = time_rounds(w, {s}, min_seconds, min_reps).front();
    if (again.relative_spread() < best.relative_spread()) best = again;
  }
  return best;
}

// The first run of every candidate is checked against the reference before it is timed.
void check(TuneWorkload& w, const Schedule& s) {
  w.run(s);
  if (!w.matches_reference())
    throw Error(Errc::invalid_schedule, "tune", s.to_string(),
                "the result differs from the reference: a kernel bug, please report it");
}

// Parameters as numbers for the neighbourhood: integers as they are, a named choice (pin=compact)
// as 1 + its position among the parameter's choices, so that choices are neighbours in order.
std::map<std::string, std::int64_t> numeric_params(const SpacePoint& point) {
  std::map<std::string, std::int64_t> out;
  for (const auto& p : point.schedule.params()) {
    std::int64_t v = 0;
    const char* end = p.value.data() + p.value.size();
    if (std::from_chars(p.value.data(), end, v).ptr != end) {
      for (const auto& spec : point.params) {
        if (p.key != spec.key) continue;
        const auto at = std::find(spec.choices.begin(), spec.choices.end(), p.value);
        v = 1 + (at - spec.choices.begin());
      }
    }
    out[p.key] = v;
  }
  return out;
}

// Neighbours of `at`: within its strategy, for each parameter the nearest lower and higher value
// among candidates equal in every other parameter; in each other strategy, the candidate whose
// shared parameters are closest (log scale).
std::vector<std::size_t> neighbours(const std::vector<SpacePoint>& space, std::size_t at) {
  const auto here = numeric_params(space[at]);
  std::vector<std::size_t> out;
  std::map<std::string, std::pair<std::ptrdiff_t, std::ptrdiff_t>> lower_higher;  // key -> (lo idx, hi idx)
  std::map<int, std::pair<double, std::size_t>> per_strategy;
  for (std::size_t i = 0; i < space.size(); ++i) {
    if (i == at) continue;
    const auto there = numeric_params(space[i]);
    if (space[i].strategy == space[at].strategy) {
      std::string differing;
      int count = 0;
      for (const auto& [k, v] : there)
        if (!here.count(k) || here.at(k) != v) { differing = k; ++count; }
      if (count != 1 || !here.count(differing)) continue;
      auto& [lo, hi] = lower_higher.try_emplace(differing, -1, -1).first->second;
      const std::int64_t v = there.at(differing), mine = here.at(differing);
      auto value_of = [&](std::ptrdiff_t j) { return numeric_params(space[std::size_t(j)]).at(differing); };
      if (v < mine && (lo < 0 || v > value_of(lo))) lo = std::ptrdiff_t(i);
      if (v > mine && (hi < 0 || v < value_of(hi))) hi = std::ptrdiff_t(i);
    } else {
      double d = 0;
      for (const auto& [k, v] : there)
        if (here.count(k)) d += std::fabs(std::log2(double(std::max<std::int64_t>(v, 1)) / double(std::max<std::int64_t>(here.at(k), 1))));
      auto [it, fresh] = per_strategy.try_emplace(space[i].strategy, d, i);
      if (!fresh && d < it->second.first) it->second = {d, i};
    }
  }
  for (const auto& [k, lh] : lower_higher) {
    if (lh.first >= 0) out.push_back(std::size_t(lh.first));
    if (lh.second >= 0) out.push_back(std::size_t(lh.second));
  }
  for (const auto& [s, di] : per_strategy) out.push_back(di.second);
  return out;
}

}  // namespace

std::vector<Schedule> schedule_space(const TuneProblem& problem) {
  const TuneWorkload w(problem, false);
  std::vector<Schedule> out;
  for (auto& p : detail::enumerate_space(w)) out.push_back(std::move(p.schedule));
  return out;
}

Schedule heuristic_schedule(const TuneProblem& problem) { return TuneWorkload(problem, false).heuristic_schedule(); }

TuningRecord tuning_key(const TuneProblem& problem) {
  const TuneWorkload w(problem, false);
  return w.is_scan() ? detail::scan_key(w.scan_call()) : detail::qmm_key(w.qmm_problem());
}

std::vector<double> time_schedules(const TuneProblem& problem, const std::vector<Schedule>& schedules,
                                   double min_seconds) {
  // inf would never return, NaN never stop rounds early: neither is what a caller meant.
  if (!std::isfinite(min_seconds) || min_seconds < 0)
    throw Error(Errc::invalid_parameter, "time_schedules", "min_seconds", "must be a finite number of seconds, 0 or more");
  TuneWorkload w(problem);
  for (const auto& s : schedules) check(w, s);
  std::vector<double> out;
  for (const auto& s : time_rounds(w, schedules, min_seconds, min_repetitions)) out.push_back(s.median);
  return out;
}

TuneResult tune(const TuneProblem& problem, const TuneOptions& options) {
  // NaN would stop the search after its first candidate and inf measure nearly the whole space:
  // neither is what a caller meant.
  if (!std::isfinite(options.budget_seconds) || options.budget_seconds <= 0) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", options.budget_seconds);
    throw Error(Errc::invalid_parameter, "tune", "budget_seconds",
                std::string("must be a finite number of seconds above 0, got ") + got);
  }
#ifdef HETKERN_OFFLOAD
  // The kernels' JIT compilation belongs to the process, not to this shape's budget.
  warm_up_offload();
#endif
  // The data and the expected results (seconds for a 1 GiB scan) are made before the clock
  // starts: the budget is the search's, and a large shape would spend it all before the first
  // candidate.
  TuneWorkload w(problem);
  const auto start = Clock::now();
  std::vector<SpacePoint> space = detail::enumerate_space(w);
  const Schedule heuristic = w.heuristic_schedule();
  std::size_t heuristic_index = space.size();
  for (std::size_t i = 0; i < space.size(); ++i)
    if (space[i].schedule == heuristic) heuristic_index = i;
  if (heuristic_index == space.size()) space.push_back(detail::space_point(w, heuristic));

  const bool whole_space = options.exhaustive || space.size() <= exhaustive_max;
  const std::size_t cap = whole_space ? space.size() : std::max<std::size_t>(exhaustive_max, space.size() / 6);
  TuneProgress progress;
  progress.planned = std::int64_t(cap);
  std::map<std::size_t, Stats> measured;
  auto try_point = [&](std::size_t i, double seconds, int reps, int retries) {
    if (measured.count(i)) return;
    check(w, space[i].schedule);
    const Stats s = measure(w, space[i].schedule, seconds, reps, retries);
    measured[i] = s;
    progress.tried = std::int64_t(measured.size());
    progress.schedule = space[i].schedule.to_string();
    progress.median_ns = s.median;
    progress.best_ns = progress.best_ns == 0 ? s.median : std::min(progress.best_ns, s.median);
    if (options.progress) options.progress(progress);
  };
  auto best_of = [&] {
    return std::min_element(measured.begin(), measured.end(),
                            [](const auto& a, const auto& b) { return a.second.median < b.second.median; })
        ->first;
  };
  // The search leaves time in the budget for the finalists' measurement, one repeat included:
  // the two best screened so far and the heuristic's schedule, each at least min_repetitions.
  auto within_budget = [&] {
    if (measured.size() >= cap) return false;
    const auto h = measured.find(heuristic_index);
    const double round_ns = finalists * progress.best_ns + (h == measured.end() ? 0 : h->second.median);
    const double reserve = 2 * std::max(finalist_seconds * (finalists + 1), min_repetitions * round_ns * 1e-9);
    return seconds_since(start) + reserve < options.budget_seconds;
  };

  Stats winner_stats;
  std::size_t winner = heuristic_index;
  Stats heuristic_stats;
  if (options.exhaustive) {
    for (std::size_t i = 0; i < space.size(); ++i) try_point(i, full_seconds, min_repetitions, noisy_retries);
    winner = best_of();
    winner_stats = measured[winner];
    heuristic_stats = measured[heuristic_index];
  } else {
    if (whole_space)
      for (std::size_t i = 0; i < space.size(); ++i) try_point(i, screen_seconds, screen_repetitions, 0);
    // Climb from the heuristic's schedule to the best of its neighbourhood; when the climb
    // stops, random candidates (a restart away from a local minimum) and another climb from the
    // best, while the budget lasts.
    std::mt19937_64 rng(options.seed);
    auto climb = [&] {
      for (bool improved = true; improved && within_budget();) {
        const std::size_t best = best_of();
        for (const std::size_t n : neighbours(space, best))
          if (within_budget()) try_point(n, screen_seconds, screen_repetitions, 0);
        improved = best_of() != best;
      }
    };
    try_point(heuristic_index, screen_seconds, screen_repetitions, 0);
    climb();
    while (within_budget()) {
      const std::size_t before = measured.size();
      for (int r = 0; r < random_restarts && within_budget(); ++r)
        try_point(std::size_t(rng() % space.size()), screen_seconds, screen_repetitions, 0);
      climb();
      if (measured.size() == before) break;  // every random pick was already measured
    }
    // The finalists (and the heuristic, for its time) measured in full, interleaved.
    std::vector<std::pair<double, std::size_t>> ranked;
    for (const auto& [i, s] : measured) ranked.emplace_back(s.median, i);
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::size_t> finals;
    for (std::size_t r = 0; r < ranked.size() && int(finals.size()) < finalists; ++r) finals.push_back(ranked[r].second);
    if (std::find(finals.begin(), finals.end(), heuristic_index) == finals.end()) finals.push_back(heuristic_index);
    std::vector<Schedule> schedules;
    for (const auto i : finals) schedules.push_back(space[i].schedule);
    const double seconds = finalist_seconds * double(schedules.size());
    std::vector<Stats> stats = time_rounds(w, schedules, seconds, min_repetitions);
    for (int retry = 0; retry < noisy_retries; ++retry) {
      const bool noisy = std::any_of(stats.begin(), stats.end(), [](const Stats& s) { return s.relative_spread() > noisy_spread; });
      if (!noisy) break;
      const std::vector<Stats> again = time_rounds(w, schedules, seconds, min_repetitions);
      for (std::size_t f = 0; f < stats.size(); ++f)
        if (again[f].relative_spread() < stats[f].relative_spread()) stats[f] = again[f];
    }
    std::size_t best = 0;
    for (std::size_t f = 0; f < finals.size(); ++f) {
      if (stats[f].median < stats[best].median) best = f;
      if (finals[f] == heuristic_index) heuristic_stats = stats[f];
    }
    winner = finals[best];
    winner_stats = stats[best];
  }

  TuneResult result;
  result.record = w.is_scan() ? detail::scan_key(w.scan_call()) : detail::qmm_key(w.qmm_problem());
  result.record.schedule = space[winner].schedule.to_string();
  result.record.median_ns = winner_stats.median;
  result.record.spread_ns = winner_stats.q3 - winner_stats.q1;
  result.record.repetitions = winner_stats.repetitions;
  result.record.transfers = false;
  result.record.candidates = std::int64_t(measured.size());
  result.record.default_ns = heuristic_stats.median;
  result.space_size = std::int64_t(space.size());
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace hk

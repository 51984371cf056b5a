// `hetkern tune --evaluate`: the tuner against exhaustive sweeps of the same spaces.
#pragma once

#include <string>

namespace hk::cli {

/// Runs 30 shapes per operator (tiny to large, every axis role): for each, an exhaustive sweep
/// and a tuner search with `budget` seconds, then the tuner's winner, the sweep's winner and the
/// heuristic's schedule timed against each other. Prints a line per shape and, per operator and
/// overall, the share of shapes where the tuned schedule is within 5% of the sweep's best, the
/// tuner's time as a share of the sweep's, and the share where the heuristic is within 1.25x of
/// the best. `only` limits it to one operator's command name (empty: all).
void run_tuner_evaluation(double budget, const std::string& only);

}  // namespace hk::cli

// A benchmark sweep: every case of a SPEC over the schedules, thread counts, pinning policies and
// devices that apply, each measurement next to its baseline of the same run (a copy of the same
// bytes, oneDNN, the instruction-set peak), peer libraries where installed, and the outputs a
// performance engineer reads: results.json, results.csv, summary.md and plots (bench/plot.py).
#pragma once

#include <string>
#include <vector>

#include "bench/sweep_spec.hpp"
#include "bench/timing.hpp"

namespace hk::bench {

struct SweepOptions {
  std::string spec;                    // the preset name or file, as given (recorded)
  std::vector<SweepCase> cases;
  std::vector<int> threads;            // host thread counts; empty: 1, 2, 4, ... and every CPU
  std::vector<std::string> schedules;  // schedule texts; empty: every strategy that applies and
                                       // the library's own choice ("default")
  std::vector<std::string> pins;       // pin=P values for strategies with a pin parameter
  TimingOptions timing{0.1, 5};
  std::string out_dir;
  bool peers = true;                   // run bench/peers.py (numpy, PyTorch)
  bool force = false;                  // write into a non-empty out_dir (else refused)
};

struct SweepResult {
  int planned = 0, measured = 0, skipped = 0;
  bool interrupted = false;            // Ctrl-C: outputs hold the measurements that finished
  std::vector<std::string> files;      // written into out_dir
};

/// Thread counts 1, 2, 4, ... below `cpus`, then `cpus`.
std::vector<int> default_thread_counts(int cpus);

/// Checks the options (schedule texts parse, thread counts and pins are sane, out_dir is empty or
/// absent unless force) and throws hk::Error before anything is measured or written.
void validate(const SweepOptions& options);

/// Runs the sweep with a progress bar on a terminal (plain lines otherwise) on stderr. Ctrl-C
/// stops after the measurement under way and still writes the outputs; a second Ctrl-C ends the
/// process. Throws hk::Error for invalid options or an output directory that cannot be written.
SweepResult run_sweep(const SweepOptions& options);

}  // namespace hk::bench

// `hetkern bench --sweep SPEC`: a benchmark sweep over cases, schedules, thread counts, pinning
// policies and devices, with peers, written as results.json, results.csv, summary.md and plots.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "bench/sweep.hpp"
#include "hetkern/hetkern.hpp"
#include "tools/cli.hpp"

namespace hk::cli {
namespace {

struct SweepArgs {
  std::string spec, out, isa;
  std::vector<int> threads;
  std::vector<std::string> schedules, pins;
  bool no_peers = false, force = false;
  bench::TimingOptions timing{0.1, 5};
};

std::string default_out_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char name[64];
  std::strftime(name, sizeof name, "hetkern-sweep-%Y%m%d-%H%M%S", &tm);
  return name;
}

}  // namespace

void add_bench_sweep(CLI::App& bench) {
  auto args = std::make_shared<SweepArgs>();
  std::string presets;
  for (const auto& p : bench::sweep_presets()) presets += (presets.empty() ? "" : ", ") + p;
  bench.add_option("--sweep", args->spec,
                   "run a sweep instead of one case: a preset (" + presets +
                       ") or a SPEC file, one case per line: OP SHAPE DTYPE [OPTIONS] (see README); Ctrl-C "
                       "stops after the measurement under way, writes what finished and exits with "
                       "status 130, a second Ctrl-C at once");
  bench.add_option("--out", args->out,
                   "sweep: directory for results.json, results.csv, summary.md and the plots "
                   "(created; default ./hetkern-sweep-DATE-TIME; refused when not empty, see --force)");
  add_list_option(bench, "--threads", args->threads,
                  "sweep: host thread counts, e.g. 1,2,4 (default: 1, 2, 4, ... and every CPU)",
                  whole_number_within(1, max_threads));
  bench.add_option("--schedule", args->schedules,
                   "sweep: schedules to run (repeatable or a ;-separated list; strategies with a "
                   "threads parameter take each --threads count unless the text fixes one); "
                   "default: every strategy but the reference, and the library's own choice")
      ->delimiter(';');
  add_list_option(bench, "--pin", args->pins,
                  "sweep: pinning policies, e.g. compact,none; appended as pin=P to the host "
                  "strategies that offer a pin parameter",
                  CLI::Validator());
  bench.add_option("--isa", args->isa, "sweep: highest instruction-set level for hetkern and oneDNN");
  bench.add_flag("--no-peers", args->no_peers, "sweep: leave out numpy and PyTorch");
  bench.add_flag("--force", args->force,
                 "sweep: write into a --out directory that is not empty (an earlier sweep's "
                 "results.json, results.csv, summary.md and plots there are removed first); "
                 "without it such a directory is refused");
  bench.add_option("--min-time", args->timing.min_seconds,
                   "sweep: seconds of measured rounds per measurement (0 to 3600)")
      ->check(seconds_within(0, 3600))
      ->capture_default_str();
  bench.add_option("--min-reps", args->timing.min_repetitions, "sweep: and at least this many repetitions")
      ->check(whole_number_within(1, 1 << 30))
      ->capture_default_str();
  // Checked once parsing is complete, before an operator subcommand would run its case.
  bench.parse_complete_callback([&bench, args] {
    // Words that are neither options nor an operator: CLI11 names them next, which says more.
    if (!bench.remaining().empty()) return;
    if (args->spec.empty()) {
      for (const char* option : {"--out", "--threads", "--schedule", "--pin", "--isa", "--no-peers",
                                 "--force", "--min-time", "--min-reps"})
        if (bench.count(option))
          throw CLI::ValidationError(option, "belongs to --sweep; for one case put it after the operator");
    } else if (!bench.get_subcommands().empty()) {
      throw CLI::ValidationError("--sweep", "takes its cases from SPEC, not from an operator subcommand");
    }
  });
  bench.callback([args] {
    if (args->spec.empty()) return;
    if (!args->isa.empty()) set_max_isa(parse_isa(args->isa));
    bench::SweepOptions o;
    o.spec = args->spec;
    o.cases = bench::load_sweep_spec(args->spec);
    o.threads = args->threads;
    o.schedules = args->schedules;
    o.pins = args->pins;
    o.timing = args->timing;
    o.out_dir = args->out.empty() ? default_out_dir() : args->out;
    o.peers = !args->no_peers;
    o.force = args->force;
    const bench::SweepResult r = bench::run_sweep(o);
    std::printf("%d of %d measurements%s%s in %s:", r.measured, r.planned,
                r.skipped ? (", " + std::to_string(r.skipped) + " skipped (see summary.md)").c_str() : "",
                r.interrupted ? ", interrupted" : "", o.out_dir.c_str());
    for (const auto& f : r.files) std::printf(" %s", f.c_str());
    std::printf("\n");
    if (r.interrupted) throw Interrupted();
  });
}

}  // namespace hk::cli

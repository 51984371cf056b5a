// `hetkern bench`: times one operator case next to its baseline, measured in the same process on
// the same data, and prints one JSON line (--json) or a short table.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/peak.hpp"
#include "bench/qmm_bench.hpp"
#include "bench/scan_bench.hpp"
#include "hetkern/hetkern.hpp"
#include "tools/cli.hpp"
#include "tools/cli_problem.hpp"

namespace hk::cli {
namespace {

struct CommonArgs {
  int threads = 0;
  std::string schedule, isa;
  bool json = false;
  bench::TimingOptions timing;
};

struct QmmBenchArgs : ProblemArgs {
  std::vector<int> b_range;
  std::string b_layout = "rows";
  bool packed_b = false;
};

void add_common_options(CLI::App& cmd, CommonArgs& args, const char* schedule_example) {
  cmd.add_option("--threads", args.threads,
                 "threads for hetkern and the baseline; default: every CPU this process may use")
      ->check(whole_number_within(1, max_threads));
  cmd.add_option("--schedule", args.schedule,
                 std::string("schedule text, e.g. ") + schedule_example + "; default: chosen by hetkern");
  cmd.add_option("--isa", args.isa,
                 "highest instruction-set level for hetkern and oneDNN alike: portable, avx2, avx512, "
                 "avx512_vnni or amx");
  cmd.add_flag("--json", args.json, "print one JSON object per line instead of a table");
  cmd.add_option("--min-time", args.timing.min_seconds,
                 "repeat until the measured rounds took at least this many seconds (0 to 3600)")
      ->check(seconds_within(0, 3600))
      ->capture_default_str();
  cmd.add_option("--min-reps", args.timing.min_repetitions, "and at least this many repetitions")
      ->check(whole_number_within(1, 1 << 30))
      ->capture_default_str();
}

// Applies the options every benchmark shares; run before any work so that caps hold throughout.
void apply_isa_cap(const CommonArgs& args) {
  if (!args.isa.empty()) set_max_isa(parse_isa(args.isa));
}


double number(const bench::Record& r, std::string_view key) {
  const bench::Record::Value* v = r.find(key);
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return double(*i);
  return std::nan("");
}

std::string text(const bench::Record& r, std::string_view key) {
  const auto* s = std::get_if<std::string>(r.find(key));
  return s ? *s : std::string();
}

std::string shape_text(const std::vector<std::int64_t>& shape, const char* separator) {
  std::string t;
  for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? separator : "") + std::to_string(shape[i]);
  return t;
}

void print_table_header(const char* rate_unit) {
  std::printf("  %-8s %12s %12s %12s %9s  %s\n", "", "median ms", "min ms", "max ms", rate_unit,
              "schedule / method");
}

// Milliseconds with three decimals, six below one (three decimals printed a call of 171 ns as
// 0.000).
std::string ms_text(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ns >= 1e6 ? "%.3f" : "%.6f", ns / 1e6);
  return buf;
}

void print_table_row(const char* what, const bench::Record& r, const std::string& prefix,
                     const char* rate_key, const std::string& note) {
  std::printf("  %-8s %12s %12s %12s %9.2f  %s\n", what, ms_text(number(r, prefix + "median_ns")).c_str(),
              ms_text(number(r, prefix + "min_ns")).c_str(), ms_text(number(r, prefix + "max_ns")).c_str(),
              number(r, prefix + rate_key), note.c_str());
}

void print(const CommonArgs& args, const bench::Record& r) {
  if (args.json) {
    std::cout << r.to_json() << "\n" << std::flush;
    return;
  }
  const auto shape = std::get<std::vector<std::int64_t>>(*r.find("shape"));
  const std::string op = text(r, "op");
  std::printf("%s %s ", op.c_str(), text(r, "dtype").c_str());
  if (op == "qlinear-matmul") {
    const auto b_range = std::get<std::vector<std::int64_t>>(*r.find("b_range"));
    std::printf("MxNxK %s, B in [%lld, %lld]", shape_text(shape, "x").c_str(),
                static_cast<long long>(b_range[0]), static_cast<long long>(b_range[1]));
  } else {
    std::printf("{%s} axis %lld %s%s", shape_text(shape, ",").c_str(),
                static_cast<long long>(number(r, "axis")), text(r, "direction").c_str(),
                std::get<bool>(*r.find("exclusive")) ? " exclusive" : "");
  }
  std::printf(", %lld threads, isa %s, %lld repetitions\n", static_cast<long long>(number(r, "threads")),
              text(r, "isa").c_str(), static_cast<long long>(number(r, "repetitions")));
  if (op == "qlinear-matmul") {
    print_table_header("GOPS");
    print_table_row("hetkern", r, "", "gops", text(r, "schedule"));
    const auto roof = [&] {
      const double peak = number(r, "peak_gops");
      if (std::isnan(peak)) return;
      std::printf("  roof %.1f GOPS (%s): hetkern at %.0f%%", peak, text(r, "peak_method").c_str(),
                  100 * number(r, "gops") / peak);
      if (const double onednn = number(r, "onednn_gops"); !std::isnan(onednn))
        std::printf(", oneDNN at %.0f%%", 100 * onednn / peak);
      std::printf("\n");
    };
    if (std::isnan(number(r, "onednn_median_ns"))) {
      std::printf("  oneDNN   unavailable: %s\n", text(r, "onednn_reason").c_str());
      roof();
      return;
    }
    print_table_row("oneDNN", r, "onednn_", "gops", text(r, "onednn_impl"));
    std::printf("  hetkern time / oneDNN time: %.3f; oneDNN differs from hetkern's exact result in "
                "%lld of %lld outputs\n",
                number(r, "time_vs_baseline"), static_cast<long long>(number(r, "onednn_mismatches")),
                static_cast<long long>(shape[0] * shape[1]));
    roof();
  } else {
    print_table_header("GB/s");
    print_table_row("hetkern", r, "", "gbps", text(r, "schedule"));
    print_table_row("copy", r, "copy_", "gbps", text(r, "copy_method"));
    std::printf("  hetkern time / copy time: %.3f\n", number(r, "time_vs_baseline"));
  }
}

void add_scan_bench(CLI::App& bench, const char* name, Operator op) {
  auto common = std::make_shared<CommonArgs>();
  auto args = std::make_shared<ProblemArgs>();
  CLI::App* cmd = bench.add_subcommand(
      name, std::string("time ") + std::string(name_of(op)) + " against a copy of the same bytes");
  add_problem_options(*cmd, *args, true);
  add_common_options(*cmd, *common, "scan.parallel(threads=2)");
  cmd->callback([common, args, op] {
    apply_isa_cap(*common);
    bench::ScanCase c;
    c.op = op;
    c.dtype = data_type_option("--dtype", args->dtype);
    c.shape = args->shape;
    c.options = scan_options(*args);
    if (!common->schedule.empty()) c.schedule = Schedule::parse(common->schedule);
    c.threads = common->threads;
    print(*common, bench::bench_scan(c, common->timing));
  });
}

void add_qmm_bench(CLI::App& bench) {
  auto common = std::make_shared<CommonArgs>();
  auto args = std::make_shared<QmmBenchArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "qlinear-matmul",
      "time quantized matrix multiplication against oneDNN's int8 matmul on the same data");
  add_problem_options(*cmd, *args, false);
  add_list_option(*cmd, "--b-range", args->b_range, "LO,HI: B's values (default: its type's full range)",
                  whole_number_within(std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  cmd->add_option("--b-layout", args->b_layout,
                  "how B {K,N} lies: rows (row-major, the default) or columns (each column contiguous: "
                  "B held as its transpose, PyTorch's Linear weight), for hetkern and oneDNN alike")
      ->check(CLI::IsMember({"rows", "columns"}));
  cmd->add_flag("--packed-b", args->packed_b,
                 "constant weights: B packed once by hk::pack_b and oneDNN's B reordered once into "
                 "its own layout, before timing");
  add_common_options(*cmd, *common, "qmm.parallel(threads=2)");
  cmd->callback([common, args] {
    apply_isa_cap(*common);
    check_qmm_args(*args);
    if (!args->b_range.empty() && args->b_range.size() != 2)
      throw CLI::ValidationError("--b-range", "needs two values LO,HI");
    bench::QmmCase c;
    c.m = args->shape[0];
    c.n = args->shape[1];
    c.k = args->shape[2];
    c.a_type = data_type_option("--types", args->types[0]);
    c.b_type = data_type_option("--types", args->types[1]);
    c.out_type = data_type_option("--types", args->types[2]);
    if (!args->b_range.empty()) c.b_range = std::pair(args->b_range[0], args->b_range[1]);
    if (!common->schedule.empty()) c.schedule = Schedule::parse(common->schedule);
    c.threads = common->threads;
    c.b_layout = args->b_layout == "columns" ? bench::BLayout::columns : bench::BLayout::rows;
    c.packed_b = args->packed_b;
    bench::Record r = bench::bench_qmm(c, common->timing);
    // The host kernels' compute roof, for a call that runs on the host alone.
    const std::string schedule = text(r, "schedule");
    if (schedule.rfind("qmm.tiled", 0) == 0 || schedule.rfind("qmm.parallel", 0) == 0) {
      const bench::Peak peak = bench::measured_peak(active_isa(), int(number(r, "threads")));
      r.set("peak_gops", peak.gops > 0 ? bench::Record::Value(peak.gops) : bench::Record::Value());
      r.set("peak_method", peak.method);
    }
    print(*common, r);
  });
}

}  // namespace

void add_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand(
      "bench", "time one operator case next to its baseline (a copy, oneDNN) in the same process, or "
               "a sweep of cases (--sweep) into tables and plots");
  bench->require_subcommand(0, 1);
  add_scan_bench(*bench, "cumsum", Operator::cumulative_sum);
  add_scan_bench(*bench, "cumprod", Operator::cumulative_product);
  add_qmm_bench(*bench);
  add_bench_sweep(*bench);
}

}  // namespace hk::cli

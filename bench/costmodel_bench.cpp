// hetkern-costmodel-bench: how close the untuned choice (the cost model with this machine's rates,
// or the heuristic) comes to the best schedule of the tuner's whole space, shape by shape.
//
//   hetkern-costmodel-bench [--shapes FILE] [--quick] [--seconds S] [--shape-budget S] [--db PATH]
//
// For each shape of FILE (bench/costmodel_shapes.txt: home, operator, types, shape, axis), with a
// fresh tuning database (no records: every call is untuned): the untuned call's plan and its time,
// then every candidate of the tuner's schedule space (hk::schedule_space; device tensors: its
// offload strategies and each offload strategy's defaults) timed the same way, and, after the
// OpenMP block time the rates were measured under, the table:
// shape, home, untuned choice, its time, best schedule, best time, ratio, and the share of shapes
// within 1.25x. A candidate whose first run takes 4x the best time so far is not timed further,
// and the rest of its strategy is skipped when it takes 8x (neither can be the best); once a
// shape has used --shape-budget seconds, each remaining candidate is timed by one run. Every
// candidate's first run is checked against the reference. --quick keeps the shapes of at most
// 2^18 elements or multiply-adds and takes the median of 3 runs: a smoke test for machines
// without a GPU (the offload strategies then run on the host fallback).
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>
#include <unistd.h>

#include "bench/timing.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/tuning/dispatch.hpp"
#include "runtime/tuning/quantile.hpp"
#include "runtime/tuning/tuner_problem.hpp"

namespace {

using namespace hk;
using Clock = std::chrono::steady_clock;
using detail::CumulativeCall;
using detail::DataHome;
using detail::QmmProblem;

struct Shape {
  DataHome home = DataHome::host;
  TuneProblem problem;
  std::string text;  // as written in the file
};

struct Options {
  std::string shapes = "bench/costmodel_shapes.txt";
  std::string db;
  bool quick = false;
  double seconds = 0.05;       // full measurement of one candidate
  double shape_budget = 8;     // per shape, before candidates get one run each
};

constexpr double quick_max_work = double(1 << 18);
constexpr double prune_candidate = 4, prune_strategy = 8;

std::vector<std::int64_t> numbers(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
  return out;
}

DataType type_named(const std::string& n) {
  for (const DataType t : {DataType::float32, DataType::float64, DataType::float16, DataType::bfloat16,
                           DataType::int32, DataType::uint32, DataType::int64, DataType::uint64, DataType::int8,
                           DataType::uint8})
    if (n == name_of(t)) return t;
  if (n == "u8") return DataType::uint8;
  if (n == "s8") return DataType::int8;
  throw std::runtime_error("unknown type " + n);
}

// One shape per line: HOME OP TYPES SHAPE [AXIS]; HOME host|device, OP cumsum|cumprod|qmm, TYPES
// one type (scans) or A,B,output (qmm), SHAPE the sizes (qmm: M,N,K); # comments.
std::vector<Shape> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Shape> out;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::stringstream words(line);
    std::string home, op, types, shape, axis = "0";
    if (!(words >> home)) continue;
    if (!(words >> op >> types >> shape) || (home != "host" && home != "device"))
      throw std::runtime_error(path + ":" + std::to_string(number) + ": want HOME OP TYPES SHAPE [AXIS]");
    words >> axis;
    Shape s;
    s.home = home == "host" ? DataHome::host : DataHome::device;
    s.problem.op = op == "qmm" ? Operator::quantized_linear_matmul
                   : op == "cumprod" ? Operator::cumulative_product : Operator::cumulative_sum;
    std::stringstream t(types);
    for (std::string item; std::getline(t, item, ',');) s.problem.types.push_back(type_named(item));
    s.problem.shape = numbers(shape);
    s.problem.options.axis = std::stoi(axis);
    s.text = op + " " + types + " {" + shape + "}" + (op == "qmm" ? "" : " axis=" + axis);
    out.push_back(std::move(s));
  }
  return out;
}

double work_of(const TuneProblem& p) {
  double w = 1;
  for (const auto s : p.shape) w *= double(s);
  return w;
}

// Runs one schedule of the shape, on its host tensors or on device copies of them.
class Runner {
 public:
  explicit Runner(const Shape& s) : shape_(s), w_(s.problem) {
    if (s.home == DataHome::host) return;
    if (w_.is_scan()) {
      const CumulativeCall& c = w_.scan_call();
      bytes_out_ = std::size_t(c.output.desc.element_count() * size_of(c.output.desc.dtype()));
      in_ = DeviceBuffer(std::size_t(c.input.desc.element_count() * size_of(c.input.desc.dtype())));
      out_ = DeviceBuffer(bytes_out_);
      in_.upload(c.input.data, in_.bytes());
    } else {
      const QuantizedMatMulArgs& a = w_.qmm_args();
      in_ = DeviceBuffer(std::size_t(a.a.desc.element_count()));
      b_ = DeviceBuffer(std::size_t(a.b.desc.element_count()));
      in_.upload(a.a.data, in_.bytes());
      b_.upload(a.b.data, b_.bytes());
      const QmmProblem& p = w_.qmm_problem();
      bytes_out_ = std::size_t(p.M * p.N);
      out_ = DeviceBuffer(bytes_out_);
    }
  }

  // The untuned call's plan, as dispatch chooses it for this home.
  Schedule untuned() const {
    if (w_.is_scan()) return detail::to_schedule(detail::dispatch_scan(w_.scan_call(), {}, shape_.home));
    return detail::to_schedule(detail::dispatch_qmm(w_.qmm_problem(), {}, shape_.home));
  }

  std::vector<Schedule> candidates() const {
    std::vector<Schedule> out;
    const bool device = shape_.home == DataHome::device;
    for (auto& s : schedule_space(shape_.problem))
      // Tensors in device memory take the GPU strategies: one GPU's (.offload*) or several's (.devices).
      if (!device || s.strategy().find(".offload") != std::string::npos ||
          s.strategy().find(".devices") != std::string::npos)
        out.push_back(std::move(s));
    if (device) {
      // The space leaves the offload strategies out without a GPU: their defaults at least.
      const std::vector<const char*> scans = {"scan.offload_rows", "scan.offload_warp_rows", "scan.offload_columns",
                                              "scan.offload_chained"};
      const std::vector<const char*> qmm = {"qmm.offload_mma", "qmm.offload"};
      for (const char* n : w_.is_scan() ? scans : qmm) {
        try {
          out.push_back(w_.planned(Schedule(n)));
        } catch (const Error&) {
          // Not legal for this shape.
        }
      }
    }
    return out;
  }

  void run(const Schedule& s) {
    if (shape_.home == DataHome::host) return w_.run(s);
    if (w_.is_scan()) {
      const CumulativeCall& c = w_.scan_call();
      const DeviceConstTensor in{c.input.desc, &in_};
      const DeviceTensor out{c.output.desc, &out_};
      if (c.product) cumulative_product(in, out, c.options, s);
      else cumulative_sum(in, out, c.options, s);
    } else {
      const QuantizedMatMulArgs& h = w_.qmm_args();
      const DeviceQuantizedMatMulArgs a{.a = {h.a.desc, &in_}, .a_scale = h.a_scale, .a_zero_point = h.a_zero_point,
                                        .b = {h.b.desc, &b_}, .b_scale = h.b_scale, .b_zero_point = h.b_zero_point,
                                        .output_scale = h.output_scale, .output_zero_point = h.output_zero_point};
      const QmmProblem& p = w_.qmm_problem();
      quantized_linear_matmul(a, DeviceTensor{TensorDesc(p.out_type, {p.M, p.N}), &out_}, s);
    }
  }

  // Whether the last run's result is the reference's (device results are copied back for it).
  bool correct() {
    if (shape_.home == DataHome::device) {
      void* host = w_.is_scan() ? w_.scan_call().output.data : w_.qmm_problem().out;
      out_.download(host, bytes_out_);
    }
    return w_.matches_reference();
  }

 private:
  const Shape& shape_;
  detail::TuneWorkload w_;
  DeviceBuffer in_, b_, out_;
  std::size_t bytes_out_ = 0;
};

std::string time_text(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

struct Row {
  std::string shape, home, untuned, best;
  double untuned_s = 0, best_s = 0;
  std::size_t candidates = 0;
};

Row measure(const Shape& shape, const Options& o) {
  Runner r(shape);
  Row row{shape.text, shape.home == DataHome::host ? "host" : "device", r.untuned().to_string(), "", 0, 0, 0};
  // A checked warm-up run (device scratch, caches), then one timed run, or the full measurement.
  const bench::TimingOptions full_timing{o.quick ? 0.0 : o.seconds, 3};
  auto timed = [&](const Schedule& s, bool full) {
    r.run(s);
    if (!r.correct()) throw std::runtime_error(shape.text + ": " + s.to_string() + " differs from the reference");
    if (!full) return detail::wall_seconds([&] { r.run(s); });
    const std::function<void()> f = [&] { r.run(s); };
    return bench::time_interleaved(std::span(&f, 1), full_timing).front().median_ns * 1e-9;
  };
  const Schedule untuned = Schedule::parse(row.untuned);
  row.untuned_s = timed(untuned, true);
  row.best = row.untuned;
  row.best_s = row.untuned_s;
  const auto start = Clock::now();
  std::map<std::string, bool> skipped;  // strategies pruned
  for (const Schedule& s : r.candidates()) {
    if (s == untuned || skipped[s.strategy()]) continue;
    ++row.candidates;
    const bool in_budget = std::chrono::duration<double>(Clock::now() - start).count() < o.shape_budget;
    const double first = timed(s, false);
    if (first > prune_strategy * row.best_s) skipped[s.strategy()] = true;
    const double t = !in_budget || first > prune_candidate * row.best_s ? first : timed(s, true);
    if (t < row.best_s) {
      row.best_s = t;
      row.best = s.to_string();
    }
  }
  return row;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--shapes") o.shapes = value();
    else if (a == "--db") o.db = value();
    else if (a == "--quick") o.quick = true;
    else if (a == "--seconds") o.seconds = std::stod(value());
    else if (a == "--shape-budget") o.shape_budget = std::stod(value());
    else throw std::runtime_error("unknown argument " + a + " (see the comment at the top of bench/costmodel_bench.cpp)");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  std::vector<Shape> shapes = read_shapes(o.shapes);
  if (o.quick) std::erase_if(shapes, [](const Shape& s) { return work_of(s.problem) > quick_max_work; });
  // A fresh database: no record decides any call, only the cost model or the heuristic.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hetkern-costmodel-" + std::to_string(getpid()));
  const std::string db = o.db.empty() ? (dir / "tuning.sqlite").string() : o.db;
  setenv("HETKERN_TUNING_DB", db.c_str(), 1);
  unsetenv("HETKERN_SCHEDULE");
  warm_up_offload();
  const auto t0 = Clock::now();
  const auto rates = calibrate(db, o.db.empty());
  std::printf("machine rates: %s (%.2f s), database %s\n", rates ? "measured" : "none, no GPU",
              std::chrono::duration<double>(Clock::now() - t0).count(), db.c_str());
  // The rates hold the OpenMP environment's costs: with a block time of 0 every host parallel
  // call wakes its team (docs/tuning.md), so the table says which environment it was measured in.
  const int block_time = kmp_get_blocktime();
  std::printf("OpenMP block time: %d ms%s\n", block_time,
              block_time == 0 ? " (every host parallel call wakes its team)" : "");
  reset_dispatch();
  std::printf("%-44s %-6s %-48s %11s %-48s %11s %6s\n", "shape", "home", "untuned choice", "time", "best schedule",
              "best time", "ratio");
  int within = 0, n = 0;
  for (const Shape& s : shapes) {
    const Row r = measure(s, o);
    const double ratio = r.untuned_s / r.best_s;
    within += ratio <= 1.25;
    ++n;
    std::printf("%-44s %-6s %-48s %11s %-48s %11s %5.2fx\n", r.shape.c_str(), r.home.c_str(), r.untuned.c_str(),
                time_text(r.untuned_s).c_str(), r.best.c_str(), time_text(r.best_s).c_str(), ratio);
    std::fflush(stdout);
  }
  std::printf("within 1.25x of the best: %d of %d shapes (%.0f%%)\n", within, n, n ? 100.0 * within / n : 0.0);
  if (o.db.empty()) std::filesystem::remove_all(dir);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "hetkern-costmodel-bench: %s\n", e.what());
  return 1;
}

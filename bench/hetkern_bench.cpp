// hetkern-bench: the goal cases of the host-schedules issue under Google Benchmark, each next to
// its baseline measured on the same data: the copies for the scans, oneDNN for the quantized
// matmul. Besides Google Benchmark's flags: --threads=N (default: the affinity mask's CPUs) and
// --isa=LEVEL (caps hetkern and oneDNN alike).
#include <benchmark/benchmark.h>

#include <charconv>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "bench/qmm_bench.hpp"
#include "bench/scan_bench.hpp"
#include "bench/threads.hpp"

namespace {

using hk::DataType;
using hk::bench::QmmCase;
using hk::bench::QmmWorkload;
using hk::bench::ScanCase;
using hk::bench::ScanWorkload;

int requested_threads = 0;

// The workload of the case being measured. Benchmarks of one case are registered (and run) one
// after another, so keeping only the latest one, of either operator, bounds memory to one case.
// Keys name the operator, so a key always comes back with the same workload type.
template <class Workload, class Case>
Workload& workload_for(const Case& c, const std::string& key) {
  static std::shared_ptr<void> current;
  static std::string current_key;
  if (current_key != key) {
    current.reset();
    current_key.clear();
    current = std::make_shared<Workload>(c);
    current_key = key;
  }
  return *static_cast<Workload*>(current.get());
}

std::string shape_text(const std::vector<std::int64_t>& shape, char separator) {
  std::string text;
  for (const std::int64_t s : shape) text += (text.empty() ? "" : std::string(1, separator)) + std::to_string(s);
  return text;
}

// Runs `body` for one benchmark, turning a refused case into a skipped benchmark with the reason.
void guarded(benchmark::State& state, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_scan(DataType dtype, std::vector<std::int64_t> shape, int axis) {
  const std::string name = "cumsum/" + std::string(hk::name_of(dtype)) + "/" +
                           shape_text(shape, ',') + "/axis" + std::to_string(axis);
  using Run = void (ScanWorkload::*)();
  const std::pair<const char*, Run> runs[] = {{"hetkern", &ScanWorkload::run_hetkern},
                                              {"copy", &ScanWorkload::run_streaming_copy},
                                              {"memcpy", &ScanWorkload::run_memcpy}};
  for (const auto& entry : runs) {
    const auto [kind, run] = entry;
    benchmark::RegisterBenchmark((name + "/" + kind).c_str(), [=](benchmark::State& state) {
      guarded(state, [&] {
        ScanCase c;
        c.dtype = dtype;
        c.shape = shape;
        c.options.axis = axis;
        c.threads = requested_threads;
        ScanWorkload& w = workload_for<ScanWorkload>(c, name);
        (w.*run)();
        for (auto _ : state) (w.*run)();
        state.SetBytesProcessed(state.iterations() * w.bytes());
        state.SetItemsProcessed(state.iterations() * w.bytes() / 2 / std::int64_t(hk::size_of(dtype)));
        state.SetLabel(std::string_view(kind) == "hetkern" ? w.schedule_text() : std::string(kind));
      });
    })->UseRealTime()->Unit(benchmark::kMillisecond);
  }
}

void register_qmm(std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::string name = "qlinear-matmul/uint8,int8,uint8/" + shape_text({m, n, k}, 'x') + "/b[-64,63]";
  auto make_case = [=] {
    QmmCase c;
    c.m = m;
    c.n = n;
    c.k = k;
    c.b_range = std::pair(-64, 63);
    c.threads = requested_threads;
    return c;
  };
  // items_per_second is then operations per second.
  auto count_ops = [](benchmark::State& state, const QmmWorkload& w) {
    state.SetItemsProcessed(state.iterations() * w.ops());
  };
  benchmark::RegisterBenchmark((name + "/hetkern").c_str(), [=](benchmark::State& state) {
    guarded(state, [&] {
      QmmWorkload& w = workload_for<QmmWorkload>(make_case(), name);
      w.run_hetkern();
      for (auto _ : state) w.run_hetkern();
      count_ops(state, w);
      state.SetLabel(w.schedule_text());
    });
  })->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "/onednn").c_str(), [=](benchmark::State& state) {
    guarded(state, [&] {
      QmmWorkload& w = workload_for<QmmWorkload>(make_case(), name);
      hk::bench::OnednnMatmul& onednn = w.onednn();
      if (!onednn.available()) return state.SkipWithError(onednn.unavailable_reason().c_str());
      w.run_hetkern();
      onednn.run();
      state.counters["mismatches"] = double(w.onednn_mismatches());
      for (auto _ : state) onednn.run();
      count_ops(state, w);
      state.SetLabel(onednn.implementation());
    });
  })->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_goal_cases() {
  for (const DataType t : {DataType::float32, DataType::int32, DataType::float16}) {
    register_scan(t, {67108864}, 0);
    register_scan(t, {4096, 16384}, 1);
    register_scan(t, {4096, 16384}, 0);
  }
  register_qmm(1024, 1024, 1024);
  register_qmm(2048, 2048, 2048);
  register_qmm(128, 4096, 4096);
  register_qmm(16, 4096, 4096);
}

// Takes --threads=N and --isa=LEVEL out of argv; false (after a message) when one is malformed.
bool take_own_flags(int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--threads=")) {
      const std::string_view value = arg.substr(10);
      const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), requested_threads);
      if (error != std::errc() || end != value.data() + value.size() || requested_threads < 1) {
        std::fprintf(stderr, "hetkern-bench: --threads needs a positive integer, got '%.*s'\n",
                     int(value.size()), value.data());
        return false;
      }
    } else if (arg.starts_with("--isa=")) {
      try {
        hk::set_max_isa(hk::parse_isa(arg.substr(6)));
      } catch (const hk::Error& e) {
        std::fprintf(stderr, "hetkern-bench: %s\n", e.what());
        return false;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (!take_own_flags(argc, argv) || benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("hetkern_threads", std::to_string(hk::bench::use_threads(requested_threads)));
  benchmark::AddCustomContext("hetkern_isa", hk::name_of(hk::active_isa()));
  benchmark::AddCustomContext("onednn_version", hk::bench::onednn_version());
  register_goal_cases();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

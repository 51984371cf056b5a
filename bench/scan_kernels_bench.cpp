// The host scan kernels alone, without validation, dispatch or threads: each instruction-set
// level's row, fold and columns kernels on data that stays in L1 and L2, as the bytes they read a
// second (128 bytes over that rate are the nanoseconds per 128 bytes that docs/performance.md
// quotes). A kernel's cost here is what its arithmetic adds to a scan from memory
// (hetkern-overlap-bench), and an A/B of two builds of libhetkern compares the kernels alone.
// Registered statically: hetkern-bench runs them next to the goal cases
// (--benchmark_filter=kernels/ selects them). Levels above the CPU's are left out.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "bench/buffer.hpp"
#include "hetkern/info.hpp"
#include "schedules/scan_kernels.hpp"

namespace {

using hk::detail::ScanKernelSet;

// A row of 8192 elements (32 KB of float32 each way) and columns of 16 rows of 1024.
constexpr std::int64_t row_elements = 8192, column_width = 1024, column_rows = 16;

enum class Kernel { row, fold, columns };

template <class T, class Op> void run(benchmark::State& state, const ScanKernelSet& set, Kernel kernel) {
  const auto& k = set.get<T, Op>();
  const std::int64_t n = kernel == Kernel::columns ? column_width * column_rows : row_elements;
  // Page-aligned: a heap block's alignment depends on what came before it, and vectors that
  // straddle cache lines cost two loads, which would time the allocator's history. Ones: products
  // stay 1 and sums exact, so no value slows the arithmetic.
  const auto bytes = std::size_t(n) * sizeof(T);
  hk::bench::Buffer in(bytes, 1), out(bytes, 1);
  T* x = reinterpret_cast<T*>(in.data());
  T* y = reinterpret_cast<T*>(out.data());
  std::fill(x, x + n, T(1.0f));
  using Acc = hk::detail::AccOf<T>;
  const Acc start = hk::detail::line_start<Op, Acc>(false);
  for (auto _ : state) {
    if (kernel == Kernel::row) {
      benchmark::DoNotOptimize(k.row(x, y, n, start, {}));
    } else if (kernel == Kernel::fold) {
      benchmark::DoNotOptimize(k.fold(x, n));
    } else {
      k.columns(x, y, column_width, column_rows, column_width, column_width, false, false);
    }
    benchmark::ClobberMemory();
  }
  // Bytes read: the input once (columns read their accumulators from L1 besides).
  state.SetBytesProcessed(state.iterations() * n * std::int64_t(sizeof(T)));
}

template <class T, class Op>
void add(const std::string& level, const ScanKernelSet& set, const char* type, const char* op) {
  for (const auto& [kernel, name] : {std::pair{Kernel::row, "row"}, {Kernel::fold, "fold"}, {Kernel::columns, "columns"}})
    benchmark::RegisterBenchmark(("kernels/" + level + "/" + type + "/" + op + "/" + name).c_str(),
                                 [&set, kernel](benchmark::State& s) { run<T, Op>(s, set, kernel); });
}

void add_level(const std::string& level, const ScanKernelSet& set) {
  using hk::detail::Product, hk::detail::Sum;
  add<float, Sum>(level, set, "float32", "sum");
  add<float, Product>(level, set, "float32", "product");
  add<hk::detail::float16_t, Sum>(level, set, "float16", "sum");
  add<double, Sum>(level, set, "float64", "sum");
  add<std::int32_t, Sum>(level, set, "int32", "sum");
}

[[maybe_unused]] const bool registered = [] {
  for (const hk::Isa isa : {hk::Isa::avx512, hk::Isa::avx2, hk::Isa::portable})
    if (hk::detected_isa() >= isa) add_level(hk::name_of(isa), hk::detail::scan_kernels(isa));
  return true;
}();

}  // namespace

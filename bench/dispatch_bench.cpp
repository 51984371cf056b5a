// The cost of choosing a schedule for a call that names none, once its class was seen: an
// in-memory lookup that must stay well under a microsecond. Registered statically, so
// hetkern-bench runs these next to the goal cases (--benchmark_filter=dispatch selects them).
#include <benchmark/benchmark.h>

#include <vector>

#include "hetkern/operators.hpp"
#include "runtime/tuning/dispatch.hpp"

namespace {

void dispatch_scan(benchmark::State& state) {
  std::vector<float> x(64 * 64), y(x.size());
  const hk::TensorDesc desc(hk::DataType::float32, {64, 64});
  hk::detail::CumulativeCall call{false, {desc, x.data()}, {desc, y.data()}, {.axis = 1}};
  hk::detail::validate(call);
  benchmark::DoNotOptimize(hk::detail::dispatch_scan(call));  // the first lookup fills the cache
  for (auto _ : state) benchmark::DoNotOptimize(hk::detail::dispatch_scan(call));
}
BENCHMARK(dispatch_scan)->Name("dispatch/cumsum/float32/64,64/cached");

// A 32 x 16 x 48 u8 x s8 -> u8 call with per-tensor parameters, A's zero point among them.
struct SmallQmm {
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(32 * 48), out = std::vector<std::uint8_t>(32 * 16),
                            zero = {128};
  std::vector<std::int8_t> b = std::vector<std::int8_t>(48 * 16);
  std::vector<float> scale = {0.5f};
  hk::QuantizedMatMulArgs args;
  hk::Tensor y{hk::TensorDesc(hk::DataType::uint8, {32, 16}), out.data()};

  SmallQmm() {
    const hk::TensorDesc s(hk::DataType::float32, {1});
    args.a = {hk::TensorDesc(hk::DataType::uint8, {32, 48}), a.data()};
    args.b = {hk::TensorDesc(hk::DataType::int8, {48, 16}), b.data()};
    args.a_scale = args.b_scale = args.output_scale = {s, scale.data()};
    args.a_zero_point = args.output_zero_point = hk::ConstTensor{hk::TensorDesc(hk::DataType::uint8, {1}), zero.data()};
  }
};

void dispatch_qmm(benchmark::State& state) {
  const SmallQmm call;
  const hk::detail::QmmProblem p = hk::detail::validate(call.args, call.y);
  benchmark::DoNotOptimize(hk::detail::dispatch_qmm(p));
  for (auto _ : state) benchmark::DoNotOptimize(hk::detail::dispatch_qmm(p));
}
BENCHMARK(dispatch_qmm)->Name("dispatch/qlinear-matmul/uint8,int8,uint8/32x16x48/cached");

// Validating a call's arguments, which every call pays before its dispatch: the checks of its
// tensors and the read of its quantization parameters.
void validate_qmm(benchmark::State& state) {
  const SmallQmm call;
  for (auto _ : state) benchmark::DoNotOptimize(hk::detail::validate(call.args, call.y));
}
BENCHMARK(validate_qmm)->Name("validate/qlinear-matmul/uint8,int8,uint8/32x16x48");

// A whole call too small to cost anything but its overhead (validation, dispatch, the kernel's
// setup): what the Python binding's overhead is measured against (bench/python_overhead.py).
void call_tiny_scan(benchmark::State& state) {
  std::vector<float> x(12, 1.0f), y(12);
  const hk::TensorDesc desc(hk::DataType::float32, {1, 1, 3, 4});
  for (auto _ : state) {
    hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 3});
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(call_tiny_scan)->Name("call/cumsum/float32/1,1,3,4");

}  // namespace

// Reproducible data and reference results for the tuner.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "hetkern/error.hpp"
#include "runtime/tuning/heuristic.hpp"
#include "runtime/tuning/tuner_problem.hpp"

namespace hk::detail {
namespace {

// SplitMix64 over (seed, index): element i depends only on i.
std::uint64_t random_bits(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double unit(std::uint64_t bits) { return double(bits >> 11) * 0x1p-53; }

// Sums: values in [-1, 1); products: magnitudes in [0.8, 1.25), so that lines of a few thousand
// stay finite. Integers: any bits (they wrap).
template <class T> void fill_scan(std::vector<std::byte>& buf, bool product) {
  T* p = reinterpret_cast<T*>(buf.data());
  const std::size_t n = buf.size() / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = random_bits(7, i);
    if constexpr (std::is_integral_v<T>) {
      p[i] = static_cast<T>(product ? (r & 3) + 1 : r);
    } else {
      const double v = product ? 0.8 + 0.45 * unit(r) : 2 * unit(r) - 1;
      p[i] = static_cast<T>(v);
    }
  }
}

template <class T> bool close_scan(const std::byte* got, const std::byte* want, std::size_t bytes) {
  if constexpr (std::is_integral_v<T>) {
    return std::memcmp(got, want, bytes) == 0;
  } else {
    // Accumulation orders differ between schedules (blocked adds block carries), so results may
    // differ in the last bits of the accumulator before rounding to T.
    const double rel = std::is_same_v<T, double>       ? 0x1p-48
                       : std::is_same_v<T, float>      ? 0x1p-20
                       : std::is_same_v<T, bfloat16_t> ? 0x1p-6
                                                       : 0x1p-8;
    const T* g = reinterpret_cast<const T*>(got);
    const T* w = reinterpret_cast<const T*>(want);
    for (std::size_t i = 0; i < bytes / sizeof(T); ++i) {
      const double a = to_double(g[i]), b = to_double(w[i]);
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      if (!(std::fabs(a - b) <= rel * std::max(1.0, std::fabs(b)))) return false;
    }
    return true;
  }
}

// Elements up to which the tuner's expected scan results come from the reference algorithm.
constexpr std::int64_t reference_scan_max_elements = std::int64_t(1) << 24;
// Multiply-adds up to which the tuner's expected results come from the reference algorithm
// (about a second).
constexpr double reference_qmm_max_work = double(std::int64_t(1) << 30);

// Addresses for validating a problem before anything is allocated for it, never read: spans of
// the given bytes one after another from `after` (past the call's real tensors), so that no output
// overlaps an input. Spans past the end of the address space describe no buffer and are refused.
std::vector<void*> placeholders(std::initializer_list<std::int64_t> bytes, std::uintptr_t after) {
  std::vector<void*> at;
  auto next = after;
  for (const std::int64_t b : bytes) {
    // Aligned as allocations are (at least 16 bytes), for the plans that look at alignment.
    if (next > UINTPTR_MAX - 63)
      throw Error(Errc::invalid_shape, "tune", "shape", "the operands' bytes exceed the address space");
    next = (next + 63) & ~std::uintptr_t(63);
    at.push_back(reinterpret_cast<void*>(next));
    if (b < 0 || std::uint64_t(b) > UINTPTR_MAX - next)
      throw Error(Errc::invalid_shape, "tune", "shape", "the operands' bytes exceed the address space");
    next += std::uintptr_t(b);
  }
  return at;
}

// a * b, refused past 64 bits.
std::int64_t checked_product(std::int64_t a, std::int64_t b) {
  if (a > std::numeric_limits<std::int64_t>::max() / b)
    throw Error(Errc::invalid_shape, "tune", "shape", "an operand's element count exceeds 64 bits");
  return a * b;
}

}  // namespace

TuneWorkload::TuneWorkload(const TuneProblem& problem, bool data) : problem_(problem) {
  if (problem.op != Operator::cumulative_sum && problem.op != Operator::cumulative_product &&
      problem.op != Operator::quantized_linear_matmul)
    throw Error(Errc::invalid_parameter, "tune", "op", std::to_string(int(problem.op)) + " is not an Operator");
  if (is_scan()) {
    if (problem.types.size() != 1)
      throw Error(Errc::invalid_type, "tune", "types", "a scan takes one element type");
    const TensorDesc desc(problem.types[0], problem.shape);
    for (const auto s : problem.shape)
      if (s <= 0) throw Error(Errc::invalid_shape, "tune", "shape", "sizes must be positive");
    // Validation first, in place on a placeholder, so that a bad shape or axis is refused before
    // any allocation.
    std::int64_t n = 1;
    for (const auto s : problem.shape) n = checked_product(n, s);
    const std::int64_t bytes = checked_product(n, std::int64_t(size_of(problem.types[0])));
    static const std::byte anchor{};
    const std::vector<void*> at = placeholders({bytes, bytes}, reinterpret_cast<std::uintptr_t>(&anchor));
    scan_ = {problem.op == Operator::cumulative_product, {desc, at[0]}, {desc, at[0]}, problem.options};
    validate(scan_);
    // Without data (a key, a space, the heuristic's plan) the placeholders stand for the buffers,
    // as apart as real ones: allocating a large shape's took seconds.
    scan_.output.data = at[1];
    if (!data) return;
    a_.resize(std::size_t(bytes));
    output_.resize(a_.size());
    scan_.input.data = a_.data();
    scan_.output.data = output_.data();
    visit_scan_type(problem.types[0], [&](auto t) { fill_scan<decltype(t)>(a_, scan_.product); });
    // The reference walks one element at a time, across the cache when the axis is not the
    // contiguous one (seconds per GiB); past reference_scan_max_elements the heuristic's host
    // schedule, checked against the reference by the test suite, gives the results.
    if (n > reference_scan_max_elements)
      run_scan(scan_, default_scan_plan(scan_));
    else
      reference_cumulative(scan_);
  } else {
    if (problem.types.size() != 3)
      throw Error(Errc::invalid_type, "tune", "types", "the matmul takes three types: A, B, output");
    if (problem.shape.size() != 3)
      throw Error(Errc::invalid_shape, "tune", "shape", "the matmul takes M,N,K");
    const std::int64_t M = problem.shape[0], N = problem.shape[1], K = problem.shape[2];
    for (const auto s : problem.shape)
      if (s <= 0) throw Error(Errc::invalid_shape, "tune", "shape", "sizes must be positive");
    const std::int64_t a_bytes = checked_product(M, K), b_bytes = checked_product(K, N), out_bytes = checked_product(M, N);
    // Centred zero points for unsigned types; an output scale that spreads the results over a
    // few dozen steps (|acc| grows like sqrt(K) * 128 * 64).
    const bool a_unsigned = problem.types[0] == DataType::uint8;
    const bool out_unsigned = problem.types[2] == DataType::uint8;
    a_zero_ = {std::uint8_t(a_unsigned ? 128 : 0)};
    out_zero_ = {std::uint8_t(out_unsigned ? 128 : 0)};
    out_scale_ = {float(std::ldexp(1.0, int(std::ceil(std::log2(std::sqrt(double(K)) * 128 * 64 / 32))) - 8))};
    const TensorDesc scalar_f(DataType::float32, {1});
    // Validation first, on placeholders past the parameters' vectors, so that a bad shape is refused
    // before any allocation.
    const auto end = [](const auto& v) { return reinterpret_cast<std::uintptr_t>(v.data() + v.size()); };
    const std::uintptr_t after =
        std::max({end(a_scale_), end(b_scale_), end(out_scale_), end(a_zero_), end(out_zero_)});
    const std::vector<void*> at = placeholders({a_bytes, b_bytes, out_bytes}, after);
    args_.a = {TensorDesc(problem.types[0], {M, K}), at[0]};
    args_.b = {TensorDesc(problem.types[1], {K, N}), at[1]};
    args_.a_scale = {scalar_f, a_scale_.data()};
    args_.b_scale = {scalar_f, b_scale_.data()};
    args_.output_scale = {scalar_f, out_scale_.data()};
    args_.a_zero_point = ConstTensor{TensorDesc(problem.types[0], {1}), a_zero_.data()};
    args_.output_zero_point = ConstTensor{TensorDesc(problem.types[2], {1}), out_zero_.data()};
    out_tensor_ = {TensorDesc(problem.types[2], {M, N}), at[2]};
    qmm_ = validate(args_, out_tensor_);
    if (!data) return;
    a_.resize(std::size_t(a_bytes));
    b_.resize(std::size_t(b_bytes));
    output_.resize(std::size_t(out_bytes));
    args_.a.data = a_.data();
    args_.b.data = b_.data();
    out_tensor_.data = output_.data();
    qmm_ = validate(args_, out_tensor_);
    for (std::size_t i = 0; i < a_.size(); ++i) a_[i] = std::byte(random_bits(11, i));
    for (std::size_t i = 0; i < b_.size(); ++i) b_[i] = std::byte(random_bits(13, i));
    // The reference takes one output at a time on one thread: a minute at 4096^3, longer than
    // the whole search. Past reference_qmm_max_work the heuristic's host schedule, exact like
    // every schedule and checked against the reference by the test suite, gives the results.
    if (double(M) * double(N) * double(K) > reference_qmm_max_work)
      run_qmm(qmm_, default_qmm_plan(qmm_));
    else
      reference_qmm(qmm_);
  }
  reference_ = output_;
}

void TuneWorkload::run(const Schedule& schedule) {
  if (is_scan())
    run_scan(scan_, plan_scan(scan_, schedule));
  else
    run_qmm(qmm_, plan_qmm(qmm_, schedule));
}

bool TuneWorkload::matches_reference() const {
  if (!is_scan()) return output_ == reference_;
  return visit_scan_type(problem_.types[0], [&](auto t) {
    return close_scan<decltype(t)>(output_.data(), reference_.data(), output_.size());
  });
}

Schedule TuneWorkload::heuristic_schedule() const {
  return is_scan() ? to_schedule(default_scan_plan(scan_)) : to_schedule(default_qmm_plan(qmm_));
}

Schedule TuneWorkload::planned(const Schedule& schedule) const {
  return is_scan() ? to_schedule(plan_scan(scan_, schedule)) : to_schedule(plan_qmm(qmm_, schedule));
}

}  // namespace hk::detail

// The cumulative operators' benchmark against the copy roof (scan_bench.hpp).
#include "bench/scan_bench.hpp"

#include <type_traits>

#include "algorithms/scan_types.hpp"
#include "bench/copy_baseline.hpp"
#include "bench/random.hpp"
#include "bench/threads.hpp"

namespace hk::bench {
namespace {

constexpr std::uint64_t seed = 20260301;

// Bytes of a packed tensor; throws hk::Error for sizes a benchmark cannot allocate.
std::size_t packed_bytes(const TensorDesc& desc) {
  std::size_t bytes = size_of(desc.dtype());
  for (const std::int64_t s : desc.sizes())
    if (s <= 0 || __builtin_mul_overflow(bytes, std::size_t(s), &bytes))
      throw Error(Errc::invalid_shape, "bench", "shape",
                  "every size must be positive and the tensor must fit in memory, got " +
                      desc.to_string());
  return bytes;
}

// Sums: uniform in [-1, 1). Products: factors within 2^-10 of 1, so that even a 2^26-long
// line stays far from overflow and subnormals, which would time something else.
template <class T>
void fill(T* x, std::int64_t n, bool product, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t bits = random_bits(seed, std::uint64_t(i));
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, _Float16> ||
                  std::is_same_v<T, detail::bfloat16_t>) {
      const float u = random_signed_unit(bits);
      x[i] = T(product ? 1 + u * 0x1p-10f : u);
    } else {
      x[i] = T(bits);
    }
  }
}

void fill_input(DataType t, std::byte* p, std::int64_t n, bool product, int threads) {
  switch (t) {
    case DataType::float16: return fill(reinterpret_cast<_Float16*>(p), n, product, threads);
    case DataType::float32: return fill(reinterpret_cast<float*>(p), n, product, threads);
    case DataType::float64: return fill(reinterpret_cast<double*>(p), n, product, threads);
    case DataType::bfloat16: return fill(reinterpret_cast<detail::bfloat16_t*>(p), n, product, threads);
    case DataType::int8: return fill(reinterpret_cast<std::int8_t*>(p), n, product, threads);
    case DataType::uint8: return fill(reinterpret_cast<std::uint8_t*>(p), n, product, threads);
    case DataType::int32: return fill(reinterpret_cast<std::int32_t*>(p), n, product, threads);
    case DataType::uint32: return fill(reinterpret_cast<std::uint32_t*>(p), n, product, threads);
    case DataType::int64: return fill(reinterpret_cast<std::int64_t*>(p), n, product, threads);
    case DataType::uint64: return fill(reinterpret_cast<std::uint64_t*>(p), n, product, threads);
  }
}

}  // namespace

const char* command_name(Operator op) {
  return op == Operator::cumulative_product ? "cumprod" : "cumsum";
}

ScanWorkload::ScanWorkload(const ScanCase& c)
    : case_(c),
      threads_(use_threads(c.threads)),
      desc_(c.dtype, c.shape),
      input_(packed_bytes(desc_), threads_),
      output_(input_.size(), threads_) {
  fill_input(desc_.dtype(), input_.data(), desc_.element_count(),
             c.op == Operator::cumulative_product, threads_);
  schedule_text_ = c.schedule.empty()
                       ? default_schedule(c.op, {desc_, input_.data()}, {desc_, output_.data()},
                                          c.options)
                             .to_string()
                       : c.schedule.to_string();
}

void ScanWorkload::run_hetkern() {
  const ConstTensor x{desc_, input_.data()};
  const Tensor y{desc_, output_.data()};
  if (case_.op == Operator::cumulative_product)
    cumulative_product(x, y, case_.options, case_.schedule);
  else
    cumulative_sum(x, y, case_.options, case_.schedule);
}

void ScanWorkload::run_streaming_copy() {
  streaming_copy(output_.data(), input_.data(), input_.size(), threads_);
}

void ScanWorkload::run_memcpy() {
  parallel_memcpy(output_.data(), input_.data(), input_.size(), threads_);
}

Record bench_scan(const ScanCase& c, const TimingOptions& timing) {
  ScanWorkload w(c);
  const std::function<void()> functions[] = {[&] { w.run_hetkern(); },
                                             [&] { w.run_streaming_copy(); },
                                             [&] { w.run_memcpy(); }};
  const auto stats = time_interleaved(functions, timing);
  const bool streaming_faster = stats[1].median_ns <= stats[2].median_ns;
  const TimingStats& copy = streaming_faster ? stats[1] : stats[2];
  const double bytes = double(w.bytes());

  Record r;
  r.set("op", command_name(c.op));
  r.set("shape", c.shape);
  r.set("dtype", std::string(name_of(c.dtype)));
  r.set("axis", c.options.axis);
  r.set("direction", c.options.direction == Direction::decreasing ? "decreasing" : "increasing");
  r.set("exclusive", c.options.exclusive);
  set_run_fields(r, w.schedule_text(), w.threads(), stats[0]);
  r.set("bytes", w.bytes());
  r.set("gbps", bytes / stats[0].median_ns);
  r.set("copy_method", streaming_faster ? "streaming" : "memcpy");
  r.set("copy_median_ns", copy.median_ns);
  r.set("copy_min_ns", copy.min_ns);
  r.set("copy_max_ns", copy.max_ns);
  r.set("copy_gbps", bytes / copy.median_ns);
  r.set("time_vs_baseline", stats[0].median_ns / copy.median_ns);
  return r;
}

}  // namespace hk::bench

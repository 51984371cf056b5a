// The QuantizedLinearMatMul benchmark against oneDNN's int8 matmul (qmm_bench.hpp).
#include "bench/qmm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bench/random.hpp"
#include "bench/threads.hpp"

namespace hk::bench {
namespace {

constexpr std::uint64_t a_seed = 20260302, b_seed = 20260303;
const TensorDesc one_float(DataType::float32, {1});

std::pair<int, int> type_range(DataType t) {
  return t == DataType::uint8 ? std::pair(0, 255) : std::pair(-128, 127);
}


// Powers of two throughout, with the output's standard deviation near 32 levels: the sum of K
// products of independent uniform values has sigma sqrt(K) * rms(A - za) * rms(B).
QmmQuantization quantization_for(const QmmCase& c, std::pair<int, int> b_range) {
  const double lo = b_range.first, hi = b_range.second;
  const double b_rms = std::sqrt(((hi + lo) / 2) * ((hi + lo) / 2) + ((hi - lo + 1) * (hi - lo + 1) - 1) / 12);
  const double a_rms = 256 / std::sqrt(12.0);
  const double sigma = std::sqrt(double(c.k)) * a_rms * b_rms;
  const int shift = std::clamp(int(std::lround(std::log2(std::max(sigma, 1.0) / 32))), 0, 60);
  QmmQuantization q;
  q.a_scale = 0x1p-7f;
  q.b_scale = 0x1p-7f;
  q.out_scale = std::ldexp(0x1p-14f, shift);
  q.a_zero_point = c.a_type == DataType::uint8 ? 128 : 0;
  q.out_zero_point = c.out_type == DataType::uint8 ? 128 : 0;
  return q;
}

std::size_t bytes_of(std::int64_t rows, std::int64_t cols) { return std::size_t(rows * cols); }

OnednnQmmProblem onednn_problem(const QmmCase& c, const Buffer& a, const Buffer& b,
                                Buffer& out, const QmmQuantization& q) {
  OnednnQmmProblem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.a_type = c.a_type;
  p.b_type = c.b_type;
  p.out_type = c.out_type;
  p.a = a.data();
  p.b = b.data();
  p.out = out.data();
  p.multiplier = (q.a_scale * q.b_scale) / q.out_scale;
  p.a_zero_point = q.a_zero_point;
  p.out_zero_point = q.out_zero_point;
  p.b_columns = c.b_layout == BLayout::columns;
  p.packed_weights = c.packed_b;
  return p;
}

}  // namespace

const char* name_of(BLayout layout) { return layout == BLayout::columns ? "columns" : "rows"; }

const QmmCase& checked_qmm_case(const QmmCase& c) {
  for (const DataType t : {c.a_type, c.b_type, c.out_type})
    if (t != DataType::uint8 && t != DataType::int8)
      throw Error(Errc::invalid_type, "bench", "types",
                  "A, B and the output are uint8 or int8, got " + std::string(name_of(t)));
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 2;
  std::int64_t mk = 0, kn = 0, mnk = 0;
  if (c.m <= 0 || c.n <= 0 || c.k <= 0 || __builtin_mul_overflow(c.m, c.k, &mk) ||
      __builtin_mul_overflow(c.k, c.n, &kn) || __builtin_mul_overflow(mk, c.n, &mnk) || mnk > limit)
    throw Error(Errc::invalid_shape, "bench", "shape",
                "M, N and K must be positive and M*N*K must fit in 62 bits");
  return c;
}

std::pair<int, int> checked_b_range(const QmmCase& c) {
  const auto full = type_range(c.b_type);
  const auto range = c.b_range.value_or(full);
  if (range.first > range.second || range.first < full.first || range.second > full.second)
    throw Error(Errc::invalid_parameter, "bench", "b_range",
                "needs LO <= HI within " + std::string(name_of(c.b_type)) + " [" +
                    std::to_string(full.first) + ", " + std::to_string(full.second) + "], got [" +
                    std::to_string(range.first) + ", " + std::to_string(range.second) + "]");
  return range;
}

QmmWorkload::QmmWorkload(const QmmCase& c)
    : case_(checked_qmm_case(c)),
      threads_(use_threads(c.threads)),
      b_range_(checked_b_range(c)),
      a_(bytes_of(c.m, c.k), threads_),
      b_(bytes_of(c.k, c.n), threads_),
      out_(bytes_of(c.m, c.n), threads_),
      onednn_out_(bytes_of(c.m, c.n), threads_),
      q_(quantization_for(c, b_range_)),
      onednn_isa_(cap_onednn_isa(active_isa())),
      onednn_(onednn_problem(c, a_, b_, onednn_out_, q_)) {
  std::byte* a = a_.data();
  std::byte* b = b_.data();
  const auto b_span = std::uint64_t(b_range_.second - b_range_.first + 1);
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (std::int64_t i = 0; i < c.m * c.k; ++i) a[i] = std::byte(random_bits(a_seed, std::uint64_t(i)));
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (std::int64_t i = 0; i < c.k * c.n; ++i)
    b[i] = std::byte(std::uint8_t(b_range_.first +
                                  std::int64_t(random_bits(b_seed, std::uint64_t(i)) % b_span)));

  args_.a = {TensorDesc(c.a_type, {c.m, c.k}), a};
  // Random values either way: only where element (k, n) lies changes, for both libraries.
  args_.b = {c.b_layout == BLayout::columns ? TensorDesc(c.b_type, {c.k, c.n}, {1, c.k})
                                            : TensorDesc(c.b_type, {c.k, c.n}),
             b};
  args_.a_scale = {one_float, &q_.a_scale};
  args_.b_scale = {one_float, &q_.b_scale};
  args_.output_scale = {one_float, &q_.out_scale};
  if (q_.a_zero_point) args_.a_zero_point = ConstTensor{TensorDesc(c.a_type, {1}), &q_.a_zero_point};
  if (q_.out_zero_point)
    args_.output_zero_point = ConstTensor{TensorDesc(c.out_type, {1}), &q_.out_zero_point};
  out_tensor_ = {TensorDesc(c.out_type, {c.m, c.n}), out_.data()};
  if (c.packed_b) {
    packed_b_ = pack_b(args_.b);
    args_.b = {};
    args_.packed_b = &packed_b_;
    if (onednn_.available()) onednn_.pack_weights();
  }
  schedule_text_ = c.schedule.empty() ? default_schedule(args_, out_tensor_).to_string()
                                      : c.schedule.to_string();
}

void QmmWorkload::run_hetkern() { quantized_linear_matmul(args_, out_tensor_, case_.schedule); }

std::int64_t QmmWorkload::onednn_mismatches() const {
  std::int64_t count = 0;
  for (std::size_t i = 0; i < out_.size(); ++i) count += out_.data()[i] != onednn_out_.data()[i];
  return count;
}

Record bench_qmm(const QmmCase& c, const TimingOptions& timing) {
  QmmWorkload w(c);
  OnednnMatmul& onednn = w.onednn();
  std::vector<std::function<void()>> functions = {[&] { w.run_hetkern(); }};
  // oneDNN's OpenMP calls run on hetkern's libomp: each library takes its turns, as if alone,
  // rather than paying for the other's last call at every switch.
  TimingOptions turns = timing;
  if (onednn.available()) {
    functions.emplace_back([&] { onednn.run(); });
    turns.pause_seconds = spin_pause_seconds();
  }
  const auto stats = time_interleaved(functions, turns);
  const double ops = double(w.ops());
  const QmmQuantization& q = w.quantization();

  Record r;
  r.set("op", "qlinear-matmul");
  r.set("shape", std::vector<std::int64_t>{c.m, c.n, c.k});
  r.set("dtype", std::string(name_of(c.a_type)) + "," + std::string(name_of(c.b_type)) + "," +
                     std::string(name_of(c.out_type)));
  r.set("b_range", std::vector<std::int64_t>{w.b_range().first, w.b_range().second});
  r.set("b_layout", name_of(c.b_layout));
  r.set("packed_b", c.packed_b);
  r.set("a_scale", double(q.a_scale));
  r.set("a_zero_point", int(q.a_zero_point));
  r.set("b_scale", double(q.b_scale));
  r.set("b_zero_point", 0);
  r.set("out_scale", double(q.out_scale));
  r.set("out_zero_point", int(q.out_zero_point));
  set_run_fields(r, w.schedule_text(), w.threads(), stats[0]);
  r.set("ops", w.ops());
  r.set("gops", ops / stats[0].median_ns);
  if (onednn.available()) {
    r.set("onednn_median_ns", stats[1].median_ns);
    r.set("onednn_min_ns", stats[1].min_ns);
    r.set("onednn_max_ns", stats[1].max_ns);
    r.set("onednn_gops", ops / stats[1].median_ns);
    r.set("onednn_mismatches", w.onednn_mismatches());
    r.set("onednn_reason", nullptr);
    r.set("time_vs_baseline", stats[0].median_ns / stats[1].median_ns);
  } else {
    for (const char* key : {"onednn_median_ns", "onednn_min_ns", "onednn_max_ns", "onednn_gops",
                            "onednn_mismatches"})
      r.set(key, nullptr);
    r.set("onednn_reason", onednn.unavailable_reason());
    r.set("time_vs_baseline", nullptr);
  }
  // Without oneDNN, or without an implementation for the case, these are null, not "".
  auto text_or_null = [](std::string s) { return s.empty() ? Record::Value() : Record::Value(std::move(s)); };
  r.set("onednn_isa", text_or_null(w.onednn_isa()));
  r.set("onednn_impl", text_or_null(onednn.implementation()));
  r.set("onednn_version", text_or_null(onednn_version()));
  return r;
}

}  // namespace hk::bench

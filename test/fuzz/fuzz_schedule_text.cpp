// Schedule text on arbitrary bytes: parse refuses with hk::Error(invalid_schedule) or returns a
// schedule whose canonical text parses back to it. A parsed schedule is then bound to every
// operator on small exact problems (integers, so every schedule must agree with the reference to
// the bit): the call refuses it with invalid_schedule, or runs it and matches the reference.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "test/fuzz/fuzz_support.hpp"

using namespace hk;

namespace {

// Parameters that only size thread teams are capped so that one input cannot start thousands.
bool affordable(const Schedule& s) {
  const auto threads = s.find("threads");
  return !threads || threads->size() < 2;
}

template <class Run> void bind(const Schedule& s, std::vector<unsigned char>& out,
                               const std::vector<unsigned char>& expected, Run run) {
  std::vector<unsigned char> before = out;
  try {
    run(s);
  } catch (const Error& e) {
    fuzz::require(e.code() == Errc::invalid_schedule, "a schedule was refused with another code");
    fuzz::require(out == before, "a refused schedule wrote to the output");
    return;
  }
  fuzz::require(out == expected, "a schedule's result differs from the reference");
}

void scan_with(const Schedule& s, bool product) {
  constexpr std::int64_t rows = 5, cols = 7;
  std::vector<std::int32_t> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(i % 5) - 2;
  const TensorDesc d(DataType::int32, {rows, cols});
  const auto run = [&](const Schedule& schedule, std::vector<unsigned char>& y) {
    const CumulativeOptions o{1, Direction::decreasing, true};
    if (product)
      cumulative_product({d, x.data()}, {d, y.data()}, o, schedule);
    else
      cumulative_sum({d, x.data()}, {d, y.data()}, o, schedule);
  };
  std::vector<unsigned char> expected(x.size() * 4, 0), out(x.size() * 4, 0);
  run(Schedule("reference"), expected);
  bind(s, out, expected, [&](const Schedule& schedule) { run(schedule, out); });
}

void qmm_with(const Schedule& s) {
  constexpr std::int64_t M = 3, K = 70, N = 19;  // depth and columns past one pack block
  std::vector<std::uint8_t> a(M * K), b(K * N);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint8_t(i * 37);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::uint8_t(i * 91);
  const float sa = 0.05f, sb = 0.02f, sy = 0.7f;
  const std::uint8_t za = 3, zb = 200, zy = 128;
  QuantizedMatMulArgs q;
  q.a = {TensorDesc(DataType::uint8, {M, K}), a.data()};
  q.b = {TensorDesc(DataType::uint8, {K, N}), b.data()};
  q.a_scale = {TensorDesc(DataType::float32, {1}), &sa};
  q.b_scale = {TensorDesc(DataType::float32, {1}), &sb};
  q.output_scale = {TensorDesc(DataType::float32, {1}), &sy};
  q.a_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &za};
  q.b_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &zb};
  q.output_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &zy};
  const TensorDesc yd(DataType::uint8, {M, N});
  std::vector<unsigned char> expected(M * N, 0), out(M * N, 0);
  quantized_linear_matmul(q, {yd, expected.data()}, Schedule("reference"));
  bind(s, out, expected, [&](const Schedule& schedule) { quantized_linear_matmul(q, {yd, out.data()}, schedule); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Schedule s;
  try {
    s = Schedule::parse(text);
  } catch (const Error& e) {
    fuzz::require(e.code() == Errc::invalid_schedule, "parse refused with another code");
    return 0;
  }
  fuzz::require(!s.empty(), "parse returned the empty schedule");
  fuzz::require(Schedule::parse(s.to_string()) == s, "canonical text does not parse back");
  fuzz::require(!s.to_json().empty(), "empty JSON form");
  if (!affordable(s)) return 0;
  scan_with(s, false);
  scan_with(s, true);
  qmm_with(s);
  return 0;
}

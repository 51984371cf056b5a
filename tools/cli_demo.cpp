// `hetkern demo`: the DirectML documentation examples, then a timed comparison of schedules.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "runtime/tuning/heuristic.hpp"
#include "tools/cli.hpp"

namespace hk::cli {
namespace {

void print_matrix(const std::vector<float>& v, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    std::printf("    %s", r == 0 ? "[[" : " [");
    for (int c = 0; c < cols; ++c) std::printf("%s%g", c ? ", " : "", double(v[r * cols + c]));
    std::printf("]%s\n", r == rows - 1 ? "]" : ",");
  }
}

void documentation_examples() {
  const std::vector<float> x = {2, 1, 3, 5, 3, 8, 7, 3, 9, 6, 2, 4};
  const TensorDesc d(DataType::float32, {1, 1, 3, 4});
  std::printf("DirectML examples, input float32 {1,1,3,4}:\n");
  print_matrix(x, 3, 4);
  const struct {
    const char* title;
    CumulativeOptions options;
  } cases[] = {
      {"axis 3", {3, Direction::increasing, false}},
      {"axis 3, exclusive", {3, Direction::increasing, true}},
      {"axis 3, decreasing", {3, Direction::decreasing, false}},
      {"axis 2", {2, Direction::increasing, false}},
  };
  for (bool product : {false, true})
    for (const auto& c : cases) {
      std::vector<float> y(12);
      if (product)
        cumulative_product({d, x.data()}, {d, y.data()}, c.options);
      else
        cumulative_sum({d, x.data()}, {d, y.data()}, c.options);
      std::printf("\n  %s, %s:\n", product ? "CumulativeProduct" : "CumulativeSummation", c.title);
      print_matrix(y, 3, 4);
    }

  // The specification's uint8 example of QuantizedLinearMatMul.
  const std::vector<std::uint8_t> a = {208, 236, 0, 238, 3, 214, 255, 29};
  const std::vector<std::uint8_t> b = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
  const float sa = 0.0066f, sb = 0.00705f, sy = 0.0107f;
  const std::uint8_t za = 113, zb = 114, zy = 118;
  std::vector<std::uint8_t> y(6);
  const TensorDesc one_f(DataType::float32, {1}), one_u8(DataType::uint8, {1});
  QuantizedMatMulArgs q;
  q.a = {TensorDesc(DataType::uint8, {2, 4}), a.data()};
  q.b = {TensorDesc(DataType::uint8, {4, 3}), b.data()};
  q.a_scale = {one_f, &sa};
  q.b_scale = {one_f, &sb};
  q.output_scale = {one_f, &sy};
  q.a_zero_point = ConstTensor{one_u8, &za};
  q.b_zero_point = ConstTensor{one_u8, &zb};
  q.output_zero_point = ConstTensor{one_u8, &zy};
  quantized_linear_matmul(q, {TensorDesc(DataType::uint8, {2, 3}), y.data()});
  std::printf("\nQuantizedLinearMatMul, uint8 A {2,4} x B {4,3} (sa 0.0066 za 113, sb 0.00705 "
              "zb 114, sy 0.0107 zy 118):\n");
  print_matrix(std::vector<float>(y.begin(), y.end()), 2, 3);
}

// Median wall time of `repeats` runs after one warm-up, in seconds.
double median_seconds(const std::function<void()>& f, int repeats) {
  f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + repeats / 2, t.end());
  return t[repeats / 2];
}

// The default choice (the empty schedule) and every strategy with its default parameters.
std::vector<Schedule> default_and_every_strategy(Operator op) {
  std::vector<Schedule> schedules = {Schedule()};
  for (const auto& s : strategies(op)) schedules.push_back(Schedule(s.name));
  return schedules;
}

void compare_scans(const char* title, std::vector<std::int64_t> sizes, int axis) {
  const TensorDesc d(DataType::float32, sizes);
  std::vector<float> x(std::size_t(d.element_count())), y(x.size());
  std::mt19937 rng(1);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  const detail::CumulativeCall call{false, {d, x.data()}, {d, y.data()}, {axis}};
  const double bytes = 2.0 * double(x.size()) * sizeof(float);
  std::printf("\n  cumsum float32 %s, axis %d:\n", title, axis);
  for (const auto& s : default_and_every_strategy(Operator::cumulative_sum)) {
    const std::string text = s.empty() ? "default: " + detail::to_schedule(detail::default_scan_plan(call)).to_string()
                                       : detail::to_schedule(detail::plan_scan(call, s)).to_string();
    const double sec = median_seconds([&] { cumulative_sum({d, x.data()}, {d, y.data()}, {axis}, s); }, 5);
    std::printf("    %-56s %9.3f ms %8.2f GB/s\n", text.c_str(), sec * 1e3, bytes / sec / 1e9);
  }
}

void compare_qmm(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::vector<std::uint8_t> a(std::size_t(m * k)), y(std::size_t(m * n));
  std::vector<std::int8_t> b(std::size_t(k * n));
  std::mt19937 rng(2);
  for (auto& v : a) v = std::uint8_t(rng());
  for (auto& v : b) v = std::int8_t(rng());
  const float sa = 0.02f, sb = 0.01f, sy = 8.0f;
  const std::uint8_t zy = 128;
  const TensorDesc one_f(DataType::float32, {1});
  QuantizedMatMulArgs q;
  q.a = {TensorDesc(DataType::uint8, {m, k}), a.data()};
  q.b = {TensorDesc(DataType::int8, {k, n}), b.data()};
  q.a_scale = {one_f, &sa};
  q.b_scale = {one_f, &sb};
  q.output_scale = {one_f, &sy};
  q.output_zero_point = ConstTensor{TensorDesc(DataType::uint8, {1}), &zy};
  const Tensor out{TensorDesc(DataType::uint8, {m, n}), y.data()};
  const detail::QmmProblem problem = detail::validate(q, out);
  std::printf("\n  qlinear-matmul uint8 x int8 -> uint8, M=N=K=%lld:\n", static_cast<long long>(m));
  for (const auto& s : default_and_every_strategy(Operator::quantized_linear_matmul)) {
    const std::string text = s.empty() ? "default: " + detail::to_schedule(detail::default_qmm_plan(problem)).to_string()
                                       : detail::to_schedule(detail::plan_qmm(problem, s)).to_string();
    const double sec = median_seconds([&] { quantized_linear_matmul(q, out, s); }, 3);
    std::printf("    %-56s %9.3f ms %8.2f GOPS\n", text.c_str(), sec * 1e3,
                2.0 * double(m * n * k) / sec / 1e9);
  }
}

void run_demo() {
  documentation_examples();
  std::printf("\nSchedules compared (median of repeated runs, %d OpenMP threads available):\n",
              default_threads());
  compare_scans("{1024,4096}", {1024, 4096}, 1);
  compare_scans("{4096,1024}", {4096, 1024}, 0);
  compare_scans("{4194304}", {4194304}, 0);
  compare_qmm(256, 256, 256);
  std::fflush(stdout);
}

}  // namespace

void add_demo(CLI::App& app) {
  app.add_subcommand("demo", "print the DirectML examples and time the schedules")->callback(run_demo);
}

}  // namespace hk::cli

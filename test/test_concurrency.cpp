// Many threads calling every operator at once, with different shapes, types and schedules: each
// result must equal, byte for byte, what the same call computed alone on one thread beforehand.
// Run under ThreadSanitizer by `make test-tsan`, which also reports any data race in the library
// (scratch kept per thread, shared packed B, OpenMP teams started from several threads).
//
// The calls are a list of self-contained jobs, so that other load (more threads, another process
// working on shared state) can be started alongside them in run_concurrently without changing the
// jobs or their check.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hetkern/hetkern.hpp"

namespace {

using hk::DataType;
using hk::Schedule;
using hk::TensorDesc;
using i64 = std::int64_t;

// One operator call with its own input and output storage.
struct Job {
  std::string name;
  std::function<void(std::vector<unsigned char>& out)> run;
  std::size_t out_bytes = 0;
  std::vector<unsigned char> expected;  // the result of a lone, single-threaded run
};

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// Small integers or floats of every scan type: no NaN, values that keep sums and products finite.
std::shared_ptr<std::vector<unsigned char>> scan_input(DataType t, i64 count, unsigned seed) {
  std::mt19937 rng(seed);
  auto v = std::make_shared<std::vector<unsigned char>>(std::size_t(count) * hk::size_of(t));
  for (i64 i = 0; i < count; ++i) {
    const int small = int(rng() % 7) - 3;
    unsigned char* p = v->data() + i * i64(hk::size_of(t));
    switch (t) {
      case DataType::float32: { const float f = float(small) * 0.37f; std::memcpy(p, &f, 4); break; }
      case DataType::float16: { const _Float16 h = _Float16(float(small) * 0.25f); std::memcpy(p, &h, 2); break; }
      case DataType::int32: case DataType::uint32: { const std::int32_t x = small; std::memcpy(p, &x, 4); break; }
      default: { const std::int64_t x = small; std::memcpy(p, &x, 8); break; }
    }
  }
  return v;
}

Job scan_job(bool product, DataType t, std::vector<i64> sizes, int axis, bool exclusive, bool reverse,
             const char* schedule, unsigned seed) {
  const TensorDesc d(t, sizes);
  const auto x = scan_input(t, d.element_count(), seed);
  const Schedule s = *schedule ? Schedule::parse(schedule) : Schedule();
  const hk::CumulativeOptions o{axis, reverse ? hk::Direction::decreasing : hk::Direction::increasing, exclusive};
  Job j;
  j.name = std::string(product ? "cumprod " : "cumsum ") + d.to_string() + " axis " + std::to_string(axis) +
           " " + (*schedule ? schedule : "(default)");
  j.out_bytes = x->size();
  j.run = [=](std::vector<unsigned char>& y) {
    if (product)
      hk::cumulative_product({d, x->data()}, {d, y.data()}, o, s);
    else
      hk::cumulative_sum({d, x->data()}, {d, y.data()}, o, s);
  };
  return j;
}

// A {batch..., M, K} x B {batch..., K, N}, per-row/per-column parameters; B packed once and shared
// by every thread when `shared_packed_b`.
Job qmm_job(std::vector<i64> batch, i64 M, i64 K, i64 N, DataType ta, DataType tb, DataType ty,
            bool shared_packed_b, const char* schedule, unsigned seed) {
  auto sizes = [&](i64 r, i64 c) { auto s = batch; s.push_back(r); s.push_back(c); return s; };
  const TensorDesc ad(ta, sizes(M, K)), bd(tb, sizes(K, N)), yd(ty, sizes(M, N));
  const auto a = std::make_shared<std::vector<unsigned char>>(random_bytes(std::size_t(ad.element_count()), seed));
  const auto b = std::make_shared<std::vector<unsigned char>>(random_bytes(std::size_t(bd.element_count()), seed + 1));
  auto scales = std::make_shared<std::vector<float>>();
  for (i64 i = 0; i < M + N + 1; ++i) scales->push_back(0.01f + 0.003f * float(i % 11));
  const auto zeros = std::make_shared<std::vector<unsigned char>>(random_bytes(std::size_t(M + N + 1), seed + 2));
  std::shared_ptr<hk::PackedB> packed;
  if (shared_packed_b) packed = std::make_shared<hk::PackedB>(hk::pack_b({bd, b->data()}));
  const Schedule s = *schedule ? Schedule::parse(schedule) : Schedule();
  Job j;
  j.name = "qmm " + ad.to_string() + " x " + bd.to_string() + (shared_packed_b ? " packed " : " ") +
           (*schedule ? schedule : "(default)");
  j.out_bytes = std::size_t(yd.element_count());
  j.run = [=](std::vector<unsigned char>& y) {
    hk::QuantizedMatMulArgs q;
    q.a = {ad, a->data()};
    q.a_scale = {TensorDesc(DataType::float32, {M, 1}), scales->data()};
    q.b_scale = {TensorDesc(DataType::float32, {1, N}), scales->data() + M};
    q.output_scale = {TensorDesc(DataType::float32, {1}), scales->data() + M + N};
    q.a_zero_point = hk::ConstTensor{TensorDesc(ta, {M, 1}), zeros->data()};
    q.b_zero_point = hk::ConstTensor{TensorDesc(tb, {1, N}), zeros->data() + M};
    q.output_zero_point = hk::ConstTensor{TensorDesc(ty, {1}), zeros->data() + M + N};
    if (packed)
      q.packed_b = packed.get();
    else
      q.b = {bd, b->data()};
    hk::quantized_linear_matmul(q, {yd, y.data()}, s);
  };
  return j;
}

std::vector<Job> all_jobs() {
  using D = DataType;
  std::vector<Job> jobs;
  unsigned seed = 1;
  for (const char* s : {"", "reference", "scan.tiled(tile=5)", "scan.parallel(tile=3, threads=2)",
                        "scan.blocked(block=16, threads=2)", "scan.blocked(block=40, threads=3, stream=1)"}) {
    jobs.push_back(scan_job(false, D::float32, {37, 129}, 1, false, false, s, seed++));
    jobs.push_back(scan_job(false, D::float16, {9, 70, 3}, 1, true, true, s, seed++));
    jobs.push_back(scan_job(true, D::int32, {200, 11}, 0, false, true, s, seed++));
    jobs.push_back(scan_job(true, D::uint64, {3, 5, 61}, 2, true, false, s, seed++));
  }
  for (const char* s : {"", "reference", "qmm.tiled(mc=16, nc=32, kc=64)", "qmm.parallel(threads=2)",
                        "qmm.parallel(mc=32, nc=16, kc=128, threads=3)"}) {
    jobs.push_back(qmm_job({}, 33, 70, 41, D::uint8, D::int8, D::uint8, false, s, seed++));
    jobs.push_back(qmm_job({2}, 17, 200, 24, D::int8, D::uint8, D::int8, true, s, seed++));
    jobs.push_back(qmm_job({2, 3}, 5, 9, 50, D::int8, D::int8, D::uint8, false, s, seed++));
  }
  return jobs;
}

class ConcurrentOperators : public ::testing::Test {
 protected:
  void SetUp() override {
    jobs_ = all_jobs();
    for (Job& j : jobs_) {
      j.expected.assign(j.out_bytes, 0);
      j.run(j.expected);
    }
  }

  // `threads` threads run every job `rounds` times, each starting at a different job, all
  // released at once; `alongside` runs on the calling thread meanwhile. Returns the mismatches.
  std::vector<std::string> run_concurrently(int threads, int rounds, const std::function<void()>& alongside) {
    std::vector<std::vector<std::string>> wrong(static_cast<std::size_t>(threads));
    std::barrier start(threads + 1);
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back([&, t] {
        start.arrive_and_wait();
        for (int r = 0; r < rounds; ++r)
          for (std::size_t i = 0; i < jobs_.size(); ++i) {
            const Job& j = jobs_[(i + std::size_t(t) * 7) % jobs_.size()];
            std::vector<unsigned char> out(j.out_bytes, 0);
            j.run(out);
            if (out != j.expected) wrong[std::size_t(t)].push_back(j.name);
          }
      });
    start.arrive_and_wait();
    alongside();
    for (auto& th : team) th.join();
    std::vector<std::string> all;
    for (const auto& w : wrong) all.insert(all.end(), w.begin(), w.end());
    return all;
  }

  std::vector<Job> jobs_;
};

TEST_F(ConcurrentOperators, EveryOperatorAndScheduleFromManyThreadsMatchesItsLoneRun) {
  // The calling thread is one more caller, running the jobs in reverse order.
  const auto mismatches = run_concurrently(6, 2, [&] {
    for (auto j = jobs_.rbegin(); j != jobs_.rend(); ++j) {
      std::vector<unsigned char> out(j->out_bytes, 0);
      j->run(out);
      EXPECT_EQ(out, j->expected) << j->name << " on the calling thread";
    }
  });
  for (const auto& name : mismatches) ADD_FAILURE() << name << " differs from its lone run";
}

}  // namespace

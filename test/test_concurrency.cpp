// Many threads calling every operator at once, with different shapes, types and schedules: each
// result must equal, byte for byte, what the same call computed alone on one thread beforehand.
// Run under ThreadSanitizer by `make test-tsan`, which also reports any data race in the library
// (scratch kept per thread, shared packed B, OpenMP teams started and pinned from several threads,
// dispatch decisions made and forgotten).
//
// The calls are a list of self-contained jobs, so that other load (more threads, another process
// working on shared state) can be started alongside them in run_concurrently without changing the
// jobs or their check. One such load is a `hetkern tune` process writing records into the very
// database the threads' unscheduled calls dispatch from.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "tuning_test_util.hpp"

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
                        "scan.blocked(block=16, threads=2)", "scan.blocked(block=40, threads=3, stream=1)",
                        "scan.parallel(tile=4, threads=2, pin=compact)"}) {
    jobs.push_back(scan_job(false, D::float32, {37, 129}, 1, false, false, s, seed++));
    jobs.push_back(scan_job(false, D::float16, {9, 70, 3}, 1, true, true, s, seed++));
    jobs.push_back(scan_job(true, D::int32, {200, 11}, 0, false, true, s, seed++));
    jobs.push_back(scan_job(true, D::uint64, {3, 5, 61}, 2, true, false, s, seed++));
  }
  for (const char* s : {"", "reference", "qmm.tiled(mc=16, nc=32, kc=64)", "qmm.parallel(threads=2)",
                        "qmm.parallel(mc=32, nc=16, kc=128, threads=3)", "qmm.parallel(threads=2, pin=scatter)"}) {
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

#ifdef HETKERN_CLI_PATH
extern "C" char** environ;

// Points HETKERN_TUNING_DB at `path` for this process (and the children it starts) and puts back
// what was there before, each time forgetting the dispatch decisions made under the other.
class TuningDbEnvironment {
 public:
  explicit TuningDbEnvironment(const std::string& path) : env_(std::in_place, "HETKERN_TUNING_DB", path.c_str()) {
    hk::reset_dispatch();
  }
  ~TuningDbEnvironment() {
    env_.reset();
    hk::reset_dispatch();
  }
  TuningDbEnvironment(const TuningDbEnvironment&) = delete;
  TuningDbEnvironment& operator=(const TuningDbEnvironment&) = delete;

 private:
  std::optional<hk::test::ScopedEnv> env_;
};

// `hetkern tune --shapes shapes --db db --threads T`, its output going to `log`; the pid.
pid_t start_tuner(const std::string& shapes, const std::string& db, const std::string& log) {
  const std::string threads = std::to_string(hk::default_threads());
  std::vector<std::string> args = {HETKERN_CLI_PATH, "tune",    "--shapes", shapes, "--db",
                                   db,               "--budget", "0.05",    "--threads", threads};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  return rc == 0 ? pid : -1;
}

// The unscheduled jobs of all_jobs() that the tuner can tune (packed operands, one matrix).
const char* const tunable_shapes =
    "cumsum --shape 37,129 --dtype float32 --axis 1\n"
    "cumsum --shape 9,70,3 --dtype float16 --axis 1 --direction decreasing --exclusive\n"
    "cumprod --shape 200,11 --dtype int32 --axis 0 --direction decreasing\n"
    "cumprod --shape 3,5,61 --dtype uint64 --axis 2 --exclusive\n"
    "qlinear-matmul --shape 33,41,70 --types u8,s8,u8\n";

std::vector<hk::TuneProblem> tunable_problems() {
  using D = DataType;
  using hk::Direction;
  using hk::Operator;
  return {{Operator::cumulative_sum, {D::float32}, {37, 129}, {1, Direction::increasing, false}},
          {Operator::cumulative_sum, {D::float16}, {9, 70, 3}, {1, Direction::decreasing, true}},
          {Operator::cumulative_product, {D::int32}, {200, 11}, {0, Direction::decreasing, false}},
          {Operator::cumulative_product, {D::uint64}, {3, 5, 61}, {2, Direction::increasing, true}},
          {Operator::quantized_linear_matmul, {D::uint8, D::int8, D::uint8}, {33, 41, 70}, {}}};
}

TEST_F(ConcurrentOperators, ResultsHoldWhileAnotherProcessTunesTheDatabaseTheCallsDispatchFrom) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::path(::testing::TempDir()) / "hetkern-concurrent-tune-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  const std::string db = (dir / "tuning.sqlite").string(), shapes = (dir / "shapes.txt").string(),
                    log = (dir / "tune.log").string();
  std::ofstream(shapes) << tunable_shapes;
  const TuningDbEnvironment env(db);

  int status = 0;
  int passes = 0;
  const auto mismatches = run_concurrently(4, 2, [&] {
    const pid_t tuner = start_tuner(shapes, db, log);
    ASSERT_GT(tuner, 0) << "cannot start " << HETKERN_CLI_PATH;
    // Until the tuner is done, the calling thread forgets every dispatch decision and runs the jobs
    // again, so that the threads' unscheduled calls keep reading the database as records appear.
    for (;;) {
      const pid_t done = waitpid(tuner, &status, WNOHANG);
      if (done == tuner) break;
      ASSERT_TRUE(done == 0 || errno == EINTR) << "waitpid: " << std::strerror(errno);
      hk::reset_dispatch();
      for (auto j = jobs_.rbegin(); j != jobs_.rend(); ++j) {
        std::vector<unsigned char> out(j->out_bytes, 0);
        j->run(out);
        EXPECT_EQ(out, j->expected) << j->name << " on the calling thread while tuning";
      }
      ++passes;
    }
  });
  for (const auto& name : mismatches) ADD_FAILURE() << name << " differs from its lone run";
  std::ifstream log_in(log);
  const std::string tuner_output{std::istreambuf_iterator<char>(log_in), std::istreambuf_iterator<char>()};
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the tuner failed:\n" << tuner_output;
  EXPECT_GT(passes, 0);

  // Every tuned shape is now found under this process's own key, so that the calls below run the
  // tuned schedules, not the heuristic's.
  {
    const hk::TuningDb records(db, false);
    for (const auto& p : tunable_problems())
      EXPECT_TRUE(records.find(hk::tuning_key(p)).has_value())
          << "no record for " << hk::tuning_key(p).op << " " << hk::tuning_key(p).params << "\n" << tuner_output;
  }
  hk::reset_dispatch();
  for (const Job& j : jobs_) {
    std::vector<unsigned char> out(j.out_bytes, 0);
    j.run(out);
    EXPECT_EQ(out, j.expected) << j.name << " with every record present";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}
#endif

}  // namespace

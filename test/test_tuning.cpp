// The tuning database, the dispatch of unscheduled calls and the tuner.
#include <cstdio>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "runtime/platform/environment.hpp"
#include "runtime/tuning/dispatch.hpp"
#include "runtime/tuning/json_text.hpp"
#include "runtime/tuning/tuner_problem.hpp"
#include "tuning_test_util.hpp"

namespace {

namespace fs = std::filesystem;

using Tuning = hk::test::FreshTuningDb;

// A float32 cumulative sum over {rows, cols} along axis 1, with data and both outputs.
struct ScanCase {
  std::vector<std::int64_t> shape;
  int axis = 1;
  std::vector<float> x, y, want;
  hk::TensorDesc desc;

  ScanCase(std::vector<std::int64_t> s, int a) : shape(std::move(s)), axis(a), desc(hk::DataType::float32, shape) {
    std::size_t n = 1;
    for (auto v : shape) n *= std::size_t(v);
    x.resize(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
    y.assign(n, 0);
    want.assign(n, 0);
    hk::cumulative_sum({desc, x.data()}, {desc, want.data()}, {.axis = axis}, hk::Schedule("reference"));
  }
  hk::TuneProblem problem() const { return {hk::Operator::cumulative_sum, {hk::DataType::float32}, shape, {.axis = axis}}; }
  hk::Schedule chosen() const {
    return hk::default_schedule(hk::Operator::cumulative_sum, {desc, x.data()}, {desc, const_cast<float*>(y.data())},
                                {.axis = axis});
  }
  void run() { hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = axis}); }
};

hk::TuningRecord record_for(const hk::TuneProblem& p, const std::string& schedule, double ns = 1000) {
  hk::TuningRecord r = hk::tuning_key(p);
  r.schedule = schedule;
  r.median_ns = ns;
  r.spread_ns = ns / 10;
  r.repetitions = 7;
  r.candidates = 3;
  r.default_ns = ns * 1.5;
  return r;
}

void expect_same(const hk::TuningRecord& a, const hk::TuningRecord& b) {
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.algorithm_version, b.algorithm_version);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.stride_class, b.stride_class);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.median_ns, b.median_ns);
  EXPECT_EQ(a.spread_ns, b.spread_ns);
  EXPECT_EQ(a.repetitions, b.repetitions);
  EXPECT_EQ(a.transfers, b.transfers);
  EXPECT_EQ(a.candidates, b.candidates);
  EXPECT_EQ(a.default_ns, b.default_ns);
}

int sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open(path.c_str(), &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc;
}

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  std::string result = "cannot open";
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return result;
}

TEST_F(Tuning, ExactRecordIsDispatchedAndOtherMachinesRecordsAreNot) {
  ScanCase c({64, 100}, 1);
  const hk::Schedule heuristic = hk::heuristic_schedule(c.problem());
  EXPECT_EQ(c.chosen(), heuristic);  // no database file: the heuristic, and no file is created
  EXPECT_FALSE(fs::exists(path_));

  hk::TuningRecord foreign = record_for(c.problem(), "scan.tiled(tile=3, stream=0)");
  foreign.fingerprint += ";gpu=elsewhere";
  hk::TuningDb(path_, true).put(foreign);
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen(), heuristic);

  hk::TuningDb(path_, true).put(record_for(c.problem(), "scan.tiled(tile=3, stream=0)"));
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen().to_string(), "scan.tiled(tile=3, stream=0)");
  c.run();
  EXPECT_EQ(c.y, c.want);
}

TEST_F(Tuning, NearestShapeOfTheSameClass) {
  ScanCase tuned({1000, 64}, 1), near({1100, 48}, 1), far({64000, 64}, 1), other_axis({1100, 48}, 0);
  hk::TuningDb(path_, true).put(record_for(tuned.problem(), "scan.tiled(tile=5, stream=0)"));
  hk::reset_dispatch();
  EXPECT_EQ(near.chosen().to_string(), "scan.tiled(tile=5, stream=0)");
  EXPECT_EQ(far.chosen(), hk::heuristic_schedule(far.problem()));
  EXPECT_EQ(other_axis.chosen(), hk::heuristic_schedule(other_axis.problem()));
  near.run();
  EXPECT_EQ(near.y, near.want);
}

TEST(JsonText, EscapesAndKeepsOnlyUtf8) {
  using hk::detail::json_quoted;
  EXPECT_EQ(json_quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
  EXPECT_EQ(json_quoted("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  // A stray byte, an overlong NUL, a surrogate, a code point past U+10FFFF, a cut sequence.
  EXPECT_EQ(json_quoted("core:\xff"), "\"core:\\ufffd\"");
  EXPECT_EQ(json_quoted("\xc0\x80"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(json_quoted("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(json_quoted("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(json_quoted("x\xe2\x82"), "\"x\\ufffd\\ufffd\"");
}

TEST(ShapeDistance, IsAMetricOnLogSizes) {
  using hk::detail::shape_distance;
  const std::vector<std::vector<std::int64_t>> shapes = {{1, 1}, {4, 1}, {4, 8}, {1000, 3}, {7, 7}};
  for (const auto& a : shapes)
    for (const auto& b : shapes) {
      EXPECT_DOUBLE_EQ(shape_distance(a, b), shape_distance(b, a));
      EXPECT_EQ(shape_distance(a, b) == 0, a == b);
      for (const auto& c : shapes) EXPECT_LE(shape_distance(a, c), shape_distance(a, b) + shape_distance(b, c) + 1e-12);
    }
  EXPECT_DOUBLE_EQ(shape_distance({4, 8}, {1, 1}), 5.0);
  EXPECT_TRUE(std::isinf(shape_distance({4}, {4, 1})));
}

TEST_F(Tuning, EnvironmentScheduleComesFirst) {
  ScanCase c({32, 40}, 1);
  hk::TuningDb(path_, true).put(record_for(c.problem(), "scan.tiled(tile=3, stream=0)"));
  setenv("HETKERN_SCHEDULE", "qmm.tiled(mc=32); scan.tiled(tile=6)", 1);
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen().to_string(), "scan.tiled(tile=6, stream=0)");
  c.run();
  EXPECT_EQ(c.y, c.want);

  setenv("HETKERN_SCHEDULE", "scan.tiled(tile=", 1);  // malformed: warned about and ignored
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen().to_string(), "scan.tiled(tile=3, stream=0)");

  setenv("HETKERN_SCHEDULE", "scan.tlied(tile=6)", 1);  // no operator's strategy: warned about and ignored
  testing::internal::CaptureStderr();
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen().to_string(), "scan.tiled(tile=3, stream=0)");
  EXPECT_NE(testing::internal::GetCapturedStderr().find("no operator has a strategy named scan.tlied"),
            std::string::npos);

  setenv("HETKERN_SCHEDULE", "scan.tiled(tile=0)", 1);  // illegal for the call: an error, as if explicit
  hk::reset_dispatch();
  try {
    c.run();
    ADD_FAILURE() << "an illegal HETKERN_SCHEDULE must be refused";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_schedule);
    EXPECT_NE(e.rule().find("(from HETKERN_SCHEDULE)"), std::string::npos) << e.what();
  }
}

// HETKERN_LOG is a comma-separated list of channels; "all" names every one.
TEST(LogChannels, CommaSeparatedNamesAndAll) {
  using hk::detail::log_requested;
  EXPECT_FALSE(log_requested(nullptr, "dispatch"));
  EXPECT_FALSE(log_requested("", "dispatch"));
  EXPECT_TRUE(log_requested("dispatch", "dispatch"));
  EXPECT_TRUE(log_requested("devices,dispatch", "dispatch"));
  EXPECT_TRUE(log_requested("dispatch,devices", "devices"));
  EXPECT_TRUE(log_requested("all", "devices"));
  EXPECT_FALSE(log_requested("dispatcher", "dispatch"));
  EXPECT_FALSE(log_requested("devices", "dispatch"));
  EXPECT_FALSE(log_requested(",", "dispatch"));
}

// HETKERN_LOG=dispatch names the device that runs each call and the rule that chose the schedule,
// explicit schedules included; host-tensor keys are those of earlier versions (no device mark).
TEST_F(Tuning, DispatchLogNamesTheDeviceAndTheRule) {
  ScanCase c({32, 40}, 1);
  const hk::TuningRecord key = hk::tuning_key(c.problem());
  EXPECT_EQ(key.stride_class, "packed");
  const hk::detail::CumulativeCall call{false, {c.desc, c.x.data()}, {c.desc, c.y.data()}, {.axis = 1}};
  const hk::TuningRecord dispatched = hk::detail::scan_key(call);
  EXPECT_EQ(dispatched.stride_class, key.stride_class);
  EXPECT_EQ(dispatched.params, key.params);
  EXPECT_EQ(hk::detail::scan_key(call, hk::detail::DataHome::device).stride_class, "device_packed");

  setenv("HETKERN_LOG", "dispatch", 1);
  hk::reset_dispatch();
  const auto logged = [&](const hk::Schedule& schedule) {
    ::testing::internal::CaptureStderr();
    hk::cumulative_sum({c.desc, c.x.data()}, {c.desc, c.y.data()}, {.axis = 1}, schedule);
    EXPECT_EQ(c.y, c.want);
    return ::testing::internal::GetCapturedStderr();
  };
  const std::string heuristic = logged({});
  EXPECT_NE(heuristic.find("-> " + hk::heuristic_schedule(c.problem()).to_string() + " on host CPU (heuristic"),
            std::string::npos)
      << heuristic;
  EXPECT_NE(logged({}).find(", cached)"), std::string::npos);
  const std::string explicit_log = logged(hk::Schedule::parse("scan.tiled(tile=2)"));
  EXPECT_NE(explicit_log.find("-> scan.tiled(tile=2, stream=0) on host CPU (explicit schedule)"), std::string::npos)
      << explicit_log;
  unsetenv("HETKERN_LOG");
}

// A packed B goes through the same dispatcher: HETKERN_SCHEDULE first, logged on the host CPU,
// and the output is the reference's.
TEST_F(Tuning, PackedWeightsFollowTheSameRules) {
  constexpr std::int64_t M = 6, N = 20, K = 11;
  std::vector<std::uint8_t> a(M * K), want(M * N), got(M * N);
  std::vector<std::int8_t> b(K * N);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint8_t(i * 29 % 256);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::int8_t(int(i * 41 % 256) - 128);
  const hk::TensorDesc one_f(hk::DataType::float32, {1}), one_u8(hk::DataType::uint8, {1});
  const hk::TensorDesc y_desc(hk::DataType::uint8, {M, N});
  const float sa = 0.04f, sb = 0.03f, sy = 0.02f;
  const std::uint8_t za = 7, zy = 100;
  hk::QuantizedMatMulArgs args{.a = {hk::TensorDesc(hk::DataType::uint8, {M, K}), a.data()},
                               .a_scale = {one_f, &sa},
                               .a_zero_point = hk::ConstTensor{one_u8, &za},
                               .b = {hk::TensorDesc(hk::DataType::int8, {K, N}), b.data()},
                               .b_scale = {one_f, &sb},
                               .b_zero_point = std::nullopt,
                               .output_scale = {one_f, &sy},
                               .output_zero_point = hk::ConstTensor{one_u8, &zy}};
  hk::quantized_linear_matmul(args, {y_desc, want.data()}, hk::Schedule("reference"));
  const hk::PackedB packed = hk::pack_b(args.b);
  args.b = {};
  args.packed_b = &packed;

  setenv("HETKERN_SCHEDULE", "scan.tiled(tile=6); qmm.tiled(mc=3)", 1);
  setenv("HETKERN_LOG", "dispatch", 1);
  hk::reset_dispatch();
  ::testing::internal::CaptureStderr();
  hk::quantized_linear_matmul(args, {y_desc, got.data()});
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("HETKERN_LOG");
  EXPECT_EQ(got, want);
  EXPECT_NE(log.find("prepacked_b -> qmm.tiled(mc=3, "), std::string::npos) << log;
  EXPECT_NE(log.find(") on host CPU (HETKERN_SCHEDULE)"), std::string::npos) << log;
}

TEST_F(Tuning, CorruptOrUnreadableDatabaseFallsBackToTheHeuristic) {
  ScanCase c({16, 300}, 1);
  const hk::Schedule heuristic = hk::heuristic_schedule(c.problem());
  {
    std::ofstream f(path_, std::ios::binary);
    f << std::string(4096, '\x5a');
  }
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen(), heuristic);
  c.run();
  EXPECT_EQ(c.y, c.want);
  EXPECT_THROW(hk::TuningDb(path_, false), hk::Error);
  EXPECT_THROW(hk::TuningDb(path_, true), hk::Error);

  // A directory where the file should be, and a schema from a newer hetkern.
  fs::remove(path_);
  fs::create_directories(path_);
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen(), heuristic);
  fs::remove_all(path_);
  ASSERT_EQ(sql(path_, "CREATE TABLE schema_version(version INTEGER NOT NULL); INSERT INTO schema_version VALUES(99);"),
            SQLITE_OK);
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen(), heuristic);
  try {
    hk::TuningDb db(path_, true);
    ADD_FAILURE() << "a newer schema must be refused";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_file);
  }
}

TEST_F(Tuning, SchemaVersion1IsMigrated) {
  ScanCase c({64, 100}, 1);
  hk::TuningRecord r = record_for(c.problem(), "scan.tiled(tile=9, stream=0)", 1234.5);
  std::string shape;
  for (auto s : r.shape) shape += (shape.empty() ? "" : ",") + std::to_string(s);
  // The version 1 layout, as the first tuner wrote it.
  const std::string v1 =
      "CREATE TABLE schema_version(version INTEGER NOT NULL); INSERT INTO schema_version VALUES(1);"
      "CREATE TABLE records(op TEXT NOT NULL, algorithm_version INTEGER NOT NULL, dtype TEXT NOT NULL,"
      " shape TEXT NOT NULL, stride_class TEXT NOT NULL, params TEXT NOT NULL, fingerprint TEXT NOT NULL,"
      " schedule TEXT NOT NULL, median_ns REAL NOT NULL,"
      " PRIMARY KEY(op, algorithm_version, dtype, shape, stride_class, params, fingerprint));"
      "INSERT INTO records VALUES('" + r.op + "', 1, '" + r.dtype + "', '" + shape + "', '" + r.stride_class +
      "', '" + r.params + "', '" + r.fingerprint + "', '" + r.schedule + "', 1234.5);";
  ASSERT_EQ(sql(path_, v1), SQLITE_OK);
  {
    hk::TuningDb db(path_, true);
    EXPECT_EQ(db.schema_version(), 3);
    const auto found = db.find(r);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->schedule, r.schedule);
    EXPECT_EQ(found->median_ns, 1234.5);
    EXPECT_EQ(found->repetitions, 0);  // columns added by the migration take their defaults
    r.repetitions = 11;
    db.put(r);
    EXPECT_EQ(db.find(r)->repetitions, 11);
    // The rates' table, added by version 3, is there and empty.
    EXPECT_FALSE(db.find_rates(r.fingerprint).has_value());
    hk::MachineRates rates;
    rates.gpu_call_seconds = 2e-5;
    db.put_rates(r.fingerprint, rates);
    EXPECT_EQ(db.find_rates(r.fingerprint)->gpu_call_seconds, 2e-5);
  }
  EXPECT_EQ(hk::TuningDb(path_, false).schema_version(), 3);
  hk::reset_dispatch();
  EXPECT_EQ(c.chosen().to_string(), r.schedule);
}

TEST_F(Tuning, ExportImportRoundTrip) {
  std::vector<hk::TuningRecord> records;
  for (int i = 0; i < 5; ++i) {
    ScanCase c({8 << i, 3 + i}, i % 2);
    hk::TuningRecord r = record_for(c.problem(), "scan.tiled(tile=" + std::to_string(i + 1) + ", stream=0)", 100.25 * (i + 1));
    r.transfers = i == 3;
    r.fingerprint += i == 4 ? ";\"quoted\\\" \\ \n" : "";
    records.push_back(r);
  }
  hk::TuningDb(path_, true).put_all(records);
  const auto stored = hk::TuningDb(path_, false).all();
  ASSERT_EQ(stored.size(), records.size());
  const std::string json = hk::records_to_json(stored);
  const auto back = hk::records_from_json(json);
  ASSERT_EQ(back.size(), stored.size());
  for (std::size_t i = 0; i < back.size(); ++i) expect_same(back[i], stored[i]);

  const std::string other = (dir_ / "other.sqlite").string();
  hk::TuningDb(other, true).put_all(back);
  const auto reimported = hk::TuningDb(other, false).all();
  ASSERT_EQ(reimported.size(), stored.size());
  for (std::size_t i = 0; i < stored.size(); ++i) expect_same(reimported[i], stored[i]);

  for (const char* bad : {"", "{}", "[{\"op\": 1}]", "[", "[{\"op\": \"cumulative_sum\"}]", "[] x"})
    EXPECT_THROW(hk::records_from_json(bad), hk::Error) << bad;
}

TEST_F(Tuning, ImportRefusesUnrepresentableFieldsAndLeavesTheDatabaseUnchanged) {
  ScanCase c({64, 7}, 1);
  hk::TuningDb db(path_, true);
  db.put(record_for(c.problem(), "scan.tiled(tile=3, stream=0)", 500));
  const auto before = db.all();
  hk::TuningRecord other = record_for(ScanCase({32, 9}, 0).problem(), "reference", 80);
  const std::string good = hk::records_to_json({other});
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  // Each would be undefined behaviour converted to an integer, or stored cut at the NUL.
  for (const std::string& bad :
       {replaced("\"algorithm_version\": 1", "\"algorithm_version\": 1e300"),
        replaced("\"algorithm_version\": 1", "\"algorithm_version\": 2.5"),
        replaced("\"algorithm_version\": 1", "\"algorithm_version\": -1"),
        replaced("\"candidates\": 3", "\"candidates\": 1e19"),
        replaced("\"repetitions\": 7", "\"repetitions\": -3"),
        replaced("\"fingerprint\": \"", "\"fingerprint\": \"a\\u0000"),
        // Records no call could look up: another operator, types or strategy than the operator's.
        replaced("\"op\": \"cumulative_sum\"", "\"op\": \"foo\""),
        replaced("\"dtype\": \"float32\"", "\"dtype\": \"float99\""),
        replaced("\"dtype\": \"float32\"", "\"dtype\": \"float32,float32\""),
        replaced("\"op\": \"cumulative_sum\"", "\"op\": \"quantized_linear_matmul\""),
        replaced("\"schedule\": \"reference\"", "\"schedule\": \"qmm.tiled\""),
        // A valid record before a broken one: neither is written.
        good.substr(0, good.rfind(']')) + ", {\"op\": 1}]"}) {
    EXPECT_THROW(hk::import_records(db, bad), hk::Error) << bad;
    const auto after = db.all();
    ASSERT_EQ(after.size(), before.size()) << bad;
    for (std::size_t i = 0; i < after.size(); ++i) expect_same(after[i], before[i]);
  }
  // A schedule that does not parse is the file's error, naming its record and field.
  try {
    hk::import_records(db, replaced("\"schedule\": \"", "\"schedule\": \"(("));
    ADD_FAILURE() << "a record whose schedule does not parse was imported";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_file) << e.what();
    EXPECT_EQ(e.subject(), "record 0") << e.what();
    EXPECT_NE(e.rule().find("field 'schedule'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.all().size(), before.size());
  const auto imported = hk::import_records(db, good);
  ASSERT_EQ(imported.size(), 1u);
  expect_same(imported[0], other);
  EXPECT_EQ(db.all().size(), before.size() + 1);
  // Two records of one key: the database keeps the last, and so does the count returned.
  hk::TuningRecord faster = other;
  faster.median_ns = 40;
  const auto twice = hk::import_records(db, hk::records_to_json({other, faster}));
  ASSERT_EQ(twice.size(), 1u);
  expect_same(twice[0], faster);
  EXPECT_EQ(db.all().size(), before.size() + 1);
}

// Records written by `writer` in child `id`: a checkable function of the id and the index.
hk::TuningRecord child_record(int id, int i) {
  hk::TuningRecord r;
  r.op = "cumulative_sum";
  r.dtype = "float32";
  r.shape = {std::int64_t(i + 1), std::int64_t(id + 1)};
  r.stride_class = "packed";
  r.params = "writer=" + std::to_string(id);
  r.fingerprint = "test";
  r.schedule = "scan.tiled(tile=" + std::to_string(i % 100 + 1) + ")";
  r.median_ns = 1000.0 * id + i;
  r.repetitions = i;
  return r;
}

// Child processes use SQLite only (no OpenMP after fork) and leave with _exit.
pid_t spawn_writer(const std::string& path, int id, int count, int batch) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  int status = 0;
  try {
    hk::TuningDb db(path, true);
    for (int i = 0; count < 0 || i < count; i += batch) {
      std::vector<hk::TuningRecord> records;
      for (int j = 0; j < batch; ++j) records.push_back(child_record(id, i + j));
      db.put_all(records);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer %d: %s\n", id, e.what());  // the parent's failure then says why
    status = 1;
  }
  _exit(status);
}

TEST_F(Tuning, ConcurrentWritersLoseNothing) {
  const int count = 300;
  std::vector<pid_t> children;
  for (int id = 0; id < 3; ++id) children.push_back(spawn_writer(path_, id, count, id + 1 == 3 ? 3 : 1));
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const auto all = hk::TuningDb(path_, false).all();
  EXPECT_EQ(all.size(), std::size_t(3 * count));
  for (const auto& r : all) {
    const int id = std::stoi(r.params.substr(7));
    const auto want = child_record(id, int(r.shape[0]) - 1);
    expect_same(r, want);
  }
}

TEST_F(Tuning, WriterKilledMidWriteLeavesAUsableDatabase) {
  const int batch = 50;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const pid_t pid = spawn_writer(path_, attempt, -1, batch);
    std::this_thread::sleep_for(std::chrono::milliseconds(60 + 40 * attempt));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  EXPECT_EQ(integrity(path_), "ok");
  hk::TuningDb db(path_, true);
  const auto all = db.all();
  EXPECT_FALSE(all.empty()) << "the writers were killed before their first commit: nothing was tested";
  std::map<int, int> per_writer;
  for (const auto& r : all) {
    const int id = std::stoi(r.params.substr(7));
    expect_same(r, child_record(id, int(r.shape[0]) - 1));
    ++per_writer[id];
  }
  for (const auto& [id, n] : per_writer) EXPECT_EQ(n % batch, 0) << "writer " << id << " left a partial transaction";
  db.put(child_record(7, 0));  // still writable
  EXPECT_TRUE(db.find(child_record(7, 0)).has_value());
}

TEST_F(Tuning, TunerPicksAVerifiedCandidateOfTheSpace) {
  for (const hk::TuneProblem& p :
       {hk::TuneProblem{hk::Operator::cumulative_product, {hk::DataType::float32}, {48, 200}, {.axis = 0}},
        hk::TuneProblem{hk::Operator::cumulative_sum, {hk::DataType::int32}, {3, 5000}, {.axis = 1}},
        hk::TuneProblem{hk::Operator::quantized_linear_matmul,
                        {hk::DataType::uint8, hk::DataType::int8, hk::DataType::int8},
                        {20, 70, 90},
                        {}}}) {
    const auto space = hk::schedule_space(p);
    ASSERT_FALSE(space.empty());
    std::set<std::string> texts;
    for (const auto& s : space) {
      EXPECT_NE(s.strategy(), "reference");
      EXPECT_TRUE(texts.insert(s.to_string()).second) << "duplicate " << s.to_string();
    }
    hk::TuneOptions options;
    options.budget_seconds = 2;
    const hk::TuneResult r = hk::tune(p, options);
    const bool in_space = texts.count(r.record.schedule) || r.record.schedule == hk::heuristic_schedule(p).to_string();
    EXPECT_TRUE(in_space) << r.record.schedule;
    EXPECT_GT(r.record.median_ns, 0);
    EXPECT_GT(r.record.default_ns, 0);
    EXPECT_GE(r.record.candidates, 1);
    EXPECT_LE(r.record.candidates, r.space_size);
    const hk::TuningRecord key = hk::tuning_key(p);
    EXPECT_EQ(r.record.fingerprint, hk::machine_fingerprint());
    EXPECT_EQ(r.record.shape, key.shape);
    EXPECT_EQ(r.record.params, key.params);
  }
}

TEST(TunerOptions, RefusesABudgetThatIsNotAFiniteNumberOfSecondsAboveZero) {
  const hk::TuneProblem p{hk::Operator::cumulative_sum, {hk::DataType::float32}, {4, 16}, {.axis = 1}};
  for (double budget : {std::nan(""), HUGE_VAL, -HUGE_VAL, 0.0, -1.0}) {
    hk::TuneOptions options;
    options.budget_seconds = budget;
    bool measured = false;
    options.progress = [&](const hk::TuneProgress&) { measured = true; };
    try {
      hk::tune(p, options);
      ADD_FAILURE() << "budget " << budget << " was accepted";
    } catch (const hk::Error& e) {
      EXPECT_EQ(e.code(), hk::Errc::invalid_parameter) << budget;
      EXPECT_EQ(e.subject(), "budget_seconds") << budget;
    }
    EXPECT_FALSE(measured) << "budget " << budget << ": a candidate was measured before the refusal";
  }
}

// Out-of-range enumerators and a non-finite timing length are refused, not read as something else.
TEST(TunerOptions, RefusesValuesOutsideTheirTypes) {
  const hk::TuneProblem p{hk::Operator::cumulative_sum, {hk::DataType::float32}, {4, 16}, {.axis = 1}};
  for (const double seconds : {std::nan(""), HUGE_VAL, -1.0})
    EXPECT_THROW(hk::time_schedules(p, {hk::Schedule("scan.tiled")}, seconds), hk::Error) << seconds;
  hk::TuneProblem other = p;
  other.op = hk::Operator(9);
  EXPECT_THROW(hk::heuristic_schedule(other), hk::Error);
  EXPECT_THROW(hk::tuning_key(other), hk::Error);
  EXPECT_THROW(hk::schedule_space(other), hk::Error);
  const hk::Isa active = hk::active_isa();
  EXPECT_THROW(hk::set_max_isa(hk::Isa(-1)), hk::Error);
  EXPECT_THROW(hk::set_max_isa(hk::Isa(5)), hk::Error);
  EXPECT_EQ(hk::active_isa(), active);
  EXPECT_THROW(hk::binding_plan(2, hk::PinPolicy(9)), hk::Error);
}

// Past 2^30 multiply-adds the tuner takes its expected results from the heuristic's schedule
// rather than the slow reference: the reference algorithm must agree with them bit for bit.
TEST(TunerWorkload, LargeMatmulExpectationsMatchTheReference) {
  const hk::TuneProblem p{hk::Operator::quantized_linear_matmul,
                          {hk::DataType::int8, hk::DataType::uint8, hk::DataType::uint8},
                          {1024, 1024, 1031},
                          {}};
  hk::detail::TuneWorkload w(p);
  w.run(hk::Schedule("reference"));
  EXPECT_TRUE(w.matches_reference());
}

// Likewise past 2^24 scan elements: the reference agrees with them within the scan tolerance.
TEST(TunerWorkload, LargeScanExpectationsMatchTheReference) {
  for (const auto& [type, axis] : {std::pair{hk::DataType::float32, 1}, std::pair{hk::DataType::int64, 0}}) {
    const hk::TuneProblem p{hk::Operator::cumulative_sum, {type}, {4099, 4097}, {.axis = axis}};
    hk::detail::TuneWorkload w(p);
    w.run(hk::Schedule("reference"));
    EXPECT_TRUE(w.matches_reference()) << hk::name_of(type) << " axis " << axis;
  }
}

TEST_F(Tuning, DispatchFromManyThreadsAtOnce) {
  ScanCase tuned({200, 64}, 1);
  hk::TuningDb(path_, true).put(record_for(tuned.problem(), "scan.tiled(tile=2, stream=0)"));
  hk::reset_dispatch();
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      ScanCase c({std::int64_t(200 + 10 * (t % 3)), 64}, 1);
      bool good = true;
      for (int i = 0; i < 20; ++i) {
        std::fill(c.y.begin(), c.y.end(), 0.0f);
        c.run();
        good = good && c.y == c.want;
      }
      ok[t] = good;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

}  // namespace

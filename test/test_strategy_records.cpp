// The strategy records every operator lists: each one plans its bare schedule into its own plan
// alternative, prints a plan that plans back to itself, declares a search space within its own
// parameter table, and says why when it is not available.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "runtime/tuning/tuner_problem.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

namespace {

using hk::Schedule;

// Checks every record of `list` on one validated call; `plan` plans a schedule for that call.
template <class List, class Call, class Plan>
void check_records(const List& list, const Call& call, Plan&& plan) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& r = *list[i];
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(names.insert(r.name).second) << "listed twice";
    EXPECT_GT(std::string(r.meaning).size(), 20u);
    std::set<std::string> keys;
    for (const auto& p : r.params) {
      EXPECT_TRUE(keys.insert(p.key).second) << p.key;
      EXPECT_LE(p.min, p.max) << p.key;
      EXPECT_GT(std::string(p.meaning).size(), 5u) << p.key;
    }
    // The list and the plan variant agree in order: the record runs the plans it makes.
    const auto planned = plan(Schedule(r.name));
    EXPECT_EQ(planned.index(), i);
    EXPECT_EQ(&strategy_of(planned), &r);
    // Every parameter explicit, in table order, and stable under planning again.
    const Schedule printed = to_schedule(planned);
    ASSERT_EQ(printed.params().size(), r.params.size());
    for (std::size_t k = 0; k < r.params.size(); ++k) EXPECT_EQ(printed.params()[k].key, r.params[k].key);
    EXPECT_EQ(to_schedule(plan(printed)), printed);
    // The search space names only the record's parameters, and every value of it is part of a
    // candidate the record plans; a combination the call cannot take (more rows a thread than a
    // kernel holds) is refused as an invalid schedule, and the tuner leaves it out.
    if (const hk::detail::SearchSpace space = r.space(call)) {
      const auto& axes = *space;
      for (const auto& axis : axes) {
        EXPECT_TRUE(keys.count(axis.key)) << axis.key;
        ASSERT_FALSE(axis.values.empty()) << axis.key;
      }
      std::vector<std::set<std::string>> planned_values(axes.size());
      for (const Schedule& s : hk::detail::space_points(r.name, axes)) {
        try {
          plan(s);
          for (std::size_t k = 0; k < axes.size(); ++k) planned_values[k].insert(std::string(*s.find(axes[k].key)));
        } catch (const hk::Error& e) {
          EXPECT_EQ(e.code(), hk::Errc::invalid_schedule) << s.to_string();
        }
      }
      for (std::size_t k = 0; k < axes.size(); ++k)
        for (const auto& v : axes[k].values)
          EXPECT_TRUE(planned_values[k].count(v)) << axes[k].key << "=" << v << " is in no candidate that plans";
    }
    const hk::detail::Availability a = r.available();
    EXPECT_EQ(a.available, a.why_not.empty()) << a.why_not;
  }
  EXPECT_EQ(std::string(list[0]->name), "reference");
}

TEST(StrategyRecords, Scans) {
  using Shape = std::vector<std::int64_t>;
  for (const Shape& shape : {Shape{64, 1000}, Shape{3, 4096, 8}}) {
    const hk::TensorDesc desc(hk::DataType::float32, shape);
    std::vector<float> x(std::size_t(desc.element_count()), 1.0f), y(x.size());
    for (const int axis : {0, 1}) {
      hk::detail::CumulativeCall call{false, {desc, x.data()}, {desc, y.data()}, {axis}};
      hk::detail::validate(call);
      check_records(hk::detail::scan_strategies(), call,
                    [&](const Schedule& s) { return hk::detail::plan_scan(call, s); });
    }
  }
}

#ifdef HETKERN_OFFLOAD
// The columns kernel's space: rows a thread holds and tiles in flight, the stages only for lines in
// 16-byte vectors, the chunks where the default cuts the axis into them, and team sizes alone
// where the type runs on the host only.
TEST(StrategyRecords, OffloadColumnsSearchesRowsAndStagesWhereTheKernelTakesThem) {
  using Shape = std::vector<std::int64_t>;
  struct Case {
    hk::DataType type;
    Shape shape;
    std::map<std::string, std::vector<std::string>> axes;
  };
  // Team sizes everywhere; in one pass also the default's width and 256 and 512 bytes of lines a
  // team, as lines: float32 and 2-byte types default to 256 bytes, int32 to 512, and below 16384
  // lines to blocks for 256 teams (4096 float32 lines: 1024 vectors, 4 a team).
  const std::vector<std::string> threads = {"64", "128", "256"}, rows = {"6", "8", "10", "12", "16"};
  const std::vector<std::string> four_byte_width = {"64", "128"}, two_byte_width = {"128", "256"};
  const std::vector<Case> cases = {
      {hk::DataType::float32, {3, 4096, 8},
       {{"threads", threads}, {"width", four_byte_width}, {"items", rows}, {"stages", {"1", "2", "3"}}}},
      {hk::DataType::float32, {64, 4096},
       {{"threads", threads}, {"width", {"16", "64", "128"}}, {"items", rows}, {"stages", {"1", "2", "3"}}}},
      {hk::DataType::int32, {5, 16384, 4},
       {{"threads", threads}, {"width", {"128", "64"}}, {"items", rows}, {"stages", {"1", "2", "3"}}}},
      {hk::DataType::float32, {3, 16383, 3}, {{"threads", threads}, {"width", four_byte_width}, {"items", {"6", "8"}}}},
      {hk::DataType::float16, {3, 16383, 3}, {{"threads", threads}, {"width", two_byte_width}, {"items", rows}}},
      {hk::DataType::float32, {4096, 1000},
       {{"threads", threads}, {"width", {"32"}}, {"items", rows}, {"chunks", {"8", "16", "4"}}, {"stages", {"1", "2", "3", "4"}}}},
      {hk::DataType::float32, {4096, 999, 1}, {{"threads", threads}, {"width", {"32"}}, {"items", {"6", "8"}}, {"chunks", {"64", "128", "32"}}}},
      {hk::DataType::float64, {3, 4096, 8}, {{"threads", threads}}},
  };
  for (const Case& c : cases) {
    const hk::TensorDesc desc(c.type, c.shape);
    const std::size_t bytes = std::size_t(desc.element_count()) * std::size_t(hk::size_of(c.type));
    std::vector<std::byte> x(bytes + 16), y(bytes + 16);
    const auto aligned = [](std::vector<std::byte>& v) {
      return v.data() + (16 - reinterpret_cast<std::uintptr_t>(v.data()) % 16) % 16;
    };
    hk::detail::CumulativeCall call{false, {desc, aligned(x)}, {desc, aligned(y)}, {0}};
    hk::detail::validate(call);
    SCOPED_TRACE(std::string(hk::name_of(c.type)) + " " + std::to_string(c.shape[1]));
    const hk::detail::SearchSpace space = hk::detail::scan_offload_columns().space(call);
    ASSERT_TRUE(space.has_value());
    std::map<std::string, std::vector<std::string>> got;
    for (const auto& axis : *space) got[axis.key] = axis.values;
    EXPECT_EQ(got, c.axes);
  }
}
#endif

TEST(StrategyRecords, Matmul) {
  using Shape = std::vector<std::int64_t>;
  for (const Shape& mnk : {Shape{5, 7, 9}, Shape{300, 200, 700}}) {
    const std::vector<hk::DataType> types = {hk::DataType::uint8, hk::DataType::int8, hk::DataType::uint8};
    const hk::detail::TuneWorkload w({hk::Operator::quantized_linear_matmul, types, mnk, {}}, false);
    const hk::detail::QmmProblem& problem = w.qmm_problem();
    check_records(hk::detail::qmm_strategies(), problem,
                  [&](const Schedule& s) { return hk::detail::plan_qmm(problem, s); });
  }
}

// Values outside the public enums are named "?" or refused, never read past a table.
TEST(StrategyRecords, ValuesOutsideTheEnumsAreNamedOrRefused) {
  EXPECT_STREQ(hk::name_of(static_cast<hk::Isa>(9)), "?");
  EXPECT_STREQ(hk::name_of(static_cast<hk::Isa>(-1)), "?");
  EXPECT_STREQ(hk::name_of(static_cast<hk::PinPolicy>(9)), "?");
  EXPECT_EQ(hk::name_of(static_cast<hk::Operator>(7)), "?");
  const auto bad = static_cast<hk::Operator>(7);
  EXPECT_THROW(hk::strategies(bad), hk::Error);
  float x[3] = {1, 2, 3}, y[3] = {};
  const hk::TensorDesc d(hk::DataType::float32, {3});
  try {
    hk::default_schedule(bad, {d, x}, {d, y}, {0});
    ADD_FAILURE() << "an Operator value out of range was accepted";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_parameter) << e.what();
    EXPECT_EQ(e.subject(), "op") << e.what();
  }
}

TEST(StrategyRecords, HostStrategiesAreAvailableEverywhere) {
  // The offload, split and several-device strategies are tuning candidates only where there is a GPU.
  const auto host = [](const char* name) {
    const std::string n = name;
    return n.find(".offload") == std::string::npos && n.find(".split") == std::string::npos &&
           n.find(".devices") == std::string::npos;
  };
  for (const auto* r : hk::detail::scan_strategies())
    if (host(r->name)) EXPECT_TRUE(r->available().available) << r->name;
  for (const auto* r : hk::detail::qmm_strategies())
    if (host(r->name)) EXPECT_TRUE(r->available().available) << r->name;
}

TEST(StrategyRecords, ParametersAreReadByName) {
  const hk::TensorDesc desc(hk::DataType::float32, {8, 300});
  std::vector<float> x(2400, 1.0f), y(2400);
  hk::detail::CumulativeCall call{false, {desc, x.data()}, {desc, y.data()}, {1}};
  hk::detail::validate(call);
  // Any order of keys in the text gives the same plan.
  const auto a = hk::detail::plan_scan(call, Schedule::parse("scan.parallel(pin=none, threads=3, tile=5)"));
  const auto b = hk::detail::plan_scan(call, Schedule::parse("scan.parallel(tile=5, threads=3, pin=none)"));
  EXPECT_EQ(to_schedule(a), to_schedule(b));
  const auto& p = std::get<hk::detail::ParallelScanPlan>(a);
  EXPECT_EQ(p.tile, 5);
  EXPECT_EQ(p.threads, 3);
  EXPECT_EQ(p.pin, hk::PinPolicy::none);
}

}  // namespace

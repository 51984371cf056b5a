// The text and JSON forms of schedules, and their checking against strategy tables.
#include <gtest/gtest.h>

#include <utility>

#include "hetkern/hetkern.hpp"

namespace {

using hk::Errc;
using hk::Schedule;

TEST(ScheduleText, ParsesAndPrintsCanonically) {
  const Schedule s = Schedule::parse("  scan.parallel( tile = 256 ,threads=4 ) ");
  EXPECT_EQ(s.strategy(), "scan.parallel");
  ASSERT_EQ(s.params().size(), 2u);
  EXPECT_EQ(s.find("tile"), "256");
  EXPECT_EQ(s.find("threads"), "4");
  EXPECT_FALSE(s.find("block").has_value());
  EXPECT_EQ(s.to_string(), "scan.parallel(tile=256, threads=4)");
  EXPECT_EQ(Schedule::parse(s.to_string()), s);
  EXPECT_EQ(s.to_json(), R"({"strategy": "scan.parallel", "params": {"tile": 256, "threads": 4}})");
}

TEST(ScheduleText, IntegersHaveOneTextWhateverTheirLeadingZeros) {
  EXPECT_EQ(Schedule::parse("scan.tiled(tile=0064, stream=00)"), Schedule::parse("scan.tiled(tile=64, stream=0)"));
  EXPECT_EQ(Schedule::parse("scan.tiled(tile=0064, stream=00)").to_string(), "scan.tiled(tile=64, stream=0)");
  EXPECT_EQ(Schedule::parse("scan.tiled(tile=0000000000000000000007)").find("tile"), "7");
}

TEST(ScheduleText, BareNamesAndWordValues) {
  EXPECT_EQ(Schedule::parse("reference").to_string(), "reference");
  EXPECT_EQ(Schedule::parse("reference()").to_string(), "reference");
  const Schedule s = Schedule::parse("qmm.tiled(isa=avx2)");
  EXPECT_EQ(s.find("isa"), "avx2");
  EXPECT_EQ(s.to_json(), R"({"strategy": "qmm.tiled", "params": {"isa": "avx2"}})");
}

TEST(ScheduleText, SetReplacesOrAppends) {
  Schedule s("scan.tiled");
  s.set("tile", 8).set("tile", 16).set("threads", 2);
  EXPECT_EQ(s.to_string(), "scan.tiled(tile=16, threads=2)");
}

TEST(ScheduleText, MalformedTextIsAnError) {
  const char* bad[] = {"",          "Scan.tiled",       "scan.",          "scan..tiled",
                       "scan.tiled(", "scan.tiled(tile)", "scan.tiled(tile=)", "scan.tiled(=3)",
                       "scan.tiled(tile=3", "scan.tiled(tile=3,)", "scan.tiled(tile=3) x",
                       "scan.tiled(tile=-3)", "scan.tiled(tile=3x)", "scan.tiled(tile=1, tile=2)",
                       "scan.tiled(tile=1234567890123456789012)", "scan tiled"};
  for (const char* text : bad) {
    try {
      Schedule::parse(text);
      ADD_FAILURE() << "accepted \"" << text << "\"";
    } catch (const hk::Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_schedule) << text;
      EXPECT_EQ(e.op(), "schedule") << text;
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

// A message names the offending character whole: a byte of a multi-byte character by its value, so
// that the message stays valid UTF-8 (Python decodes it).
TEST(ScheduleText, MessagesNameTheOffendingCharacter) {
  const std::pair<const char*, const char*> cases[] = {
      {"scan.tiled(tile=-1)", "got '-'"},
      {"scan.til\xc3\xa9" "d", "byte 0xC3"},
      {"scan.tiled(tile=3)\xe2\x82\xac", "byte 0xE2"},
      {"scan.tiled(tile=3) x", "unexpected 'x'"}};
  for (const auto& [text, phrase] : cases) {
    try {
      Schedule::parse(text);
      ADD_FAILURE() << "accepted \"" << text << "\"";
    } catch (const hk::Error& e) {
      const std::string rule = e.rule();
      EXPECT_NE(rule.find(phrase), std::string::npos) << rule;
      EXPECT_EQ(rule.find('\xc3'), std::string::npos) << rule;
      EXPECT_EQ(rule.find('\xe2'), std::string::npos) << rule;
    }
  }
}

TEST(ScheduleText, EveryOperatorListsReferenceFirstAndDocumentsParameters) {
  for (auto op : {hk::Operator::cumulative_sum, hk::Operator::cumulative_product,
                  hk::Operator::quantized_linear_matmul}) {
    const auto list = hk::strategies(op);
    ASSERT_GE(list.size(), 3u) << hk::name_of(op);
    EXPECT_EQ(list.front().name, "reference");
    for (const auto& s : list) {
      EXPECT_FALSE(s.meaning.empty()) << s.name;
      for (const auto& p : s.params) {
        EXPECT_LE(p.min, p.max) << s.name << "." << p.key;
        EXPECT_FALSE(p.meaning.empty()) << s.name << "." << p.key;
      }
    }
  }
}

}  // namespace

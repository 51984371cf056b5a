// The whole test binary runs against a tuning database of its own, never the user's: a call on
// host tensors large enough for the GPU to win it measures the machine's rates and stores them
// (runtime/tuning/machine_rates.cpp), and on a GPU machine the suite left them in
// ~/.cache/hetkern for the user's later calls. A database named by HETKERN_TUNING_DB stands.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "hetkern/tuning.hpp"
#include "tuning_test_util.hpp"

namespace {

class PrivateTuningDb : public ::testing::Environment {
 public:
  void SetUp() override {
    if (const char* set = std::getenv("HETKERN_TUNING_DB"); set && *set) return;
    dir_ = std::filesystem::temp_directory_path() / ("hetkern-tests-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    setenv("HETKERN_TUNING_DB", (dir_ / "tuning.sqlite").c_str(), 1);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

 private:
  std::filesystem::path dir_;
};

const ::testing::Environment* const private_tuning_db =
    ::testing::AddGlobalTestEnvironment(new PrivateTuningDb);

}  // namespace

// The database every test without one of its own uses is not the one the user's calls would.
TEST(PrivateTuningDb, TheSuiteNeverUsesTheUsersDatabase) {
  const std::string suite = hk::tuning_db_path();
  std::string users;
  {
    const hk::test::ScopedEnv none("HETKERN_TUNING_DB", nullptr);
    users = hk::tuning_db_path();
  }
  EXPECT_FALSE(suite.empty());
  EXPECT_NE(suite, users);
}

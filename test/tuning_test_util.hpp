// A test fixture with a fresh, private tuning database and the dispatch environment reset.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "runtime/tuning/dispatch.hpp"

namespace hk::test {

// Sets the environment variable `name` to `value` (unsets it for null) for its lifetime, then puts
// back what was there before.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A database path of its own per test (HETKERN_TUNING_DB), HETKERN_SCHEDULE unset, HETKERN_LOG
// set to `log` (unset when null); all of it undone afterwards, the suite's own database
// (test_private_tuning_db.cpp) named again.
class FreshTuningDb : public ::testing::Test {
 protected:
  explicit FreshTuningDb(const char* log = nullptr) : log_(log) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hetkern-tuning-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "tuning.sqlite").string();
    db_env_.emplace("HETKERN_TUNING_DB", path_.c_str());
    unsetenv("HETKERN_SCHEDULE");
    if (log_) setenv("HETKERN_LOG", log_, 1);
    else unsetenv("HETKERN_LOG");
    hk::reset_dispatch();
  }
  void TearDown() override {
    db_env_.reset();
    unsetenv("HETKERN_SCHEDULE");
    unsetenv("HETKERN_LOG");
    hk::reset_dispatch();
    std::filesystem::remove_all(dir_);
  }

  std::filesystem::path dir_;
  std::string path_;

 private:
  const char* log_;
  std::optional<ScopedEnv> db_env_;
};

}  // namespace hk::test

// Runs a test body once per instruction-set level this machine can execute.
#pragma once

#include <vector>

#include "hetkern/info.hpp"

namespace hk::test {

/// Every level from portable up to detected_isa().
inline std::vector<Isa> runnable_isas() {
  std::vector<Isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<Isa>(i));
  return out;
}

/// Caps the kernels at a level for the lifetime of the object, then restores the previous cap.
class IsaCap {
 public:
  explicit IsaCap(Isa level) : previous_(active_isa()) { set_max_isa(level); }
  ~IsaCap() { set_max_isa(previous_); }
  IsaCap(const IsaCap&) = delete;
  IsaCap& operator=(const IsaCap&) = delete;

 private:
  Isa previous_;
};

}  // namespace hk::test

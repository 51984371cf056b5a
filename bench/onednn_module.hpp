// What libhetkern_onednn (bench/onednn_module.cpp) exports: oneDNN's matmul behind an interface,
// so that only the benchmarks that race it load oneDNN (and the GNU OpenMP runtime it brings),
// never `hetkern run`, `tune` or `info`. Opened by bench/onednn_baseline.cpp on first use.
#pragma once

#include <memory>
#include <string>

#include "bench/onednn_baseline.hpp"

namespace hk::bench {

/// One oneDNN matmul primitive for one problem (OnednnMatmul's operations).
class OnednnKernel {
 public:
  virtual ~OnednnKernel() = default;
  virtual std::string implementation() const = 0;
  virtual void pack_weights() = 0;
  virtual void run() = 0;
};

struct OnednnTable {
  /// The primitive, or null with `reason` set where oneDNN cannot run the problem.
  std::unique_ptr<OnednnKernel> (*make)(const OnednnQmmProblem& problem, std::string& reason);
  std::string (*cap_isa)(Isa level);
  std::string (*version)();
};

}  // namespace hk::bench

/// The module's one entry point, looked up by name.
extern "C" const hk::bench::OnednnTable* hetkern_onednn_table();
inline constexpr const char* hetkern_onednn_module = "libhetkern_onednn.so";

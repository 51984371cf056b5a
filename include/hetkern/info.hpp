// What this build of hetkern is and what it found on this machine.
#pragma once

#include <string>
#include <vector>

namespace hk {

struct BuildInfo {
  std::string version;   // library version, "0.1.0"
  std::string compiler;  // compiler and version that built the library
  bool offload = false;  // built with OpenMP target offload
  bool openmp = false;   // built with host OpenMP
};

BuildInfo build_info();

/// Instruction-set extensions the CPU reports that hetkern's kernels can use, in a fixed order
/// ("sse4.2", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vnni", "amx-int8", ...).
std::vector<std::string> cpu_features();

/// Threads a host-parallel schedule uses by default (OpenMP's maximum for this process).
int default_threads();

}  // namespace hk

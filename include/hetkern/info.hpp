// What this build of hetkern is and what it found on this machine.
#pragma once

#include <string>
#include <string_view>
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

/// The most OpenMP threads a host schedule's `threads` parameter takes.
inline constexpr int max_threads = 1024;

/// Threads a host-parallel schedule uses by default: OpenMP's maximum for this process, at most
/// max_threads.
int default_threads();

/// Instruction-set levels of the host kernels; each level includes the ones before it.
///   portable     plain C++ (x86-64 baseline), always available
///   avx2         AVX2 + FMA + F16C
///   avx512       AVX-512 F/BW/DQ/VL
///   avx512_vnni  avx512 + VNNI (vpdpbusd)
///   amx          avx512_vnni + AMX-INT8 (tdpbusd), with the Linux tile-data permission granted
enum class Isa { portable, avx2, avx512, avx512_vnni, amx };

/// "portable", "avx2", "avx512", "avx512_vnni" or "amx".
const char* name_of(Isa isa);
/// The level named by `text` (as name_of writes it); throws hk::Error(Errc::invalid_parameter).
Isa parse_isa(std::string_view text);

/// The best level this CPU and operating system support.
Isa detected_isa();

/// The level the kernels use: detected_isa(), capped by set_max_isa() or, before the first call
/// to it, by the environment variable HETKERN_MAX_ISA (a level name; an unknown name is reported
/// once on stderr and ignored).
Isa active_isa();

/// The host kernels an operator family runs at `isa`, in words: {"cumulative", "..."} and
/// {"quantized_linear_matmul", "..."}, for reports such as `hetkern info`.
struct KernelPath {
  std::string op;
  std::string kernels;
};
std::vector<KernelPath> kernel_paths(Isa isa);

/// Caps the level used by later calls (for comparisons and tests, like oneDNN's max CPU ISA).
/// A cap above detected_isa() is allowed and changes nothing. Returns the resulting active_isa().
/// A value that is no Isa throws hk::Error (Errc::invalid_parameter).
Isa set_max_isa(Isa cap);

}  // namespace hk

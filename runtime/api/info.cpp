// Build description, CPU feature detection and the GPU's team memory.
#include "hetkern/info.hpp"

#include <omp.h>

#include <algorithm>

#include "schedules/qmm_kernels.hpp"
#include "schedules/scan_kernels.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#include "runtime/platform/gpu_arch.hpp"
#endif

namespace hk {

BuildInfo build_info() {
  BuildInfo b;
  b.version = HETKERN_VERSION;
  b.compiler = __VERSION__;
#ifdef HETKERN_OFFLOAD
  b.offload = true;
#endif
#ifdef _OPENMP
  b.openmp = true;
#endif
  return b;
}

#ifdef HETKERN_OFFLOAD
int gpu_team_memory_bytes() { return offload_on_host() ? 0 : detail::cuda_team_memory_limit(offload_device()); }
#endif

std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
#if defined(__x86_64__)
  __builtin_cpu_init();
  struct Feature { const char* name; bool present; };
  const Feature features[] = {
      {"sse4.2", __builtin_cpu_supports("sse4.2") != 0},
      {"avx", __builtin_cpu_supports("avx") != 0},
      {"avx2", __builtin_cpu_supports("avx2") != 0},
      {"fma", __builtin_cpu_supports("fma") != 0},
      {"f16c", __builtin_cpu_supports("f16c") != 0},
      {"avx512f", __builtin_cpu_supports("avx512f") != 0},
      {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
      {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
      {"avx512vnni", __builtin_cpu_supports("avx512vnni") != 0},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
      {"amx-int8", __builtin_cpu_supports("amx-int8") != 0},
  };
  for (const auto& f : features)
    if (f.present) out.emplace_back(f.name);
#endif
  return out;
}

int default_threads() { return std::min(omp_get_max_threads(), max_threads); }

std::vector<KernelPath> kernel_paths(Isa isa) {
  const auto fast = detail::select_qmm_kernel(isa, true), exact = detail::select_qmm_kernel(isa, false);
  std::string qmm = fast.name;
  if (fast.run != exact.run)
    qmm += " where packing proves every |B'| <= 64, otherwise " + std::string(exact.name);
  return {{"cumulative", detail::scan_kernel_path(isa)}, {"quantized_linear_matmul", qmm}};
}

}  // namespace hk

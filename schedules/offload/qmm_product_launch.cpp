// qmm.offload and qmm.offload_mma: the launches of the product kernels (dp4a, and tensor cores
// through mma.sync or wgmma), their team shapes, and split-K's sum of the parts.
#include <omp.h>

#include "runtime/platform/gpu_arch.hpp"
#include "schedules/offload/qmm_dp4a_kernel.hpp"
#include "schedules/offload/qmm_launch.hpp"
#include "schedules/offload/qmm_mma_kernel.hpp"
#include "schedules/offload/qmm_wgmma_kernel.hpp"

namespace hk::detail::offload::qmm {
namespace {

constexpr int default_dp4a_threads = 256, default_mma_threads = 128, split_sum_threads = 256;
// The launch bounds. dp4a: 512 caps ptxas at 128 registers, so that two 256-thread teams share an
// SM, which beats one team with all the registers it wants. (A target region per kernel rather
// than one template over the kernel: clang 19 crashes on a launch bound that depends on a template
// parameter.)
constexpr int dp4a_bound = 512, mma_bound = 256;

template <bool Deep> void product_dp4a(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(dp4a_memory_bytes) ompx_attribute(__attribute__((launch_bounds(dp4a_bound))))
#pragma omp parallel
  product_team<Family::dp4a, Deep>(k);
}

template <bool Deep> void product_mma(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(mma_memory_bytes) ompx_attribute(__attribute__((launch_bounds(mma_bound))))
#pragma omp parallel
  product_team<Family::mma, Deep>(k);
}

void product_wgmma(const Kernel k, int device, int teams) {
#pragma omp target teams num_teams(teams) thread_limit(wgmma_team_threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(wgmma_memory_bytes) ompx_attribute(__attribute__((launch_bounds(wgmma_team_threads))))
#pragma omp parallel
  product_team<Family::wgmma, false>(k);
}

}  // namespace

void launch_dp4a(const Kernel& k, int device, int teams, int threads) {
  const int team_threads = staged_team_threads(threads, default_dp4a_threads, dp4a_bound);
  with_depth(k, [&](auto deep) { product_dp4a<decltype(deep)::value>(k, device, teams, team_threads); });
}

void launch_split_sum(const Kernel k, int device) {
  const int units = int(k.split_tiles * ((k.partial_rows + sum_rows - 1) / sum_rows));
#pragma omp target teams num_teams(units) thread_limit(split_sum_threads) device(device) firstprivate(k)
#pragma omp parallel
  split_sum_team(k);
  if (!k.bands_done) return;
#pragma omp target teams distribute parallel for device(device) firstprivate(k)
  for (i64 slot = 0; slot < k.split_tiles; ++slot) count_split_tile(k, slot);
}

void launch_mma(const Kernel& k, int device, int teams, int threads, bool warpgroups) {
  if (warpgroups && k.kp <= int32_depth && cuda_has_wgmma(device)) {
    product_wgmma(k, device, teams);
    return;
  }
  const int team_threads = staged_team_threads(threads, default_mma_threads, mma_bound);
  with_depth(k, [&](auto deep) { product_mma<decltype(deep)::value>(k, device, teams, team_threads); });
}

}  // namespace hk::detail::offload::qmm

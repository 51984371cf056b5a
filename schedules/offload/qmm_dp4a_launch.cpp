// qmm.offload: the launch of the dp4a product kernel and its team shape.
#include <omp.h>

#include "schedules/offload/qmm_dp4a_kernel.hpp"
#include "schedules/offload/qmm_launch.hpp"

namespace hk::detail::offload::qmm {
namespace {

constexpr int default_dp4a_threads = 256;
// The launch bound: 512 caps ptxas at 128 registers, so that two 256-thread teams share an SM,
// which beats one team with all the registers it wants.
constexpr int dp4a_bound = 512;

template <bool Deep>
void product_dp4a(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(dp4a_memory_bytes) ompx_attribute(__attribute__((launch_bounds(dp4a_bound))))
#pragma omp parallel
  product_team<false, Deep>(k);
}

}  // namespace

void launch_dp4a(const Kernel& k, int device, int teams, int threads) {
  const int team_threads = staged_team_threads(threads, default_dp4a_threads, dp4a_bound);
  with_depth(k, [&](auto deep) { product_dp4a<decltype(deep)::value>(k, device, teams, team_threads); });
}

}  // namespace hk::detail::offload::qmm

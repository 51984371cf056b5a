// qmm.offload_mma: the launch of the tensor-core product kernel and its team shape.
#include <omp.h>

#include "schedules/offload/qmm_launch.hpp"
#include "schedules/offload/qmm_mma_kernel.hpp"

namespace hk::detail::offload::qmm {
namespace {

constexpr int default_mma_threads = 128;
// The launch bound. (A kernel per product rather than one template: clang 19 crashes on a launch
// bound that depends on a template parameter.)
constexpr int mma_bound = 256;

template <bool Deep>
void product_mma(const Kernel k, int device, int teams, int threads) {
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(k) \
    ompx_dyn_cgroup_mem(mma_memory_bytes) ompx_attribute(__attribute__((launch_bounds(mma_bound))))
#pragma omp parallel
  product_team<true, Deep>(k);
}

}  // namespace

void launch_mma(const Kernel& k, int device, int teams, int threads) {
  const int team_threads = staged_team_threads(threads, default_mma_threads, mma_bound);
  with_depth(k, [&](auto deep) { product_mma<decltype(deep)::value>(k, device, teams, team_threads); });
}

}  // namespace hk::detail::offload::qmm

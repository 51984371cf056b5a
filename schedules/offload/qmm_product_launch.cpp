// qmm.offload and qmm.offload_mma: the launches of the product kernels (dp4a, and tensor cores
// through mma.sync or wgmma), their team shapes, and the wgmma kernel's tensor maps.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "hetkern/error.hpp"
#include "runtime/platform/cuda_tensor_map.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "runtime/platform/launch_shape.hpp"
#include "schedules/offload/qmm_dp4a_kernel.hpp"
#include "schedules/offload/qmm_launch.hpp"
#include "schedules/offload/qmm_mma_kernel.hpp"
#include "schedules/offload/qmm_wgmma_kernel.hpp"
#include "schedules/offload/qmm_wgmma_tma_kernel.hpp"
#include "schedules/qmm_offload.hpp"

namespace hk::detail::offload::qmm {
namespace {

static_assert(qmm_offload_max_stages == max_tensor_stages);

constexpr int default_dp4a_threads = 256, default_mma_threads = 128;
// The launch bounds. dp4a: 512 caps ptxas at 128 registers, so that two 256-thread teams share an
// SM, which beats one team with all the registers it wants. (A target region per kernel rather
// than one template over the kernel: clang 19 crashes on a launch bound that depends on a template
// parameter.)
constexpr int dp4a_bound = 512, mma_bound = 256;
// Each launch reads its Kernel through `kept`, a copy kept on the device (ProductArgs), or else
// through `host[0:copies]`, which the launch copies there: an array section, so that a launch
// with a kept copy maps nothing. (Not as launch parameters, kernel_words.hpp: these kernels ran
// slower so, docs/gpu.md#launches.) The same region serves both, so the image holds each kernel
// once.
// The teams and their threads come from launch_shape.
#define HK_PRODUCT_ARGS(a, teams_asked, threads_asked)                       \
  const Kernel* kept = (a).kept;                                             \
  const Kernel* host = &(a).k;                                               \
  const int copies = kept ? 0 : 1;                                           \
  const std::uint64_t epoch = (a).epoch;                                     \
  const LaunchShape shape = launch_shape(device, teams_asked, threads_asked); \
  const int teams = shape.teams, threads = shape.threads
#define HK_PRODUCT_KERNEL (kept ? *kept : *host)

template <bool Deep> void product_dp4a(const ProductArgs& a, int device, int teams_asked, int threads_asked) {
  HK_PRODUCT_ARGS(a, teams_asked, threads_asked);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) map(to : host[0 : copies]) \
    is_device_ptr(kept) firstprivate(epoch) ompx_dyn_cgroup_mem(dp4a_memory_bytes)                      \
    ompx_attribute(__attribute__((launch_bounds(dp4a_bound))))
#pragma omp parallel
  product_team<Family::dp4a, Deep, dp4a_stages>(HK_PRODUCT_KERNEL, epoch);
}

template <bool Deep, int Stages> void product_mma(const ProductArgs& a, int device, int teams_asked, int threads_asked) {
  const int memory = mma_memory_bytes<Stages>;
  HK_PRODUCT_ARGS(a, teams_asked, threads_asked);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) map(to : host[0 : copies]) \
    is_device_ptr(kept) firstprivate(epoch) ompx_dyn_cgroup_mem(memory)                                 \
    ompx_attribute(__attribute__((launch_bounds(mma_bound))))
#pragma omp parallel
  product_team<Family::mma, Deep, Stages>(HK_PRODUCT_KERNEL, epoch);
}

template <int Stages> void product_wgmma(const ProductArgs& a, int device, int teams_asked) {
  const int memory = wgmma_memory_bytes<Stages>;
  HK_PRODUCT_ARGS(a, teams_asked, wgmma_team_threads);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) \
    map(to : host[0 : copies]) is_device_ptr(kept) firstprivate(epoch) ompx_dyn_cgroup_mem(memory) \
    ompx_attribute(__attribute__((launch_bounds(wgmma_team_threads))))
#pragma omp parallel
  product_team<Family::wgmma, false, Stages>(HK_PRODUCT_KERNEL, epoch);
}

// The warp-specialized kernel's slices: 128 deep, the widest swizzle.
constexpr int tma_slice = 128;

template <int Stages, bool Centred> void product_wgmma_tma(const ProductArgs& a, int device, int teams_asked) {
  const int memory = tma_memory_bytes<tma_slice, Stages>;
  HK_PRODUCT_ARGS(a, teams_asked, tma_team_threads);
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) \
    map(to : host[0 : copies]) is_device_ptr(kept) firstprivate(epoch) ompx_dyn_cgroup_mem(memory) \
    ompx_attribute(__attribute__((launch_bounds(tma_team_threads))))
#pragma omp parallel
  product_team_tma<tma_slice, Stages, Centred>(HK_PRODUCT_KERNEL, epoch);
}

#undef HK_PRODUCT_KERNEL
#undef HK_PRODUCT_ARGS

// The stages a tensor-core launch on `device` runs with: `requested` (0: two) where the GPU
// grants a team the memory of that many (bytes_of), else the most that fit, at least two. Deep
// products keep two.
template <class BytesOf> int granted_stages(int requested, int device, BytesOf bytes_of) {
  int stages = std::clamp(requested > 0 ? requested : mma_stages, mma_stages, max_tensor_stages);
  const int limit = device == omp_get_initial_device() ? 0 : cuda_team_memory_limit(device);
  while (stages > mma_stages && bytes_of(stages) + runtime_team_memory_bytes > limit) --stages;
  return stages;
}

// Calls launch(std::integral_constant<int, stages>) for stages 2 to max_tensor_stages.
template <class F> decltype(auto) with_stages(int stages, F&& launch) {
  static_assert(max_tensor_stages == 4);
  switch (stages) {
    case 4: return launch(std::integral_constant<int, 4>{});
    case 3: return launch(std::integral_constant<int, 3>{});
    default: return launch(std::integral_constant<int, 2>{});
  }
}

int mma_bytes(int stages) {
  return with_stages(stages, [](auto n) { return mma_memory_bytes<decltype(n)::value>; });
}
int wgmma_bytes(int stages) {
  return with_stages(stages, [](auto n) { return wgmma_memory_bytes<decltype(n)::value>; });
}
int tma_bytes(int stages) {
  return with_stages(stages, [](auto n) { return tma_memory_bytes<tma_slice, decltype(n)::value>; });
}

// The lines of A' (a) or of B' that the tensor maps span: every batch's.
i64 map_lines(const Kernel& k, bool a) {
  return a ? (k.a_shared ? 1 : k.batches) * k.a_lines : (k.b_shared ? 1 : k.batches) * k.b_lines;
}

}  // namespace

bool tma_applies(i64 kp, i64 a_lines, i64 b_lines, int device) {
  return device != omp_get_initial_device() && cuda_has_wgmma(device) && cuda_tensor_maps_available() &&
         kp <= int32_depth && std::max(a_lines, b_lines) < (i64(1) << 31) &&
         tma_bytes(2) + runtime_team_memory_bytes <= cuda_team_memory_limit(device);
}

bool tma_applies(const Kernel& k, int device) {
  return tma_applies(k.kp, map_lines(k, true), map_lines(k, false), device);
}

void launch_dp4a(const ProductArgs& a, int device, int teams, int threads) {
  const int team_threads = staged_team_threads(threads, default_dp4a_threads, dp4a_bound);
  with_depth(a.k, [&](auto deep) { product_dp4a<decltype(deep)::value>(a, device, teams, team_threads); });
}

bool prepare_tensor_maps(Kernel& k, int device, void* maps, KeptDeviceCopy& kept) {
  if (!tma_applies(k, device)) return false;
  alignas(64) unsigned char host[2 * cuda_tensor_map_bytes];
  static_assert(cuda_tensor_map_bytes == tensor_map_bytes && sizeof host <= KeptDeviceCopy::max_bytes);
  if (!cuda_byte_matrix_map(host, k.ap, k.kp, map_lines(k, true), k.kp, tma_slice, tile_rows) ||
      !cuda_byte_matrix_map(host + cuda_tensor_map_bytes, k.bp, k.kp, map_lines(k, false), k.kp, tma_slice, tile_cols))
    return false;
  if (const void* at = kept.keep(device, "qmm tensor maps", host, sizeof host)) {
    k.tensor_maps = at;
    return true;
  }
  try {
    copy_to_device(maps, 0, host, sizeof host, device);
  } catch (const Error&) {
    return false;
  }
  k.tensor_maps = maps;
  return true;
}

void launch_mma(const ProductArgs& a, int device, int teams, int threads, bool warpgroups, int stages) {
  if (warpgroups && a.k.tensor_maps) {
    // Persistent teams, one an SM (each takes most of its team memory).
    const int multiprocessors = cuda_multiprocessors(device);
    const int team_count = multiprocessors > 0 ? std::min(teams, multiprocessors) : teams;
    with_stages(granted_stages(stages, device, tma_bytes), [&](auto n) {
      if (a.k.a_centred)
        product_wgmma_tma<decltype(n)::value, true>(a, device, team_count);
      else
        product_wgmma_tma<decltype(n)::value, false>(a, device, team_count);
    });
    return;
  }
  if (warpgroups && a.k.kp <= int32_depth && cuda_has_wgmma(device)) {
    with_stages(granted_stages(stages, device, wgmma_bytes),
                [&](auto n) { product_wgmma<decltype(n)::value>(a, device, teams); });
    return;
  }
  const int team_threads = staged_team_threads(threads, default_mma_threads, mma_bound);
  if (a.k.kp > int32_depth) {
    product_mma<true, mma_stages>(a, device, teams, team_threads);
    return;
  }
  with_stages(granted_stages(stages, device, mma_bytes),
              [&](auto n) { product_mma<false, decltype(n)::value>(a, device, teams, team_threads); });
}

}  // namespace hk::detail::offload::qmm

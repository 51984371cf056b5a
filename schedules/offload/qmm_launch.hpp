// The kernel families of the offload QuantizedLinearMatMul as its host side (qmm_offload.cpp)
// sees them: each launches its kernels for a filled argument block on `device`.
#pragma once

#include <cstdint>

#include "runtime/platform/kept_device_copies.hpp"
#include "schedules/offload/qmm_kernel.hpp"

namespace hk::detail::offload::qmm {

/// A' and B' with their sums into the workspace; nothing to pack or sum launches nothing.
void launch_pack(const Kernel k, int device);

/// What a product launch reads: the block k; where a kept copy of it lies on the device (null:
/// the launch copies k there itself, one more transfer before the kernel starts); and the call's
/// epoch for the words its kernels keep in the workspace (split counts, line tile states; 1 to
/// 2^48 - 2, 0 where it keeps none), which changes from call to call and so stays out of k.
struct ProductArgs {
  const Kernel& k;
  const Kernel* kept = nullptr;
  std::uint64_t epoch = 0;
};

/// The products and requantization from the workspace into the output, by `teams` teams of
/// `threads` threads (0: the kernel's default; rounded down to a team the staging splits evenly).
void launch_dp4a(const ProductArgs& a, int device, int teams, int threads);
/// Whether the warp-specialized wgmma kernel can run k on `device`: a Hopper GPU granting a team
/// the memory of two of its stages, a driver that makes tensor maps, a depth within int32
/// accumulators, lines the maps can number.
bool tma_applies(const Kernel& k, int device);
/// The same from k's depth kp and the lines of A' and of B' that its maps would span.
bool tma_applies(i64 kp, i64 a_lines, i64 b_lines, int device);

/// Where the warp-specialized wgmma kernel runs k on `device`: its tensor maps named in k, a copy
/// that `kept` holds for the launch where it can, else one written to `maps` (device memory,
/// 64-byte aligned, 256 bytes). False (k unchanged) elsewhere.
bool prepare_tensor_maps(Kernel& k, int device, void* maps, KeptDeviceCopy& kept);

/// Tensor cores: with `warpgroups`, wgmma where the device is a Hopper GPU and the depth fits int32
/// accumulators (teams of one warpgroup, or of three, one an SM, where k has tensor maps; `threads`
/// unused), otherwise mma.sync; `stages` of team memory (2 to 4, 0: 2) where the GPU grants them,
/// else the most it does (products deeper than one int32 slice keep 2).
void launch_mma(const ProductArgs& a, int device, int teams, int threads, bool warpgroups, int stages);

}  // namespace hk::detail::offload::qmm

// The architecture and size of the machine's NVIDIA GPUs, asked of the CUDA driver itself: the offload
// runtime does not tell it, and kernels built for one architecture only (wgmma) must know it.
#pragma once

namespace hk::detail {

/// The CUDA devices the driver reports (0 without a driver), and the compute capability of device
/// `ordinal` as major * 10 + minor (90 for an H100 or H200), or 0 when there is no such device or
/// it does not answer. Asked once per process.
int cuda_device_count();
int cuda_compute_capability(int ordinal);
/// Its streaming multiprocessors, 0 when there is no such device or it does not answer.
int cuda_multiprocessors(int ordinal);

/// Whether the CUDA driver the offload runtime opened is hetkern's launch shim
/// (runtime/platform/cuda_launch_shim.cpp), which opts kernels into more than 48 KB of team memory.
bool cuda_launch_shim_in_use();
/// Bytes of team memory (dynamic shared memory, the runtime's own share included) a kernel launched
/// on device `ordinal` may have: the GPU's opt-in limit with the launch shim, else 48 KB.
int cuda_team_memory_limit(int ordinal);

/// Whether CUDA device `ordinal` has Hopper's warpgroup MMA (compute capability 9.0 exactly: code
/// for sm_90a runs nowhere else). OpenMP numbers the GPUs as CUDA does, so an OpenMP device number
/// may be passed; the host's names no CUDA device.
inline bool cuda_has_wgmma(int ordinal) { return cuda_compute_capability(ordinal) == 90; }

}  // namespace hk::detail

// Large host <-> device copies through kept page-locked staging buffers. A copy from pageable
// memory makes the driver stage it through small buffers of its own, at a fraction of the link's
// speed; here the caller's bytes are copied into page-locked chunks by several host threads while
// the previous chunk crosses the link, so the link stays busy. Offload builds only.
#pragma once

#include <cstddef>

namespace hk::detail {

/// Copies at least this many bytes through the staging buffers; smaller copies go directly.
inline constexpr std::size_t staged_copy_min_bytes = std::size_t(1) << 20;

/// `bytes` from host memory to device memory on `device` (a GPU, not the initial device), through
/// the staging buffers. False when no page-locked memory could be had: the caller copies directly.
/// Throws hk::Error(Errc::invalid_parameter) when a copy fails.
bool staged_copy_to_device(void* device_dst, std::size_t dst_offset, const void* host_src,
                           std::size_t bytes, int device);

/// `bytes` from device memory on `device` to host memory, through the staging buffers; as above.
bool staged_copy_to_host(void* host_dst, const void* device_src, std::size_t src_offset,
                         std::size_t bytes, int device);

/// Frees the staging buffers not in use; returns their bytes.
std::size_t release_staging_buffers();

}  // namespace hk::detail

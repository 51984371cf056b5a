// Large host <-> device copies through kept page-locked staging buffers. A copy from pageable
// memory makes the driver stage it through small buffers of its own, at a fraction of the link's
// speed; here the caller's bytes are copied into page-locked chunks by several host threads while
// the previous chunk crosses the link, so the link stays busy. Offload builds only.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/platform/copy_segment.hpp"

namespace hk::detail {

/// Copies at least this many bytes through the staging buffers; smaller copies go directly.
inline constexpr std::size_t staged_copy_min_bytes = std::size_t(1) << 20;

/// The segments from host memory to device memory on `device` (a GPU, not the initial device),
/// one after another through one ring of staging buffers; landed(i), when set, runs once segment i
/// is all on the device, on one of the copy's threads. False when no page-locked memory could be
/// had: the caller copies directly. Throws hk::Error(Errc::invalid_parameter) when a copy fails.
bool staged_segments_to_device(const std::vector<CopySegment>& segments, int device,
                               const std::function<void(std::size_t)>& landed = {});

/// The segments from device memory on `device` to host memory, as above; no byte of segment i
/// moves before ready(i), when set, returned true. When it returns false the copy stops (some
/// earlier bytes may have moved) and the call returns true.
bool staged_segments_to_host(const std::vector<CopySegment>& segments, int device,
                             const std::function<bool(std::size_t)>& ready = {});

/// Frees the staging buffers not in use; returns their bytes.
std::size_t release_staging_buffers();

}  // namespace hk::detail

// hk::pack_b: B of QuantizedLinearMatMul packed once for every later call (the device form's
// packing is the GPU plugin's: runtime/api/device_operators.cpp).
#include <algorithm>
#include <atomic>
#include <optional>
#include <cstring>
#include <string>

#include "algorithms/tensor_checks.hpp"
#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "hetkern/operators.hpp"
#include "hetkern/topology.hpp"
#include "runtime/platform/pinning.hpp"
#include "schedules/qmm_pack.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#include "schedules/strategies/qmm_device_b.hpp"
#endif

namespace hk {

std::int64_t PackedB::packed_bytes() const noexcept {
  return panels_ ? panels_->bytes.size + panels_->col_sums.size : 0;
}

const detail::PackedPanels* packed_panels(const PackedB& b) noexcept { return b.panels_.get(); }

#ifdef HETKERN_OFFLOAD
std::int64_t DevicePackedB::packed_bytes() const noexcept { return kept_ ? std::int64_t(kept_->bytes()) : 0; }

const detail::DeviceB* device_b(const DevicePackedB& b) noexcept { return b.kept_.get(); }
#endif

PackedB pack_b(ConstTensor b) {
  const TensorDesc& d = b.desc;
  detail::check_matrix_type("pack_b", "b", d.dtype());
  detail::check_tensor("pack_b", "b", d, b.data, 2, 4);
  const int r = d.rank();
  const std::int64_t K = d.size(r - 2), N = d.size(r - 1);
  const detail::MatrixView v = detail::matrix_view(b);
  std::int64_t sizes_of_batch[2] = {1, 1};
  detail::batch_sizes(d, sizes_of_batch);
  const bool shared = v.batch_stride[0] == 0 && v.batch_stride[1] == 0;
  const std::int64_t batches = shared ? 1 : sizes_of_batch[0] * sizes_of_batch[1];
  detail::check_packed_sizes("pack_b", 0, 0, batches, K, N);
  auto panels = std::make_shared<detail::PackedPanels>();
  detail::shape_panels(*panels, batches, K, N, d.dtype(), false);
  std::atomic<bool> fits{true};
  // Tasks of 16 panels (256 columns): long enough rows for the row-by-row packing path.
  constexpr std::int64_t panels_per_task = 16;
  const std::int64_t per_batch = (panels->panels + panels_per_task - 1) / panels_per_task;
  const std::int64_t tasks = batches * per_batch;
  const int threads = default_threads();
  // The team the operator's default schedule uses, pinned the same way: every page of the packed
  // form is first touched (zeroed) by the thread that packs it, so the pages are spread over the
  // team's NUMA nodes in column ranges instead of all landing on the caller's node.
  std::optional<detail::PinnedCall> pinned;
  if (tasks > 1) pinned.emplace(threads, default_pin_policy());
#pragma omp parallel for schedule(static) num_threads(threads) if (tasks > 1)
  for (std::int64_t i = 0; i < tasks; ++i) {
    const std::int64_t t = i / per_batch, p = (i % per_batch) * panels_per_task;
    const std::int64_t p_end = std::min(panels->panels, p + panels_per_task);
    std::memset(panels->bytes.as<std::byte>() + t * panels->batch_bytes + p * panels->panel_bytes, 0,
                std::size_t((p_end - p) * panels->panel_bytes));
    std::memset(panels->col_sums.as<std::int64_t>() + (t * panels->panels + p) * detail::qmm_panel_cols, 0,
                std::size_t((p_end - p) * detail::qmm_panel_cols) * sizeof(std::int64_t));
    if (!detail::pack_panels(*panels, t, static_cast<const std::uint8_t*>(b.data) + v.batch_offset(t, sizes_of_batch[1]),
                             v.row_stride, v.col_stride, p, p_end))
      fits.store(false, std::memory_order_relaxed);
  }
  panels->pairs_fit_int16 = fits.load();

  // The description keeps broadcast batch dimensions at stride 0, the rest packed.
  std::int64_t sizes[4], strides[4];
  std::int64_t run = 1;
  for (int k = r - 1; k >= 0; --k) {
    sizes[k] = d.size(k);
    strides[k] = (k < r - 2 && shared) ? 0 : run;
    if (!(k < r - 2 && shared)) run *= d.size(k);
  }
  PackedB out;
  out.desc_ = TensorDesc(d.dtype(), std::span<const std::int64_t>(sizes, std::size_t(r)),
                         std::span<const std::int64_t>(strides, std::size_t(r)));
  out.panels_ = std::move(panels);
  return out;
}

}  // namespace hk

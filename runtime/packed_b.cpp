// hk::pack_b: B of QuantizedLinearMatMul packed once for every later call.
#include <algorithm>
#include <atomic>
#include <string>

#include "algorithms/tensor_checks.hpp"
#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "hetkern/operators.hpp"
#include "schedules/qmm_pack.hpp"

namespace hk {

std::int64_t PackedB::packed_bytes() const noexcept {
  return panels_ ? panels_->bytes.size + panels_->col_sums.size : 0;
}

const detail::PackedPanels* packed_panels(const PackedB& b) noexcept { return b.panels_.get(); }

PackedB pack_b(ConstTensor b) {
  const TensorDesc& d = b.desc;
  if (d.dtype() != DataType::int8 && d.dtype() != DataType::uint8)
    throw Error(Errc::invalid_type, "pack_b", "b",
                "type " + std::string(name_of(d.dtype())) + " is not int8 or uint8");
  detail::check_tensor("pack_b", "b", d, b.data, 2, 4);
  const int r = d.rank();
  const std::int64_t K = d.size(r - 2), N = d.size(r - 1);
  std::int64_t batch_sizes[2] = {1, 1}, batch_strides[2] = {0, 0};
  for (int k = 0; k < r - 2; ++k) {
    batch_sizes[2 - (r - 2) + k] = d.size(k);
    batch_strides[2 - (r - 2) + k] = d.stride(k);
  }
  const bool shared = batch_strides[0] == 0 && batch_strides[1] == 0;
  const std::int64_t batches = shared ? 1 : batch_sizes[0] * batch_sizes[1];
  auto panels = std::make_shared<detail::PackedPanels>();
  detail::shape_panels(*panels, batches, K, N, d.dtype(), true);
  std::atomic<bool> fits{true};
  // Tasks of 16 panels (256 columns): long enough rows for the row-by-row packing path.
  constexpr std::int64_t panels_per_task = 16;
  const std::int64_t per_batch = (panels->panels + panels_per_task - 1) / panels_per_task;
  const std::int64_t tasks = batches * per_batch;
#pragma omp parallel for schedule(static) num_threads(default_threads()) if (tasks > 1)
  for (std::int64_t i = 0; i < tasks; ++i) {
    const std::int64_t t = i / per_batch, p = (i % per_batch) * panels_per_task;
    const std::int64_t offset = (t / batch_sizes[1]) * batch_strides[0] + (t % batch_sizes[1]) * batch_strides[1];
    if (!detail::pack_panels(*panels, t, static_cast<const std::uint8_t*>(b.data) + offset,
                             d.stride(r - 2), d.stride(r - 1), p,
                             std::min(panels->panels, p + panels_per_task)))
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

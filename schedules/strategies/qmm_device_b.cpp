// B kept in device memory across calls (qmm_device_b.hpp).
#include "schedules/strategies/qmm_device_b.hpp"

#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_parts.hpp"

namespace hk::detail {

DeviceB::DeviceB(const QmmProblem& problem, int home)
    : home_(home),
      view_(problem.b),
      columns_(problem.N > 0 && qmm_b_columns_fit(problem)),
      bytes_(columns_ ? qmm_b_columns_bytes(problem) : problem.K > 0 && problem.N > 0 ? qmm_spans(problem).b : 0) {
  auto kept = std::make_unique<ScratchLease>(home, bytes_);
  if (columns_) {
    qmm_offload_pack_b_columns(problem, kept->data(), home, nullptr);
    view_ = with_b_columns(problem, kept->data()).b;
  } else {
    copy_between_devices(kept->data(), home, problem.b.data, home, bytes_);
    view_.data = kept->data();
  }
  copies_.emplace_back(home, std::move(kept));
}

QmmProblem DeviceB::apply(const QmmProblem& problem) const {
  if (columns_) return with_b_columns(problem, view_.data);
  QmmProblem p = problem;
  p.b = view_;
  return p;
}

const void* DeviceB::on(int device) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [d, kept] : copies_)
    if (d == device) return kept->data();
  auto kept = std::make_unique<ScratchLease>(device, bytes_);
  copy_between_devices(kept->data(), device, view_.data, home_, bytes_);
  copies_.emplace_back(device, std::move(kept));
  return copies_.back().second->data();
}

}  // namespace hk::detail

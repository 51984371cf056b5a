// The offload schedules called with host tensors, and QuantizedLinearMatMul on device data:
// on a GPU, the spans of the host tensors are copied into cached device scratch (counted
// transfers), the kernels run there and the output's span comes back; on the host fallback the
// kernels run on the host memory directly.
#include <omp.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/kept_device_copies.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_pack.hpp"
#include "schedules/scan_offload.hpp"

namespace hk::detail {
namespace {

using i64 = std::int64_t;

// Runs `run` on the call with its tensors' spans copied into device memory on `dev` (strides are
// non-negative: spans start at the pointer), then copies the output's span back if `run` returns
// true; on the host fallback, runs it on the call itself.
template <class Run> void with_device_copies(const CumulativeCall& call, int dev, Run&& run) {
  if (offload_on_host()) {
    run(call);
    return;
  }
  const std::size_t in_bytes = std::size_t(byte_span(call.input.desc).hi);
  const std::size_t out_bytes = std::size_t(byte_span(call.output.desc).hi);
  ScratchLease out(dev, out_bytes);
  // Gaps between the output's elements must come back unchanged: upload them too.
  if (call.in_place() || !call.output.desc.is_packed())
    copy_to_device(out.data(), 0, call.output.data, out_bytes, dev);
  CumulativeCall on_device = call;
  on_device.output.data = out.data();
  on_device.input.data = out.data();
  std::optional<ScratchLease> in;
  if (!call.in_place()) {
    in.emplace(dev, in_bytes);
    copy_to_device(in->data(), 0, call.input.data, in_bytes, dev);
    on_device.input.data = in->data();
  }
  if (run(on_device)) copy_to_host(call.output.data, out.data(), 0, out_bytes, dev);
}

}  // namespace

void run_scan_offload_host(const CumulativeCall& call, const ScanPlan& plan, int dev) {
  with_device_copies(call, dev, [&](const CumulativeCall& c) {
    run_scan_offload(c, plan, dev);
    return true;
  });
}

void run_scan_line_part_host(const CumulativeCall& call, int dev, bool fold_wanted, const ScanCarryFor& carry_for) {
  with_device_copies(call, dev, [&](const CumulativeCall& c) {
    alignas(16) std::byte fold[16];  // AccOf the element type
    if (fold_wanted) fold_scan_line_offload(c, dev, fold);
    const void* const carry = carry_for(fold_wanted ? fold : nullptr);
    if (!carry) return false;
    run_scan_offload(c, default_offload_scan_plan(c), dev, carry);
    return true;
  });
}

void run_qmm_offload_on_device(const QmmProblem& p, const QmmPlan& plan, int device) {
  run_qmm_offload_arriving(p, plan, device, {});
}

void run_qmm_offload_arriving(const QmmProblem& p, const QmmPlan& plan, int device, const OffloadQmmArrivals& arrivals) {
  if (p.M == 0 || p.N == 0 || p.batch[0] * p.batch[1] == 0) return;
  // Repeated calls mostly repeat their parameters: a kept copy spares each a synchronous copy.
  const std::vector<std::byte> params = qmm_parameter_block(p.q);
  KeptDeviceCopy kept_params;  // held until the launches have ended
  const void* d_params = kept_params.keep(device, "qmm parameters", params.data(), params.size());
  std::optional<ScratchLease> own_params;
  if (!d_params) {
    own_params.emplace(device, params.size());
    copy_to_device(own_params->data(), 0, params.data(), params.size(), device);
    d_params = own_params->data();
  }
  OffloadQmmLaunch launch;
  launch.device = device;
  launch.kernel = plan.kernel;
  launch.teams = plan.teams;
  launch.team_threads = plan.team_threads;
  launch.stages = plan.stages;
  launch.parameters = d_params;
  ScratchLease workspace(device, std::size_t(qmm_offload_workspace_bytes(p, launch.kernel, device)));
  launch.workspace = workspace.data();
  launch.arrivals = arrivals;
  qmm_offload(p, launch);
}

void run_qmm_offload(const QmmProblem& problem, const QmmPlan& plan, int device) {
  QmmProblem p = problem;
  // B from a caller's packed copy: back to plain K x N matrices of its source type.
  std::vector<std::uint8_t> plain_b;
  if (p.packed_b) {
    plain_b = unpack_panels(*p.packed_b);
    const i64 kn = p.packed_b->K * p.packed_b->N;
    const bool shared = p.packed_b->batches == 1;
    p.b = {p.packed_b->source, plain_b.data(), {shared ? 0 : p.batch[1] * kn, shared ? 0 : kn}, p.N, 1};
    p.packed_b = nullptr;
  }
  if (offload_on_host()) {
    run_qmm_offload_on_device(p, plan, device);
    return;
  }
  if (p.M == 0 || p.N == 0 || p.batch[0] * p.batch[1] == 0) return;
  const QmmSpans spans = qmm_spans(p);
  ScratchLease d_a(device, spans.a), d_b(device, spans.b), d_out(device, spans.out);
  copy_to_device(d_a.data(), 0, p.a.data, spans.a, device);
  copy_to_device(d_b.data(), 0, p.b.data, spans.b, device);
  // Bytes between output elements must come back unchanged.
  if (spans.out_has_gaps()) copy_to_device(d_out.data(), 0, p.out, spans.out, device);
  void* host_out = p.out;
  p.a.data = d_a.data();
  p.b.data = d_b.data();
  p.out = d_out.data();
  run_qmm_offload_on_device(p, plan, device);
  copy_to_host(host_out, d_out.data(), 0, spans.out, device);
}

}  // namespace hk::detail

// The operators on device-resident tensors (hetkern/device.hpp): validated like host calls,
// dispatched like them (runtime/tuning/dispatch.hpp, among the offload strategies only), run by
// the offload schedules on the data where it lies, no transfers but the quantization parameters
// of QuantizedLinearMatMul.
#include <memory>
#include <optional>
#include <string>

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "runtime/tuning/dispatch.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/strategies/qmm_device_b.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk {
namespace {

// The address of a device tensor's element {0,...,0}, once its buffer is known to hold it all.
const void* device_address(const char* op, const char* name, const TensorDesc& desc,
                           const DeviceBuffer* buffer, std::size_t offset) {
  if (!buffer || !buffer->data())
    throw Error(Errc::invalid_parameter, op, name, "has no device buffer");
  // The descriptor's own checks (sizes, strides, 64-bit offsets) come first.
  detail::check_tensor(op, name, desc, buffer->data());
  const auto span = std::size_t(detail::byte_span(desc).hi);
  if (offset > buffer->bytes() || span > buffer->bytes() - offset)
    throw Error(Errc::invalid_shape, op, name,
                desc.to_string() + " at byte offset " + std::to_string(offset) + " needs " +
                    std::to_string(offset + span) + " bytes; the buffer holds " +
                    std::to_string(buffer->bytes()));
  return static_cast<const char*>(buffer->data()) + offset;
}

void run_scan_on_device(bool product, DeviceConstTensor input, DeviceTensor output,
                        const CumulativeOptions& options, const Schedule& schedule) {
  const char* op = product ? "cumulative_product" : "cumulative_sum";
  const void* x = device_address(op, "input", input.desc, input.buffer, input.offset);
  void* y = const_cast<void*>(device_address(op, "output", output.desc, output.buffer, output.offset));
  detail::CumulativeCall call{product, {input.desc, x}, {output.desc, y}, options};
  detail::validate(call);
  detail::check_offload_scan_type(call, schedule);
  const auto plan = detail::offload_launch(detail::dispatch_scan(call, schedule, detail::DataHome::device));
  detail::run_scan_offload(call, *plan, offload_device());
}

}  // namespace

void cumulative_sum(DeviceConstTensor input, DeviceTensor output, const CumulativeOptions& options,
                    const Schedule& schedule) {
  run_scan_on_device(false, input, output, options, schedule);
}

void cumulative_product(DeviceConstTensor input, DeviceTensor output,
                        const CumulativeOptions& options, const Schedule& schedule) {
  run_scan_on_device(true, input, output, options, schedule);
}

DevicePackedB pack_b(DeviceConstTensor b) {
  constexpr const char* op = "pack_b";
  const TensorDesc& d = b.desc;
  detail::check_matrix_type(op, "b", d.dtype());
  const void* data = device_address(op, "b", d, b.buffer, b.offset);
  if (d.rank() != 2)
    throw Error(Errc::invalid_shape, op, "b",
                d.to_string() + " is not one matrix {K,N}: pack one matrix (A's batch dimensions broadcast against it)");
  if (b.buffer->device() != offload_device())
    throw Error(Errc::invalid_parameter, op, "b",
                "lies on device " + std::to_string(b.buffer->device()) + ", not on offload_device() " +
                    std::to_string(offload_device()));
  detail::QmmProblem p;
  p.K = d.size(0), p.N = d.size(1);
  p.b = detail::matrix_view(ConstTensor{d, data});
  DevicePackedB packed;
  packed.desc_ = TensorDesc(d.dtype(), d.sizes());
  packed.kept_ = std::make_shared<const detail::DeviceB>(p, offload_device());
  return packed;
}

void quantized_linear_matmul(const DeviceQuantizedMatMulArgs& args, DeviceTensor output,
                             const Schedule& schedule) {
  constexpr const char* op = "quantized_linear_matmul";
  const DevicePackedB* packed = args.packed_b;
  if (packed && packed->empty()) throw Error(Errc::invalid_parameter, op, "packed_b", "is empty (make it with pack_b)");
  const detail::DeviceB* kept = packed ? device_b(*packed) : nullptr;
  if (kept && kept->home() != offload_device())
    throw Error(Errc::invalid_parameter, op, "packed_b",
                "was packed on device " + std::to_string(kept->home()) + "; this call runs on offload_device() " +
                    std::to_string(offload_device()));
  // Validation sees the device addresses as tensors: it checks descriptors and reads only the
  // quantization parameters, which are host tensors. A packed B is validated as the matrix it was.
  const QuantizedMatMulArgs host_view{
      .a = {args.a.desc, device_address(op, "a", args.a.desc, args.a.buffer, args.a.offset)},
      .a_scale = args.a_scale,
      .a_zero_point = args.a_zero_point,
      .b = kept ? ConstTensor{packed->desc(), kept->on(kept->home())}
                : ConstTensor{args.b.desc, device_address(op, "b", args.b.desc, args.b.buffer, args.b.offset)},
      .b_scale = args.b_scale,
      .b_zero_point = args.b_zero_point,
      .output_scale = args.output_scale,
      .output_zero_point = args.output_zero_point};
  const Tensor out{output.desc, const_cast<void*>(device_address(op, "output", output.desc,
                                                                 output.buffer, output.offset))};
  const detail::QmmProblem validated = detail::validate(host_view, out);
  const detail::QmmProblem problem = kept ? kept->apply(validated) : validated;
  const detail::QmmStrategyPlan plan = detail::dispatch_qmm(problem, schedule, detail::DataHome::device);
  if (const auto* spread = std::get_if<detail::DevicesQmmPlan>(&plan)) {
    detail::spread_qmm(problem, [&](const detail::QmmProblem& part) { return detail::devices_part_launch(*spread, part); },
                       detail::spread_devices(spread->spread.devices),
                       spread->spread.home_share, kept);
    return;
  }
  detail::run_qmm_offload_on_device(problem, *detail::offload_launch(plan), offload_device());
}

}  // namespace hk

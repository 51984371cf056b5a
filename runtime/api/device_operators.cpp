// The operators on device-resident tensors (hetkern/device.hpp): validated like host calls,
// dispatched like them (runtime/tuning/dispatch.hpp, among the offload strategies only), run by
// the offload schedules on the data where it lies, no transfers but the quantization parameters
// of QuantizedLinearMatMul.
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
  detail::check_offload_scan_type(call, schedule.empty() ? "(default)" : schedule.to_string());
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

void quantized_linear_matmul(const DeviceQuantizedMatMulArgs& args, DeviceTensor output,
                             const Schedule& schedule) {
  constexpr const char* op = "quantized_linear_matmul";
  // Validation sees the device addresses as tensors: it checks descriptors and reads only the
  // quantization parameters, which are host tensors.
  const QuantizedMatMulArgs host_view{
      .a = {args.a.desc, device_address(op, "a", args.a.desc, args.a.buffer, args.a.offset)},
      .a_scale = args.a_scale,
      .a_zero_point = args.a_zero_point,
      .b = {args.b.desc, device_address(op, "b", args.b.desc, args.b.buffer, args.b.offset)},
      .b_scale = args.b_scale,
      .b_zero_point = args.b_zero_point,
      .output_scale = args.output_scale,
      .output_zero_point = args.output_zero_point};
  const Tensor out{output.desc, const_cast<void*>(device_address(op, "output", output.desc,
                                                                 output.buffer, output.offset))};
  const detail::QmmProblem problem = detail::validate(host_view, out);
  const detail::QmmStrategyPlan plan = detail::dispatch_qmm(problem, schedule, detail::DataHome::device);
  if (const auto* spread = std::get_if<detail::DevicesQmmPlan>(&plan)) {
    detail::spread_qmm(problem, spread->per_device(), detail::spread_devices(spread->spread.devices),
                       spread->spread.home_share);
    return;
  }
  detail::run_qmm_offload_on_device(problem, *detail::offload_launch(plan), offload_device());
}

}  // namespace hk

// Test problems' buffers in device memory (offload builds; the host fallback without a GPU).
#pragma once

#include "hetkern/device.hpp"
#include "qmm_test_util.hpp"

namespace qmmt {

/// A Buffer's bytes (guards included) in device memory, and the device tensor over them.
struct OnDevice {
  hk::DeviceBuffer memory;
  hk::TensorDesc desc;
  explicit OnDevice(const Buffer& b) : memory(b.bytes.size()), desc(b.desc()) {
    memory.upload(b.bytes.data(), b.bytes.size());
  }
  hk::DeviceConstTensor cview() const { return {desc, &memory, std::size_t(Buffer::guard)}; }
  hk::DeviceTensor view() { return {desc, &memory, std::size_t(Buffer::guard)}; }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> bytes(memory.bytes());
    memory.download(bytes.data(), bytes.size());
    return bytes;
  }
};

/// A problem's arguments with A and B on the device, the quantization parameters on the host.
inline hk::DeviceQuantizedMatMulArgs device_args(const Problem& p, const OnDevice& a, const OnDevice& b) {
  const hk::QuantizedMatMulArgs h = p.args();
  return {a.cview(), h.a_scale, h.a_zero_point, b.cview(), h.b_scale, h.b_zero_point, h.output_scale,
          h.output_zero_point};
}

}  // namespace qmmt

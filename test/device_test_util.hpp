// Test problems' buffers in device memory (offload builds; the host fallback without a GPU).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

/// Every output of `got` (the output storage after a call) within the oracle's bounds `e`, and
/// every other byte of the storage as `p.y` holds it.
inline void expect_matches_oracle(const Problem& p, const Expected& e, const std::vector<unsigned char>& got,
                                  const std::string& where) {
  const std::vector<bool> mask = p.y.element_mask();
  ASSERT_EQ(got.size(), p.y.bytes.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!mask[k]) ASSERT_EQ(got[k], p.y.bytes[k]) << "byte " << k << " outside the output written; " << where;
  Buffer out = p.y;
  out.bytes = got;
  std::size_t i = 0;
  int reported = 0;
  for_each_index(out.sizes, [&](const std::vector<i64>& idx) {
    const int v = out.q(idx);
    if ((v < e.lo[i] || v > e.hi[i]) && reported++ < 5)
      ADD_FAILURE() << "output" << dims(idx) << " = " << v << ", expected " << e.lo[i] << "; " << where;
    ++i;
  });
}

}  // namespace qmmt

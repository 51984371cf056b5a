// B of QuantizedLinearMatMul kept in device memory across calls (hk::DevicePackedB): packed once
// on its home device into the form the GPU kernels read, and copied to each other device the
// first time a spread call runs a part there.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "algorithms/quantized_matmul.hpp"
#include "runtime/platform/device_memory.hpp"

namespace hk::detail {

class DeviceB {
 public:
  /// B of `problem` (one matrix in device memory on `home`), kept: as B' (int8 columns,
  /// qmm_offload_pack_b_columns) where its K fits the product's slices, so that no call packs it
  /// again and qmm.devices streams nothing; else its bytes as they are.
  DeviceB(const QmmProblem& problem, int home);
  int home() const { return home_; }
  /// Bytes kept on each device that holds B.
  std::size_t bytes() const { return bytes_; }
  /// `problem` (validated with B's type and sizes) with B read from the kept form on the home
  /// device: B's zero points less 128 where B is uint8 and kept as B'.
  QmmProblem apply(const QmmProblem& problem) const;
  /// The kept form on `device`: the home device's, or a copy made on the first call for that
  /// device (which then waits for the copy); kept until this is destroyed.
  const void* on(int device) const;

 private:
  int home_;
  MatrixView view_;  // B as the product reads it, on the home device
  bool columns_;     // kept as B'
  std::size_t bytes_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<int, std::unique_ptr<ScratchLease>>> copies_;  // the home device's first
};

}  // namespace hk::detail

// oneDNN's int8 matmul on the same data and quantization as a hetkern QuantizedLinearMatMul: the
// baseline of `hetkern bench qlinear-matmul` and hetkern-bench. oneDNN (Debian's libdnnl, when
// CMake finds it) is in the module libhetkern_onednn, opened on first use; without it every
// matmul reports why it is unavailable. Neither the library nor the programs link oneDNN.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hetkern/dtype.hpp"
#include "hetkern/info.hpp"

namespace hk::bench {

/// Row-major A {M,K} and output {M,N}, B {K,N} row-major or with contiguous columns; per-tensor
/// quantization.
struct OnednnQmmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  DataType a_type = DataType::uint8, b_type = DataType::int8, out_type = DataType::uint8;
  const void* a = nullptr;
  const void* b = nullptr;
  bool b_columns = false;  // B held as its transpose {N,K}, row-major
  void* out = nullptr;
  float multiplier = 1;  // float32(float32(a_scale * b_scale) / out_scale), as hetkern rounds it
  std::int32_t a_zero_point = 0, b_zero_point = 0, out_zero_point = 0;
  /// B reordered once, by pack_weights(), into the layout oneDNN's kernel prefers (its answer to
  /// hk::pack_b for constant weights); run() then reads only that copy.
  bool packed_weights = false;
};

class OnednnMatmul {
 public:
  /// Creates the primitive (JIT code generation happens here, outside any timing). Never throws
  /// for a case oneDNN cannot run: available() is then false and unavailable_reason() says why.
  explicit OnednnMatmul(const OnednnQmmProblem& problem);
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  bool available() const noexcept { return impl_ != nullptr; }
  const std::string& unavailable_reason() const noexcept { return reason_; }
  /// oneDNN's name of the implementation it chose, e.g. "brg:avx512_core_vnni".
  std::string implementation() const;
  /// With packed_weights: reorders B, which must hold its values by now, into the kernel's
  /// layout; once, before run(). Only when available().
  void pack_weights();
  /// Computes the output; only when available().
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string reason_;
};

/// Caps oneDNN's instruction set at the counterpart of `level` (it takes effect only before
/// oneDNN generates its first kernel) and returns the level oneDNN then uses, as oneDNN names it,
/// or an empty string without oneDNN.
std::string cap_onednn_isa(Isa level);

/// "2.6.3", or an empty string without oneDNN.
std::string onednn_version();

}  // namespace hk::bench

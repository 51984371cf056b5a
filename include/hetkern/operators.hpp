// The operators. Semantics: docs/operators.md (a copy of the project specification).
//
// Every call validates all arguments first and throws hk::Error without writing anything when
// a rule is broken. With an empty schedule the library chooses one from the shape and the machine.
// A failed allocation throws std::bad_alloc, also without writing anything.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "hetkern/schedule.hpp"
#include "hetkern/tensor.hpp"

namespace hk {

enum class Direction { increasing, decreasing };

struct CumulativeOptions {
  int axis = 0;                                  // -rank <= axis < rank; -1 is the last axis
  Direction direction = Direction::increasing;   // traversal order along the axis
  bool exclusive = false;                        // leave the current element out of its own tally
};

/// Running sum along an axis. Types: float32 (accumulated in float64), float16 and bfloat16
/// (accumulated in float32), float64 (accumulated in double-double: each output within one
/// float64 rounding of the exact prefix), int32, uint32, int64, uint64 (wrapping modulo 2^bits). The output may be the input
/// itself (same data pointer and layout); any other overlap is an error.
void cumulative_sum(ConstTensor input, Tensor output, const CumulativeOptions& options,
                    const Schedule& schedule = {});

/// Running product along an axis; same types, rules and accumulation as cumulative_sum.
void cumulative_product(ConstTensor input, Tensor output, const CumulativeOptions& options,
                        const Schedule& schedule = {});

namespace detail {
struct PackedPanels;
}

/// B of quantized_linear_matmul packed once for the host kernels and reused across calls (weights
/// usually are constant). Immutable after pack_b; copies share the packed data; safe to use from
/// several threads at once. The packed form does not depend on the instruction set in use.
class PackedB {
 public:
  PackedB() = default;
  bool empty() const noexcept { return !panels_; }
  /// B's type and sizes as packed (strides are those of a packed tensor; a batch dimension that
  /// was broadcast with stride 0 keeps stride 0 and was packed once).
  const TensorDesc& desc() const noexcept { return desc_; }
  /// Bytes the packed form occupies.
  std::int64_t packed_bytes() const noexcept;

 private:
  friend PackedB pack_b(ConstTensor b);
  friend const detail::PackedPanels* packed_panels(const PackedB& b) noexcept;
  TensorDesc desc_;
  std::shared_ptr<const detail::PackedPanels> panels_;
};

/// Packs B ({[B],[C],K,N}, int8 or uint8, rank 2 to 4, any non-negative strides). Validates B
/// like quantized_linear_matmul does and throws hk::Error the same way, and also when the packed
/// form would exceed 2^47 bytes (Errc::invalid_shape: more than any machine can allocate).
PackedB pack_b(ConstTensor b);

/// What `packed_b` is for an operand kind: host operands may name a PackedB, device operands a
/// DevicePackedB (hetkern/device.hpp); any other kind's is a std::nullptr_t that can only stay null.
template <class Operand> struct PackedBFor {
  using type = std::nullptr_t;
};
template <> struct PackedBFor<ConstTensor> {
  using type = const PackedB*;
};

/// Arguments of quantized_linear_matmul, one set for every operand kind: `Operand` is where A and
/// B lie (ConstTensor: host memory; DeviceConstTensor in hetkern/device.hpp: device memory). A is
/// {[B],[C],M,K}, B is {[B],[C],K,N}, each of rank 2 to 4; their batch dimensions broadcast as in
/// numpy.matmul (right-aligned, each pair equal or one of them 1; a stride of 0 broadcasts too),
/// and the output {[B],[C],M,N} has the larger rank and the broadcast batch sizes. A packed B
/// broadcasts only as a whole (one matrix) or matches the output's batch sizes. Scales are float32
/// or float16 (widened to float32, exactly), positive and finite; zero points have the type of
/// their tensor. Parameter tensors are host tensors of rank 1 to 4, right-aligned against
/// {M,K}/{K,N}/{M,N}, and hold one value (per tensor) or one per row of A / per column of B / per
/// row of the output.
template <class Operand> struct BasicQuantizedMatMulArgs {
  Operand a;
  ConstTensor a_scale;
  std::optional<ConstTensor> a_zero_point;
  Operand b;
  ConstTensor b_scale;
  std::optional<ConstTensor> b_zero_point;
  ConstTensor output_scale;
  std::optional<ConstTensor> output_zero_point;
  /// Host operands: when set, B's values come from this packed copy and `b` is ignored (leave it
  /// empty): B's type and sizes are packed_b->desc(). The packed copy must outlive the call.
  typename PackedBFor<Operand>::type packed_b = nullptr;
};

/// The arguments with A and B in host memory.
using QuantizedMatMulArgs = BasicQuantizedMatMulArgs<ConstTensor>;

/// output = saturate(RNE(sum_k (A - za)(B - zb) * float32(float32(sa*sb)/sy)) + zy), exact integer
/// accumulation for every K below 2^47 (larger K is refused: the exact sum could overflow 64 bits);
/// output type int8 or uint8 (equal to the output zero point's type). Schedules other than
/// `reference` pack A and B and refuse operands whose packed form would exceed 2^47 bytes.
void quantized_linear_matmul(const QuantizedMatMulArgs& args, Tensor output,
                             const Schedule& schedule = {});

/// The schedule the call with `schedule` would run now, every parameter explicit (for reports
/// and benchmarks): for an empty schedule the dispatcher's choice (HETKERN_SCHEDULE, the tuning
/// database or the heuristic; see hetkern/tuning.hpp), else `schedule` with its defaults for
/// the call filled in. Validates like the call itself and throws hk::Error the same way (an
/// illegal schedule too); reads nothing but quantization parameters and writes nothing. `op` is
/// cumulative_sum or cumulative_product.
Schedule default_schedule(Operator op, ConstTensor input, Tensor output,
                          const CumulativeOptions& options, const Schedule& schedule = {});
Schedule default_schedule(const QuantizedMatMulArgs& args, Tensor output, const Schedule& schedule = {});

}  // namespace hk

// A tuning problem made concrete: buffers with reproducible data, the call it describes, and
// the reference result every candidate is checked against.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "hetkern/tuning.hpp"

namespace hk::detail {

class TuneWorkload {
 public:
  /// Validates the problem (hk::Error as the operator call would throw); with `data`, allocates
  /// and fills the inputs and computes the reference result, else allocates nothing: the tensors
  /// point at aligned placeholders that must never be read or written (for keys, schedule spaces
  /// and the heuristic's plan, which need only the shapes). run() needs `data`.
  explicit TuneWorkload(const TuneProblem& problem, bool data = true);

  /// Runs the operator with `schedule` into the output buffer.
  void run(const Schedule& schedule);
  /// Whether the output buffer agrees with the reference result (bit for bit for integers and
  /// the matmul, within the specification's rounding for floating-point scans).
  bool matches_reference() const;

  /// The plan an unscheduled call would get from the heuristic alone (no database).
  Schedule heuristic_schedule() const;
  /// Validates `schedule` against the call and returns it with every parameter explicit.
  Schedule planned(const Schedule& schedule) const;

  const CumulativeCall& scan_call() const { return scan_; }
  const QmmProblem& qmm_problem() const { return qmm_; }
  /// The matmul's arguments on host tensors, quantization parameters included.
  const QuantizedMatMulArgs& qmm_args() const { return args_; }
  bool is_scan() const { return problem_.op != Operator::quantized_linear_matmul; }
  std::int64_t output_bytes() const { return std::int64_t(output_.size()); }

 private:
  TuneProblem problem_;
  std::vector<std::byte> a_, b_, output_, reference_;
  std::vector<float> a_scale_ = {0.0625f}, b_scale_ = {0.0625f}, out_scale_ = {1.0f};
  std::vector<std::uint8_t> a_zero_, out_zero_;
  QuantizedMatMulArgs args_;
  Tensor out_tensor_;
  CumulativeCall scan_;
  QmmProblem qmm_;
};

}  // namespace hk::detail

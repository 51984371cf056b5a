// The one exception type hetkern throws for bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace hk {

/// What kind of rule a call broke.
enum class Errc {
  invalid_type,       // a data type the operator does not accept, or types that must match do not
  invalid_shape,      // rank, sizes or batch dimensions
  invalid_stride,     // negative strides, a self-overlapping output, offsets beyond 64 bits
  invalid_parameter,  // axis, scale values, missing data pointers
  overlap,            // an input and the output share memory without being an exact in-place alias
  invalid_schedule,   // malformed schedule text, or a schedule illegal for this operator or shape
  invalid_file,       // a file that cannot be read as the expected format
  unavailable,        // a part of hetkern this process cannot load (the GPU plugin: the reason says why)
};

/// Thrown before anything is written. what() reads "OPERATOR: SUBJECT: RULE", for example
/// "cumulative_sum: axis: 4 is out of range for a rank-4 tensor".
class Error : public std::runtime_error {
 public:
  Error(Errc code, std::string op, std::string subject, std::string rule)
      : std::runtime_error(op + ": " + subject + ": " + rule),
        code_(code), op_(std::move(op)), subject_(std::move(subject)), rule_(std::move(rule)) {}

  Errc code() const noexcept { return code_; }
  /// The operator or component that refused the input ("cumulative_sum", "schedule", "npy").
  const std::string& op() const noexcept { return op_; }
  /// The tensor or parameter at fault ("input", "output", "a_scale", "axis", ...).
  const std::string& subject() const noexcept { return subject_; }
  /// The rule that was broken, in words.
  const std::string& rule() const noexcept { return rule_; }

 private:
  Errc code_;
  std::string op_, subject_, rule_;
};

}  // namespace hk

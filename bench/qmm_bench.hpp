// Benchmark of QuantizedLinearMatMul against oneDNN's int8 matmul, on the same data and
// quantization, with a count of the outputs where oneDNN differs from hetkern's exact result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "bench/buffer.hpp"
#include "bench/onednn_baseline.hpp"
#include "bench/record.hpp"
#include "bench/timing.hpp"
#include "hetkern/hetkern.hpp"

namespace hk::bench {

/// How B {K,N} lies in memory: row-major (rows), or its transpose {N,K} row-major (columns: each
/// column of B contiguous, as PyTorch's Linear weight and numpy's `w.T` hold it).
enum class BLayout { rows, columns };

/// "rows" or "columns".
const char* name_of(BLayout layout);

struct QmmCase {
  std::int64_t m = 0, n = 0, k = 0;  // A {M,K} x B {K,N} -> {M,N}; A and the output packed row-major
  DataType a_type = DataType::uint8, b_type = DataType::int8, out_type = DataType::uint8;
  std::optional<std::pair<int, int>> b_range;  // B's values, inclusive; default: its type's range
  BLayout b_layout = BLayout::rows;             // for hetkern and oneDNN alike
  Schedule schedule;                           // empty: the library's choice
  int threads = 0;                             // 0: every CPU of the affinity mask
  /// Constant weights: B packed once by hk::pack_b before timing, and oneDNN's B reordered once
  /// into its preferred layout; only the products are timed.
  bool packed_b = false;
};

/// The case itself; throws hk::Error unless its types are uint8 or int8, M, N and K are positive
/// and M*N*K fits in 62 bits.
const QmmCase& checked_qmm_case(const QmmCase& c);

/// The case's b_range, or its B type's full range by default; throws hk::Error
/// (Errc::invalid_parameter) unless LO <= HI within that type.
std::pair<int, int> checked_b_range(const QmmCase& c);

/// Per-tensor quantization parameters; zero points are 0 or 128, stored in one byte of the
/// tensor's type (B has none).
struct QmmQuantization {
  float a_scale = 1, b_scale = 1, out_scale = 1;
  std::uint8_t a_zero_point = 0, out_zero_point = 0;
};

/// A case's inputs (A over its type's full range, B over b_range; fixed seed), per-tensor
/// quantization, one output for hetkern and one for oneDNN.
///
/// The quantization centres A and the output (zero point 128 for uint8, 0 for int8), leaves B
/// symmetric (no zero point) and scales the output so that it spreads over about +-32 around its
/// zero point. All scales are powers of two, so the requantization multiplier is exact and any
/// difference from oneDNN comes from its arithmetic, not from rounding the multiplier.
class QmmWorkload {
 public:
  /// Sets OpenMP's thread count to the case's and caps oneDNN at hetkern's instruction-set
  /// level before anything else. Throws hk::Error for an invalid case.
  explicit QmmWorkload(const QmmCase& c);

  void run_hetkern();
  OnednnMatmul& onednn() { return onednn_; }
  /// Output elements where oneDNN's last result differs from hetkern's last result.
  std::int64_t onednn_mismatches() const;

  /// 2*M*N*K: one multiply and one add per term.
  std::int64_t ops() const { return 2 * case_.m * case_.n * case_.k; }
  int threads() const { return threads_; }
  /// The schedule as given, or the library's choice with every parameter explicit.
  const std::string& schedule_text() const { return schedule_text_; }
  /// B's value range, inclusive.
  std::pair<int, int> b_range() const { return b_range_; }
  /// oneDNN's instruction set after the cap (empty without oneDNN).
  const std::string& onednn_isa() const { return onednn_isa_; }
  const QmmQuantization& quantization() const { return q_; }

 private:
  QmmCase case_;
  int threads_;
  std::pair<int, int> b_range_;
  Buffer a_, b_, out_, onednn_out_;
  QmmQuantization q_;
  QuantizedMatMulArgs args_;
  PackedB packed_b_;
  Tensor out_tensor_;
  std::string schedule_text_;
  std::string onednn_isa_;
  OnednnMatmul onednn_;
};

/// Times hetkern and oneDNN interleaved and returns op ("qlinear-matmul"), shape {M,N,K}, dtype
/// ("uint8,int8,uint8": A, B, output), b_range, b_layout ("rows" or "columns"), the quantization,
/// schedule, threads, isa, the timing statistics (median_ns, min_ns, q1_ns, q3_ns, max_ns,
/// repetitions), ops, gops, onednn_median_ns, onednn_min_ns, onednn_max_ns, onednn_gops,
/// onednn_mismatches (null with an onednn_reason when oneDNN cannot run the case), onednn_isa,
/// onednn_impl, onednn_version and time_vs_baseline = median_ns / onednn_median_ns.
Record bench_qmm(const QmmCase& c, const TimingOptions& timing);

}  // namespace hk::bench

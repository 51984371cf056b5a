// Benchmark of CumulativeSummation / CumulativeProduct against the copy roof, on the same data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/record.hpp"
#include "bench/timing.hpp"
#include "hetkern/hetkern.hpp"

namespace hk::bench {

struct ScanCase {
  Operator op = Operator::cumulative_sum;  // or Operator::cumulative_product
  DataType dtype = DataType::float32;
  std::vector<std::int64_t> shape;  // packed row-major, every size positive
  CumulativeOptions options;
  Schedule schedule;  // empty: the library's choice
  int threads = 0;    // 0: every CPU of the affinity mask
};

/// A case's input (random, fixed seed) and output, and the operations timed on them.
class ScanWorkload {
 public:
  /// Sets OpenMP's thread count to the case's before anything else, so the default schedule is
  /// the one an application with that many threads gets. Throws hk::Error for an invalid case.
  explicit ScanWorkload(const ScanCase& c);

  void run_hetkern();
  void run_streaming_copy();
  void run_memcpy();

  /// The traffic of one call and of the copies: the tensor read once and written once.
  std::int64_t bytes() const { return 2 * std::int64_t(input_.size()); }
  int threads() const { return threads_; }
  /// The schedule as given, or the library's choice with every parameter explicit.
  const std::string& schedule_text() const { return schedule_text_; }

 private:
  ScanCase case_;
  int threads_;
  TensorDesc desc_;
  Buffer input_, output_;
  std::string schedule_text_;
};

/// "cumsum" or "cumprod", as the command line names them.
const char* command_name(Operator op);

/// Times the case and both copies interleaved and returns op, shape, dtype, axis, direction,
/// exclusive, schedule, threads, isa, the timing statistics (median_ns, min_ns, q1_ns, q3_ns,
/// max_ns, repetitions), bytes, gbps, and the faster copy's copy_method, copy_median_ns,
/// copy_min_ns, copy_max_ns, copy_gbps, with time_vs_baseline = median_ns / copy_median_ns.
Record bench_scan(const ScanCase& c, const TimingOptions& timing);

}  // namespace hk::bench

// The cost model: a candidate's predicted time from the machine's measured rates (MachineRates).
// Pure arithmetic on what a candidate computes and moves; which candidates a call has is
// model_choice.cpp's business, and the rates come from calibration.cpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hetkern/tuning.hpp"

namespace hk::detail {

enum class Executor { host, gpu };

/// One candidate of a call, before rates: its strategy and what it computes and moves.
struct CandidateWork {
  std::string strategy;           // the record's name, by which its rates are found
  Executor where = Executor::host;
  double work = 0;                // scans: bytes read and written; the matmul: multiply-adds
  double bytes_to_device = 0;     // a GPU candidate on host tensors: the inputs copied in
  double bytes_to_host = 0;       //   and the output copied back
  bool host_page_locked = false;  //   all of them in page-locked memory (copied unstaged)
  std::int64_t copy_chunks = 0;   //   copies in and back at once in this many chunks (0: one after the other)
};

/// A predicted time in parts, for the dispatch log.
struct Cost {
  double fixed_seconds = 0;     // whatever the size: the call's launch, synchronization, set-up
  double work_seconds = 0;      // the work at the strategy's rate
  double transfer_seconds = 0;  // copies between host and device
  double seconds() const { return fixed_seconds + work_seconds + transfer_seconds; }
};

/// Whether `rates` hold both page-locked transfer rates (measured where the driver page-locked
/// memory for calibration): only then do page-locked host tensors have rates of their own.
bool has_page_locked_rates(const MachineRates& rates);

/// The candidate's predicted cost; nullopt when its strategy's rate is unknown, or when it runs
/// on the GPU and the transfers or the GPU call cost are.
std::optional<Cost> predict(const MachineRates& rates, const CandidateWork& candidate);

struct Prediction {
  std::size_t index = 0;  // into the candidates
  Cost cost;
};

/// The candidates that can be priced, fastest first; of equal times the earlier comes first.
std::vector<Prediction> rank(const MachineRates& rates, const std::vector<CandidateWork>& candidates);

/// A time for the dispatch log: "850 ns", "12.3 us", "4.56 ms", "1.20 s".
std::string seconds_text(double seconds);

}  // namespace hk::detail

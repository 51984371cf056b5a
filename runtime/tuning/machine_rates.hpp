// This process's machine rates: the database's for this fingerprint, else measured once.
#pragma once

#include <optional>
#include <string>

#include "hetkern/tuning.hpp"

namespace hk::detail {

/// The rates dispatch prices calls with. The database at `db_path` is read once per process (until
/// forget_machine_rates); when it has none for this fingerprint and `measure`, they are measured
/// now (measure_machine_rates: nothing without a GPU), once per process, and stored. A failure
/// gives one warning and nullopt. Other threads wait for a measurement under way; the measuring
/// thread's own calls (its spread schedules) get nullopt at once (MeasuringRates).
std::optional<MachineRates> dispatch_machine_rates(const std::string& db_path, bool measure);

/// Marks the calling thread as measuring the rates while it lives: dispatch_machine_rates then
/// returns nullopt on this thread, which holds the lock that reading them takes.
class MeasuringRates {
 public:
  MeasuringRates();
  ~MeasuringRates();
  MeasuringRates(const MeasuringRates&) = delete;
  MeasuringRates& operator=(const MeasuringRates&) = delete;

 private:
  bool outer_;
};

/// Forgets what dispatch_machine_rates read or measured (hk::reset_dispatch).
void forget_machine_rates();

}  // namespace hk::detail

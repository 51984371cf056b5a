// The machine rates a process uses, and hk::calibrate, which measures and stores them.
#include "runtime/tuning/machine_rates.hpp"

#include <cstdio>
#include <iterator>
#include <mutex>

#include "hetkern/error.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/strategies/device_speeds.hpp"
#endif

namespace hk {
namespace detail {
namespace {

struct ProcessRates {
  std::mutex mutex;
  bool read = false;           // the database was asked
  bool measure_tried = false;  // measured, or failed to: not again in this process
  std::optional<MachineRates> rates;
};

ProcessRates& process_rates() {
  static ProcessRates r;
  return r;
}

thread_local bool measuring_here = false;

// Rates stored by a build that calibrated fewer offload scan strategies than this one are measured
// again, so that no default offload strategy goes without a rate.
bool covers_offload_scans(const MachineRates& rates) {
  constexpr const char* names[] = {"scan.offload_rows", "scan.offload_warp_rows", "scan.offload_columns",
                                   "scan.offload_chained"};
  std::size_t present = 0;
  for (const char* name : names) present += rates.strategy_rates.count(name);
  return present == 0 || present == std::size(names);
}

std::optional<MachineRates> complete_rates(std::optional<MachineRates> stored) {
  if (stored && !covers_offload_scans(*stored)) return std::nullopt;
  return stored;
}

// The spread strategies share calls by the devices' speeds from the rates the process has.
void publish_device_speeds([[maybe_unused]] const std::optional<MachineRates>& rates) {
#ifdef HETKERN_OFFLOAD
  set_device_speeds(SpreadWork::matmul, rates ? rates->device_matmul_speeds : std::vector<double>{});
  set_device_speeds(SpreadWork::scan, rates ? rates->device_scan_speeds : std::vector<double>{});
#endif
}

// Measures and stores; the rates are kept in the process whether or not the database takes them.
std::optional<MachineRates> measure_and_store(const std::string& db_path) {
  std::optional<MachineRates> rates;
  {
    const MeasuringRates measuring;
    rates = measure_machine_rates();
  }
  if (!rates || db_path.empty()) return rates;
  try {
    TuningDb(db_path, true).put_rates(machine_fingerprint(), *rates);
  } catch (const Error& e) {
    std::fprintf(stderr, "hetkern: warning: machine rates measured but not stored: %s\n", e.what());
  }
  return rates;
}

}  // namespace

MeasuringRates::MeasuringRates() : outer_(!measuring_here) { measuring_here = true; }
MeasuringRates::~MeasuringRates() {
  if (outer_) measuring_here = false;
}

std::optional<MachineRates> dispatch_machine_rates(const std::string& db_path, bool measure) {
  if (measuring_here) return std::nullopt;
  ProcessRates& p = process_rates();
  // Held while measuring: other threads' first calls wait for the rates rather than measure too.
  std::lock_guard lock(p.mutex);
  if (!p.read) {
    p.read = true;
    try {
      if (!db_path.empty()) p.rates = complete_rates(TuningDb(db_path, false).find_rates(machine_fingerprint()));
    } catch (const Error&) {
      // The dispatcher reports an unreadable database once already; no rates then.
    }
    publish_device_speeds(p.rates);
  }
  if (p.rates || !measure || p.measure_tried) return p.rates;
  p.measure_tried = true;
  try {
    p.rates = measure_and_store(db_path);
  } catch (const Error& e) {
    std::fprintf(stderr, "hetkern: warning: cannot measure the machine rates (%s); using the heuristic\n", e.what());
  }
  publish_device_speeds(p.rates);
  return p.rates;
}

void forget_machine_rates() {
  ProcessRates& p = process_rates();
  std::lock_guard lock(p.mutex);
  p.read = false;
  p.measure_tried = false;
  p.rates.reset();
  publish_device_speeds(std::nullopt);
}

}  // namespace detail

std::optional<MachineRates> calibrate(const std::string& db_path, bool remeasure) {
  detail::ProcessRates& p = detail::process_rates();
  std::lock_guard lock(p.mutex);
  if (!remeasure && !db_path.empty())
    if (auto stored = detail::complete_rates(TuningDb(db_path, false).find_rates(machine_fingerprint()))) return stored;
  std::optional<MachineRates> rates = detail::measure_and_store(db_path);
  if (rates) {
    p.rates = rates;
    p.read = true;
    detail::publish_device_speeds(rates);
  }
  return rates;
}

}  // namespace hk

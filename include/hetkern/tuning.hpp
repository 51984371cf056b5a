// Autotuning: measured schedules per shape and machine, kept in a SQLite database and chosen by
// every operator call that names no schedule.
//
// Dispatch order for a call with an empty schedule, on host or device tensors: HETKERN_SCHEDULE
// (when it names a strategy of the operator) -> the exact record for the call's key -> the nearest
// tuned shape of the same class -> the cost model (with a GPU and this machine's measured rates)
// -> the heuristic. Device tensors take only offload strategies: entries and records naming a
// host strategy are skipped. HETKERN_LOG=dispatch prints each
// decision, the device that runs it and why.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hetkern/operators.hpp"

namespace hk {

/// The machine a measurement holds for: CPU model, active instruction-set level, library
/// version, thread count, pinning policy, topology digest and offload device, joined as
/// "key=value;...".
/// Records whose fingerprint differs from the current one are never used.
std::string machine_fingerprint();

/// The database path: $HETKERN_TUNING_DB, else $XDG_CACHE_HOME/hetkern/tuning.sqlite, else
/// $HOME/.cache/hetkern/tuning.sqlite; empty (no database) when none of them is set.
std::string tuning_db_path();

/// One measured winner. The key is (op, algorithm_version, dtype, shape, stride_class, params,
/// fingerprint); the rest is the value.
struct TuningRecord {
  std::string op;                  // "cumulative_sum", "cumulative_product", "quantized_linear_matmul"
  int algorithm_version = 1;       // bumped when an operator's algorithm changes its results or cost
  std::string dtype;               // "float32"; for the matmul "A,B,output", e.g. "uint8,int8,uint8"
  std::vector<std::int64_t> shape; // scans: the tensor's sizes; matmul: {M, N, K}
  std::string stride_class;        // "packed", "inplace", "strided" or "prepacked_b"; device tensors
                                   // "device_packed", "device_inplace" or "device_strided"
  std::string params;              // "axis=1,direction=increasing,exclusive=0"; matmul "batch=1"
  std::string fingerprint;         // machine_fingerprint() where it was measured
  std::string schedule;            // text form, every parameter explicit
  double median_ns = 0;            // time per call
  double spread_ns = 0;            // interquartile range of the repetitions
  std::int64_t repetitions = 0;
  bool transfers = false;          // whether the time includes moving data to another device
  std::int64_t candidates = 0;     // schedules the tuner measured
  double default_ns = 0;           // the heuristic's schedule, measured the same way
};

/// What the cost model knows of a machine: measured once per fingerprint (measure_machine_rates)
/// and kept in the tuning database. A rate of 0 or a strategy missing from the map is unknown.
struct MachineRates {
  double to_device_bytes_per_s = 0;  // host -> device, through the library's copy path
  double to_host_bytes_per_s = 0;    // device -> host
  // The same from and to page-locked host memory, which the link copies unstaged (0: not
  // measured; the rates above then stand in).
  double page_locked_to_device_bytes_per_s = 0;
  double page_locked_to_host_bytes_per_s = 0;
  double gpu_call_seconds = 0;       // a GPU call's fixed cost: launch and synchronization
  // What a GPU call on host tensors costs beyond the same call on device tensors, whatever the
  // size: the copies' own latency and set-up (0: not measured).
  double host_tensor_call_seconds = 0;
  // Per strategy name: scans in bytes read and written per second, the matmul in
  // multiply-adds per second (host strategies at the default thread count).
  std::map<std::string, double> strategy_rates;
  // Per strategy name: the time of its smallest call (launches, synchronization, set-up); a GPU
  // strategy without one pays gpu_call_seconds.
  std::map<std::string, double> strategy_fixed_seconds;
  // With several offload devices: each one's speed relative to the default device, by OpenMP
  // device number, at the matmul on its own memory and at a scan of host tensors through its
  // link (empty: not measured). The strategies that spread a call share its work by them.
  std::vector<double> device_matmul_speeds, device_scan_speeds;
  /// Whether the transfers and the GPU call cost are known.
  bool has_gpu_costs() const { return to_device_bytes_per_s > 0 && to_host_bytes_per_s > 0 && gpu_call_seconds > 0; }
};

/// The SQLite tuning database (WAL, busy timeout, one transaction per write). Every method
/// throws hk::Error(Errc::invalid_file) when the file cannot be opened, read or written.
class TuningDb {
 public:
  /// Opens `path`; writable creates it and its directory and migrates an older schema. A
  /// read-only open of a missing file yields an empty database without creating anything.
  TuningDb(const std::string& path, bool writable);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  /// Inserts or replaces the record with the same key, atomically.
  void put(const TuningRecord& record);
  /// Inserts or replaces all records in one transaction: all of them are written or none.
  void put_all(const std::vector<TuningRecord>& records);
  /// The record with exactly this key (the value fields of `key` are ignored).
  std::optional<TuningRecord> find(const TuningRecord& key) const;
  /// Records of the same op, version, dtype, stride class, params and fingerprint, any shape.
  std::vector<TuningRecord> same_class(const TuningRecord& key) const;
  /// Every record, ordered by key.
  std::vector<TuningRecord> all() const;
  /// The schema version of the file (0 when it does not exist).
  int schema_version() const;

  /// The machine rates stored for `fingerprint`, if any.
  std::optional<MachineRates> find_rates(const std::string& fingerprint) const;
  /// Replaces the rates stored for `fingerprint`, in one transaction.
  void put_rates(const std::string& fingerprint, const MachineRates& rates);
  /// Forgets the rates stored for `fingerprint`; returns whether there were any.
  bool clear_rates(const std::string& fingerprint);

  static constexpr int current_schema_version = 3;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

/// Records as a JSON list, one object per record with every field of TuningRecord
/// (schedule in text form).
std::string records_to_json(const std::vector<TuningRecord>& records);
/// The inverse of records_to_json; throws hk::Error(Errc::invalid_file) naming what is wrong,
/// including a record that no call could look up (an operator, types or strategy not the
/// operator's).
std::vector<TuningRecord> records_from_json(const std::string& text);
/// `hetkern tune --import`: parses `json` (records_from_json) and writes every record into `db`
/// in one transaction. Any error throws hk::Error with the database unchanged; returns the records
/// the database keeps (of records with one key, the last).
std::vector<TuningRecord> import_records(TuningDb& db, const std::string& json);

/// A shape to tune, with packed row-major tensors and per-tensor quantization.
struct TuneProblem {
  Operator op = Operator::cumulative_sum;
  std::vector<DataType> types;       // scans: {dtype}; matmul: {A, B, output}
  std::vector<std::int64_t> shape;   // scans: the tensor's sizes; matmul: {M, N, K}
  CumulativeOptions options;         // scans only
};

/// The key a call of `problem` looks up (fingerprint of this process).
TuningRecord tuning_key(const TuneProblem& problem);

/// The schedule the heuristic alone gives the problem (no database, no HETKERN_SCHEDULE).
Schedule heuristic_schedule(const TuneProblem& problem);

/// The candidate schedules for a problem on this machine: every strategy of the operator with
/// its parameters enumerated over ranges derived from the shape, the caches and the thread count
/// (a parameter the space has no rule for keeps its library default). Validated against the
/// problem; the reference is left out (it is the oracle).
std::vector<Schedule> schedule_space(const TuneProblem& problem);

struct TuneProgress {
  std::int64_t tried = 0;       // candidates measured so far
  std::int64_t planned = 0;     // candidates the search expects to measure
  std::string schedule;         // the candidate just measured
  double median_ns = 0;
  double best_ns = 0;
};

struct TuneOptions {
  double budget_seconds = 8;    // the search stops starting candidates after this long (the
                                // shape's data and expected results are made before it starts);
                                // finite and above 0, else tune() throws invalid_parameter
  bool exhaustive = false;      // measure the whole space whatever its size
  std::uint64_t seed = 1;       // for the random restarts
  std::function<void(const TuneProgress&)> progress;
};

struct TuneResult {
  TuningRecord record;          // the winner, ready for TuningDb::put
  std::int64_t space_size = 0;
  double seconds = 0;           // wall time of the search
};

/// Measures candidates of the problem's schedule space and returns the fastest. With
/// options.exhaustive every candidate is timed in full (a sweep). Otherwise candidates get a
/// short screening measurement: all of them when the space has at most 8, else those along a
/// climb from the heuristic's schedule to the best of its neighbourhood (one value step in each
/// parameter, and the most similar candidate of each other strategy), then random restarts and
/// further climbs while the budget lasts and fewer than a sixth of the space were tried; the two
/// best and the heuristic's schedule are then timed against each other. Full measurements whose
/// interquartile range exceeds 10% of the median are repeated. Each candidate's first result is
/// checked against the reference before it is timed; a candidate that differs is an internal
/// error (hk::Error, Errc::invalid_schedule). Throws hk::Error for an invalid problem. Writes
/// nothing to any database.
TuneResult tune(const TuneProblem& problem, const TuneOptions& options);

/// Times each schedule on the problem's data, interleaved (one call of each per round, so that
/// all see the same machine state) after a checked warm-up, until the rounds took `min_seconds`
/// and each ran at least 5 times. Returns the median time per call of each, in nanoseconds.
/// `min_seconds` must be finite and not negative (else hk::Error, Errc::invalid_parameter).
std::vector<double> time_schedules(const TuneProblem& problem, const std::vector<Schedule>& schedules,
                                   double min_seconds);

/// Measures this machine's rates for the cost model (docs/tuning.md): transfers both ways, a GPU
/// call's fixed cost, and each strategy's throughput on a few fixed shapes. A few seconds; only
/// with a GPU: nullopt on the host fallback (and in builds without offload), where nothing runs.
std::optional<MachineRates> measure_machine_rates();

/// The rates of this machine in the database at `db_path`; when there are none and a GPU is
/// present, or when `remeasure`, measures them and stores them (kept for this process only when
/// the database cannot be written). nullopt without a GPU. Dispatch then uses the new rates.
std::optional<MachineRates> calibrate(const std::string& db_path, bool remeasure = false);

/// Forgets every dispatch decision of this process and re-reads HETKERN_SCHEDULE, HETKERN_LOG
/// and the database path from the environment, and the machine rates from the database (for
/// tools and tests that change them).
void reset_dispatch();

}  // namespace hk

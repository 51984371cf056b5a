// Dispatch: which schedule a call without one runs, and why.
//
// Where a GPU is present, the cost model (model_choice.cpp) comes after the database and before
// the heuristic: it prices the heuristic's host plan against the offload strategies with the
// machine's measured rates (machine_rates.cpp).
//
// "Same class" for the nearest tuned shape: equal operator and algorithm version, element types,
// stride class, operator parameters (axis, direction, exclusive; the matmul's batch count) and
// machine fingerprint, and a shape of the same rank, so that every dimension keeps its role
// (scanned axis, lines; M, N, K). Among those, the record with the smallest shape_distance (the
// sum of |log2| of the size ratios, i.e. how many doublings apart) wins, if it is within
// max_nearest_distance and its schedule is legal for the call.
#include "runtime/tuning/dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "runtime/platform/environment.hpp"
#include "hetkern/error.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif
#include "hetkern/info.hpp"
#include "hetkern/schedule.hpp"
#include "runtime/tuning/machine_rates.hpp"
#include "runtime/tuning/model_choice.hpp"
#include "runtime/tuning/tuning_text.hpp"

namespace hk::detail {
namespace {

// Everything that makes two calls choose alike, in a form that hashes and compares without
// allocating, so that a repeated call finds its decision in well under a microsecond.
struct CallClass {
  std::int64_t sizes[max_rank] = {};  // scans: the tensor's sizes; matmul: batch, M, N, K
  std::int32_t threads = 0;
  std::int8_t op = 0, rank = 0, axis = 0, direction = 0, exclusive = 0, stride_class = 0, isa = 0;
  std::int8_t types[3] = {};
  std::int8_t home = 0;         // DataHome: host or device tensors
  std::int8_t page_locked = 0;  // host tensors all page-locked: a GPU copies them unstaged

  bool operator==(const CallClass& o) const { return std::memcmp(this, &o, sizeof *this) == 0; }
};
static_assert(std::has_unique_object_representations_v<CallClass>, "CallClass must have no implicit padding");

struct CallClassHash {
  std::size_t operator()(const CallClass& c) const noexcept {
    // Multiply-xorshift over 8-byte words.
    static_assert(sizeof(CallClass) % 8 == 0);
    std::uint64_t words[sizeof(CallClass) / 8];
    std::memcpy(words, &c, sizeof c);
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (const std::uint64_t w : words) {
      h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    return std::size_t(h);
  }
};


struct Decision {
  std::variant<ScanStrategyPlan, QmmStrategyPlan> plan;
  std::string reason;
};

struct Settings {
  std::vector<Schedule> env_schedules;  // HETKERN_SCHEDULE, in order
  bool log = false;                     // HETKERN_LOG contains "dispatch"
  std::string db_path;
};

// Whether any operator has a strategy of this name: a typo would otherwise be passed over without
// a word, as a schedule for another operator is.
bool known_strategy(const std::string& name) {
  for (const Operator op : {Operator::cumulative_sum, Operator::cumulative_product, Operator::quantized_linear_matmul})
    for (const StrategyInfo& s : strategies(op))
      if (s.name == name) return true;
  return false;
}

Settings read_settings() {
  Settings s;
  s.log = log_requested("dispatch");
  s.db_path = tuning_db_path();
  if (const char* text = std::getenv("HETKERN_SCHEDULE"); text && *text) {
    const std::string all = text;
    std::size_t start = 0;
    while (start <= all.size()) {
      const std::size_t end = std::min(all.find(';', start), all.size());
      const std::string item = all.substr(start, end - start);
      if (item.find_first_not_of(" \t") != std::string::npos) {
        try {
          Schedule schedule = Schedule::parse(item);
          if (known_strategy(schedule.strategy()))
            s.env_schedules.push_back(std::move(schedule));
          else
            std::fprintf(stderr, "hetkern: warning: HETKERN_SCHEDULE: no operator has a strategy named %s; ignored\n",
                         schedule.strategy().c_str());
        } catch (const Error& e) {
          std::fprintf(stderr, "hetkern: warning: HETKERN_SCHEDULE: %s; ignored\n", e.what());
        }
      }
      start = end + 1;
    }
  }
  return s;
}

// The devices that run a plan, as the dispatch log names them.
template <class Plan> std::string device_text([[maybe_unused]] const Plan& plan) {
#ifdef HETKERN_OFFLOAD
  if (const auto* split = std::get_if<SplitPlan>(&plan)) {
    if (offload_on_host()) return "host CPU and the offload fallback (no GPU)";
    const std::string gpus = split->devices == 1 ? "GPU " + std::to_string(offload_device())
                                                 : std::to_string(split->devices) + " GPUs from GPU " +
                                                       std::to_string(offload_device());
    return split->gpu_share == 1000 ? gpus : split->gpu_share == 0 ? "host CPU" : "host CPU and " + gpus;
  }
  const int spread = std::visit(
      [](const auto& p) {
        if constexpr (requires { p.spread; })
          return p.spread.devices;
        else
          return 0;
      },
      plan);
  if (spread > 0)
    return offload_on_host() ? "host CPU (offload fallback, no GPU)"
                             : std::to_string(spread) + " GPU(s) from GPU " + std::to_string(offload_device());
  if (is_offload_plan(plan))
    return offload_on_host() ? "host CPU (offload fallback, no GPU)" : "GPU " + std::to_string(offload_device());
#endif
  return "host CPU";
}

class Dispatcher {
 public:
  static Dispatcher& instance() {
    static Dispatcher d;
    return d;
  }

  // Returns the cached decision, or computes it with `decide` (outside the lock: database reads
  // may take milliseconds and must not stall other threads' hits).
  // `describe` names the call for the log; it runs only when logging.
  template <class Plan, class Describe, class Decide>
  Plan choose(const CallClass& key, Describe&& describe, Decide&& decide) {
    {
      std::shared_lock lock(mutex_);
      const auto it = cache_.find(key);
      if (it != cache_.end()) {
        if (settings_.log) log(describe(), it->second, true);
        return std::get<Plan>(it->second.plan);
      }
    }
    Settings settings;
    {
      std::shared_lock lock(mutex_);
      settings = settings_;
    }
    Decision d = decide(settings);
    if (settings.log) log(describe(), d, false);
    const Plan plan = std::get<Plan>(d.plan);
    std::unique_lock lock(mutex_);
    cache_.emplace(key, std::move(d));
    return plan;
  }

  void reset() {
    std::unique_lock lock(mutex_);
    cache_.clear();
    settings_ = read_settings();
    warned_.clear();
  }

  // Logs a plan that no rule chose (an explicit schedule): nothing to cache, and nothing built
  // unless logging.
  template <class Plan, class Describe> void log_explicit(Describe&& describe, const Plan& plan) {
    bool logging;
    {
      std::shared_lock lock(mutex_);
      logging = settings_.log;
    }
    if (logging) log(describe(), Decision{plan, "explicit schedule"}, false);
  }

  // One warning per distinct message per process.
  void warn(const std::string& message) {
    {
      std::unique_lock lock(mutex_);
      if (!warned_.insert(message).second) return;
    }
    std::fprintf(stderr, "hetkern: warning: %s; using the heuristic\n", message.c_str());
  }

 private:
  Dispatcher() : settings_(read_settings()) {}

  static void log(const std::string& call_text, const Decision& d, bool cached) {
    const Schedule s = std::visit([](const auto& p) { return to_schedule(p); }, d.plan);
    const std::string devices = std::visit([](const auto& p) { return device_text(p); }, d.plan);
    std::fprintf(stderr, "hetkern: dispatch %s -> %s on %s (%s%s)\n", call_text.c_str(), s.to_string().c_str(),
                 devices.c_str(), d.reason.c_str(), cached ? ", cached" : "");
  }

  std::shared_mutex mutex_;
  std::unordered_map<CallClass, Decision, CallClassHash> cache_;
  Settings settings_;
  std::set<std::string> warned_;
};

std::string scan_stride_class(const CumulativeCall& call) {
  const bool packed = call.input.desc.is_packed() && call.output.desc.is_packed();
  if (call.in_place()) return packed ? "inplace" : "strided";
  return packed ? "packed" : "strided";
}

bool view_is_packed(const MatrixView& v, std::int64_t cols) { return v.col_stride == 1 && v.row_stride == cols; }

std::string qmm_stride_class(const QmmProblem& p) {
  if (p.packed_b) return "prepacked_b";
  const bool packed = view_is_packed(p.a, p.K) && view_is_packed(p.b, p.N) && p.out_col_stride == 1 &&
                      p.out_row_stride == p.N;
  return packed ? "packed" : "strided";
}

std::string describe_measurement(const TuningRecord& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g us measured", r.median_ns / 1e3);
  return buf;
}

// What the rules may choose for one call: schedule text is planned for the call (which checks
// it), and for tensors in device memory only offload strategies qualify. The ones passed over
// are noted for the log.
template <class List, class PlanFn> class Candidates {
 public:
  using Plan = std::invoke_result_t<PlanFn, const Schedule&>;

  Candidates(const List& list, DataHome home, PlanFn plan) : list_(list), home_(home), plan_(plan) {}

  // Whether the schedule names a strategy of the operator (nullopt: it names none), and if so
  // whether it can take the call's tensors; a host strategy for device tensors is noted as
  // skipped, with `source` (the rule that offered it).
  std::optional<bool> qualifies(const Schedule& schedule, const std::string& source) {
    for (std::size_t i = 0; i < list_.size(); ++i) {
      if (schedule.strategy() != record_ref(list_[i]).name) continue;
      if (home_ == DataHome::host || is_offload_strategy<Plan>(i)) return true;
      skipped_.push_back(source + " " + schedule.to_string());
      return false;
    }
    return std::nullopt;
  }

  Plan plan(const Schedule& schedule) const { return plan_(schedule); }

  // An exact tuning record whose schedule could not be planned for the call: the later rules
  // decide, and their reason says that a record was there.
  void note_unusable_record(const std::string& schedule) { unusable_record_ = schedule; }
  bool had_unusable_record() const { return !unusable_record_.empty(); }

  // The decision's reason, with what was passed over to reach it.
  Decision decision(Plan plan, std::string reason) const {
    if (!unusable_record_.empty()) reason += "; the exact record's " + unusable_record_ + " is unusable";
    if (!skipped_.empty()) {
      reason += "; skipped, a host strategy for device tensors:";
      for (std::size_t i = 0; i < skipped_.size(); ++i) reason += (i ? ", " : " ") + skipped_[i];
    }
    return Decision{std::move(plan), std::move(reason)};
  }

 private:
  List list_;
  DataHome home_;
  PlanFn plan_;
  std::vector<std::string> skipped_;
  std::string unusable_record_;
};

// The database's schedule for a key: exact record, else the nearest legal one of the same class,
// among those that qualify. nullopt when there is none or the database cannot be read.
template <class C> std::optional<Decision> from_database(const Settings& settings, const TuningRecord& key, C& c) {
  if (settings.db_path.empty()) return std::nullopt;
  try {
    TuningDb db(settings.db_path, false);
    if (auto exact = db.find(key)) {
      try {
        const Schedule schedule = Schedule::parse(exact->schedule);
        if (c.qualifies(schedule, "exact record").value_or(true))
          return c.decision(c.plan(schedule), "exact record, " + describe_measurement(*exact));
      } catch (const Error& e) {
        Dispatcher::instance().warn("tuning database " + settings.db_path + ": record for " + key.op + " " +
                                    shape_to_text(key.shape) + " holds an unusable schedule (" + e.what() + ")");
        c.note_unusable_record(exact->schedule);
      }
    }
    std::vector<TuningRecord> candidates = db.same_class(key);
    std::vector<std::pair<double, const TuningRecord*>> ranked;
    for (const auto& r : candidates) {
      const double d = shape_distance(r.shape, key.shape);
      if (d <= max_nearest_distance) ranked.emplace_back(d, &r);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->median_ns < b.second->median_ns;
    });
    for (const auto& [distance, r] : ranked) {
      try {
        const Schedule schedule = Schedule::parse(r->schedule);
        const std::string source = "nearest tuned shape " + shape_to_text(r->shape);
        if (!c.qualifies(schedule, source).value_or(true)) continue;
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", distance);
        return c.decision(c.plan(schedule), source + " at distance " + buf);
      } catch (const Error&) {
        // Illegal for this call (a parameter out of its range here): try the next nearest.
      }
    }
  } catch (const Error& e) {
    Dispatcher::instance().warn(e.what());
  }
  return std::nullopt;
}

bool gpu_present() {
#ifdef HETKERN_OFFLOAD
  return !offload_on_host();
#else
  return false;
#endif
}

// The cost model's plan, only where a GPU is present: priced with the machine's rates (measured
// now by the first host-tensor call large enough that the GPU might win it), else the
// conservative rule. nullopt: the heuristic decides.
template <class Call, class Model, class Conservative>
auto from_model(const Settings& s, const Call& call, DataHome home, Model&& model, Conservative&& conservative)
    -> decltype(conservative()) {
  if (!gpu_present()) return std::nullopt;
  const bool measure = home == DataHome::host && worth_calibrating(call);
  if (const auto rates = dispatch_machine_rates(s.db_path, measure)) {
    if (auto d = model(*rates)) return d;
    return std::nullopt;
  }
  return conservative();
}

std::string heuristic_reason(const Settings& s, bool had_unusable_record) {
  std::string reason = had_unusable_record ? "heuristic, no usable tuning record" : "heuristic, no tuning record";
  if (gpu_present() && !dispatch_machine_rates(s.db_path, false))
    reason += ", no machine rates (hetkern tune --calibrate measures them)";
  return reason;
}

// A plan that spreads a call over several devices shares it by their measured speeds, which the
// machine's rates hold: they are read for it (once per process), whatever chose the plan.
bool spreads([[maybe_unused]] const ScanStrategyPlan& plan) {
#ifdef HETKERN_OFFLOAD
  return std::holds_alternative<SplitPlan>(plan);
#else
  return false;
#endif
}
bool spreads([[maybe_unused]] const QmmStrategyPlan& plan) {
#ifdef HETKERN_OFFLOAD
  return std::holds_alternative<SplitPlan>(plan) || std::holds_alternative<DevicesQmmPlan>(plan);
#else
  return false;
#endif
}
// db_path() names the database only for a plan that spreads: an explicit schedule reads the
// environment for it then, not on every call.
template <class Plan, class Path> void read_device_speeds_for(const Plan& plan, Path&& db_path) {
  if (spreads(plan)) dispatch_machine_rates(db_path(), false);
}

// The rules after an explicit schedule, in order: HETKERN_SCHEDULE, the database, the cost model,
// the heuristic.
template <class C, class Model, class Heuristic>
Decision decide(const Settings& s, const TuningRecord& key, C& c, Model&& model, Heuristic&& heuristic) {
  Decision d = [&] {
    for (const Schedule& env : s.env_schedules)
      if (c.qualifies(env, "HETKERN_SCHEDULE").value_or(false)) {
        try {
          return c.decision(c.plan(env), "HETKERN_SCHEDULE");
        } catch (const Error& e) {
          // The call named no schedule: say where the illegal one came from.
          throw Error(e.code(), e.op(), e.subject(), e.rule() + " (from HETKERN_SCHEDULE)");
        }
      }
    if (auto d = from_database(s, key, c)) return *std::move(d);
    if (auto d = model()) return c.decision(std::move(d->plan), std::move(d->reason));
    return c.decision(heuristic(), heuristic_reason(s, c.had_unusable_record()));
  }();
  std::visit([&](const auto& plan) { read_device_speeds_for(plan, [&] { return s.db_path; }); }, d.plan);
  return d;
}

// An explicit schedule: planned for the call, refused for device tensors when it names a host
// strategy, logged as chosen by the caller.
template <class Plan, class Describe>
Plan explicit_plan(Plan plan, const Schedule& schedule, DataHome home, const std::string& op,
                   const char* needed, Describe&& describe) {
  if (home == DataHome::device && !is_offload_plan(plan))
    throw Error(Errc::invalid_schedule, op, schedule.to_string(), std::string("tensors in device memory need ") + needed);
  Dispatcher::instance().log_explicit(describe, plan);
  read_device_speeds_for(plan, tuning_db_path);
  return plan;
}

std::string call_text_of(const TuningRecord& key) {
  return key.op + " " + key.dtype + "{" + shape_to_text(key.shape) + "} " + key.params + " " + key.stride_class;
}

// The stride class of a key, marked for device tensors.
std::string located(std::string stride_class, DataHome home) {
  return home == DataHome::device ? "device_" + stride_class : stride_class;
}

}  // namespace

double shape_distance(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::fabs(std::log2(double(a[i]) / double(b[i])));
  return d;
}

TuningRecord scan_key(const CumulativeCall& call, DataHome home) {
  TuningRecord r;
  r.op = call.op_name();
  r.algorithm_version = scan_algorithm_version;
  r.dtype = std::string(name_of(call.input.desc.dtype()));
  r.shape.assign(call.input.desc.sizes().begin(), call.input.desc.sizes().end());
  r.stride_class = located(scan_stride_class(call), home);
  r.params = "axis=" + std::to_string(call.options.axis) + ",direction=" +
             (call.options.direction == Direction::decreasing ? "decreasing" : "increasing") +
             ",exclusive=" + (call.options.exclusive ? "1" : "0");
  r.fingerprint = machine_fingerprint();
  return r;
}

TuningRecord qmm_key(const QmmProblem& p, DataHome home) {
  TuningRecord r;
  r.op = "quantized_linear_matmul";
  r.algorithm_version = qmm_algorithm_version;
  r.dtype = std::string(name_of(p.a.dtype)) + "," + std::string(name_of(p.b.dtype)) + "," +
            std::string(name_of(p.out_type));
  r.shape = {p.M, p.N, p.K};
  r.stride_class = located(qmm_stride_class(p), home);
  r.params = "batch=" + std::to_string(p.batch[0] * p.batch[1]);
  r.fingerprint = machine_fingerprint();
  return r;
}

ScanStrategyPlan dispatch_scan(const CumulativeCall& call, const Schedule& schedule, DataHome home) {
  const auto describe = [&] { return call_text_of(scan_key(call, home)); };
  if (!schedule.empty())
    return explicit_plan(plan_scan(call, schedule), schedule, home, call.op_name(), "a scan.offload_* schedule",
                         describe);
  CallClass key;
  const TensorDesc& d = call.input.desc;
  for (int i = 0; i < d.rank(); ++i) key.sizes[i] = d.size(i);
  key.threads = default_threads();
  key.op = call.product ? 1 : 0;
  key.rank = std::int8_t(d.rank());
  key.axis = std::int8_t(call.options.axis);
  key.direction = call.options.direction == Direction::decreasing;
  key.exclusive = call.options.exclusive;
  key.isa = std::int8_t(active_isa());
  key.types[0] = std::int8_t(d.dtype());
  key.home = std::int8_t(home);
  const bool in_place = call.in_place();
  const bool packed = d.is_packed() && call.output.desc.is_packed();
  key.stride_class = std::int8_t((in_place ? 1 : 0) + (packed ? 0 : 2));
  key.page_locked = home == DataHome::host && host_tensors_page_locked(call);
  return Dispatcher::instance().choose<ScanStrategyPlan>(key, describe, [&](const Settings& s) {
    Candidates c(scan_strategies(), home, [&](const Schedule& sch) { return plan_scan(call, sch); });
    const auto model = [&] {
      return from_model(
          s, call, home, [&](const MachineRates& r) { return model_scan_plan(call, home, r); },
          [] { return std::optional<ModelDecision<ScanStrategyPlan>>(); });
    };
    return decide(s, scan_key(call, home), c, model, [&] { return default_scan_plan(call, home); });
  });
}

QmmStrategyPlan dispatch_qmm(const QmmProblem& p, const Schedule& schedule, DataHome home) {
  const auto describe = [&] { return call_text_of(qmm_key(p, home)); };
  if (!schedule.empty())
    return explicit_plan(plan_qmm(p, schedule), schedule, home, "quantized_linear_matmul",
                         "a qmm.offload or qmm.offload_mma schedule", describe);
  CallClass key;
  key.sizes[0] = p.batch[0] * p.batch[1];
  key.sizes[1] = p.M;
  key.sizes[2] = p.N;
  key.sizes[3] = p.K;
  key.threads = default_threads();
  key.op = 2;
  key.isa = std::int8_t(active_isa());
  key.types[0] = std::int8_t(p.a.dtype);
  key.types[1] = std::int8_t(p.b.dtype);
  key.types[2] = std::int8_t(p.out_type);
  key.home = std::int8_t(home);
  key.stride_class = std::int8_t(p.packed_b ? 1 : qmm_stride_class(p) == "packed" ? 0 : 2);
  key.page_locked = home == DataHome::host && host_tensors_page_locked(p);
  return Dispatcher::instance().choose<QmmStrategyPlan>(key, describe, [&](const Settings& s) {
    Candidates c(qmm_strategies(), home, [&](const Schedule& sch) { return plan_qmm(p, sch); });
    const auto model = [&] {
      return from_model(
          s, p, home, [&](const MachineRates& r) { return model_qmm_plan(p, home, r); },
          [&] { return conservative_qmm_plan(p, home); });
    };
    return decide(s, qmm_key(p, home), c, model, [&] { return default_qmm_plan(p, home); });
  });
}

}  // namespace hk::detail

namespace hk {

void reset_dispatch() {
  detail::Dispatcher::instance().reset();
  detail::forget_machine_rates();
}

}  // namespace hk

// Dispatch: which schedule a call without one runs, and why.
//
// "Same class" for the nearest tuned shape: equal operator and algorithm version, element types,
// stride class, operator parameters (axis, direction, exclusive; the matmul's batch count) and
// machine fingerprint, and a shape of the same rank, so that every dimension keeps its role
// (scanned axis, lines; M, N, K). Among those, the record with the smallest shape_distance (the
// sum of |log2| of the size ratios, i.e. how many doublings apart) wins, if it is within
// max_nearest_distance and its schedule is legal for the call.
#include "runtime/tuning/dispatch.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
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
  std::int8_t padding[2] = {};  // explicit, so that every byte hashed and compared is initialized

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

bool log_requested(const char* value) {
  if (!value) return false;
  const std::string v = value;
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t end = std::min(v.find(',', start), v.size());
    const std::string item = v.substr(start, end - start);
    if (item == "dispatch" || item == "all") return true;
    start = end + 1;
  }
  return false;
}

Settings read_settings() {
  Settings s;
  s.log = log_requested(std::getenv("HETKERN_LOG"));
  s.db_path = tuning_db_path();
  if (const char* text = std::getenv("HETKERN_SCHEDULE"); text && *text) {
    const std::string all = text;
    std::size_t start = 0;
    while (start <= all.size()) {
      const std::size_t end = std::min(all.find(';', start), all.size());
      const std::string item = all.substr(start, end - start);
      if (item.find_first_not_of(" \t") != std::string::npos) {
        try {
          s.env_schedules.push_back(Schedule::parse(item));
        } catch (const Error& e) {
          std::fprintf(stderr, "hetkern: warning: HETKERN_SCHEDULE: %s; ignored\n", e.what());
        }
      }
      start = end + 1;
    }
  }
  return s;
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
    std::fprintf(stderr, "hetkern: dispatch %s -> %s (%s%s)\n", call_text.c_str(), s.to_string().c_str(),
                 d.reason.c_str(), cached ? ", cached" : "");
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

// The database's schedule for a key, through `plan` (which validates it against the call):
// exact record, else the nearest legal one of the same class. nullopt when there is none or
// the database cannot be read.
template <class Plan, class PlanFn>
std::optional<Decision> from_database(const Settings& settings, const TuningRecord& key, PlanFn&& plan) {
  if (settings.db_path.empty()) return std::nullopt;
  try {
    TuningDb db(settings.db_path, false);
    if (auto exact = db.find(key)) {
      try {
        return Decision{plan(Schedule::parse(exact->schedule)), "exact record, " + describe_measurement(*exact)};
      } catch (const Error& e) {
        Dispatcher::instance().warn("tuning database " + settings.db_path + ": record for " + key.op + " " +
                                    shape_to_text(key.shape) + " holds an unusable schedule (" + e.what() + ")");
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
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", distance);
        return Decision{plan(Schedule::parse(r->schedule)),
                        "nearest tuned shape " + shape_to_text(r->shape) + " at distance " + buf};
      } catch (const Error&) {
        // Illegal for this call (a parameter out of its range here): try the next nearest.
      }
    }
  } catch (const Error& e) {
    Dispatcher::instance().warn(e.what());
  }
  return std::nullopt;
}

template <class List> const Schedule* env_schedule_for(const Settings& s, const List& list) {
  for (const auto& sch : s.env_schedules)
    for (const auto& record : list)
      if (sch.strategy() == record_ref(record).name) return &sch;
  return nullptr;
}

std::string call_text_of(const TuningRecord& key) {
  return key.op + " " + key.dtype + "{" + shape_to_text(key.shape) + "} " + key.params + " " + key.stride_class;
}

}  // namespace

double shape_distance(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::fabs(std::log2(double(a[i]) / double(b[i])));
  return d;
}

TuningRecord scan_key(const CumulativeCall& call) {
  TuningRecord r;
  r.op = call.op_name();
  r.algorithm_version = scan_algorithm_version;
  r.dtype = std::string(name_of(call.input.desc.dtype()));
  r.shape.assign(call.input.desc.sizes().begin(), call.input.desc.sizes().end());
  r.stride_class = scan_stride_class(call);
  r.params = "axis=" + std::to_string(call.options.axis) + ",direction=" +
             (call.options.direction == Direction::decreasing ? "decreasing" : "increasing") +
             ",exclusive=" + (call.options.exclusive ? "1" : "0");
  r.fingerprint = machine_fingerprint();
  return r;
}

TuningRecord qmm_key(const QmmProblem& p) {
  TuningRecord r;
  r.op = "quantized_linear_matmul";
  r.algorithm_version = qmm_algorithm_version;
  r.dtype = std::string(name_of(p.a.dtype)) + "," + std::string(name_of(p.b.dtype)) + "," +
            std::string(name_of(p.out_type));
  r.shape = {p.M, p.N, p.K};
  r.stride_class = qmm_stride_class(p);
  r.params = "batch=" + std::to_string(p.batch[0] * p.batch[1]);
  r.fingerprint = machine_fingerprint();
  return r;
}

ScanStrategyPlan dispatch_scan(const CumulativeCall& call) {
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
  const bool in_place = call.in_place();
  const bool packed = d.is_packed() && call.output.desc.is_packed();
  key.stride_class = std::int8_t((in_place ? 1 : 0) + (packed ? 0 : 2));
  const auto describe = [&] { return call_text_of(scan_key(call)); };
  return Dispatcher::instance().choose<ScanStrategyPlan>(key, describe, [&](const Settings& s) {
    const auto plan = [&](const Schedule& sch) { return plan_scan(call, sch); };
    if (const Schedule* env = env_schedule_for(s, scan_strategies()))
      return Decision{plan(*env), "HETKERN_SCHEDULE"};
    const TuningRecord k = scan_key(call);
    if (auto d = from_database<ScanStrategyPlan>(s, k, plan)) return *std::move(d);
    return Decision{default_scan_plan(call), "heuristic, no tuning record"};
  });
}

QmmStrategyPlan dispatch_qmm(const QmmProblem& p) {
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
  key.stride_class = std::int8_t(p.packed_b ? 1 : qmm_stride_class(p) == "packed" ? 0 : 2);
  const auto describe = [&] { return call_text_of(qmm_key(p)); };
  return Dispatcher::instance().choose<QmmStrategyPlan>(key, describe, [&](const Settings& s) {
    const auto plan = [&](const Schedule& sch) { return plan_qmm(p, sch); };
    if (const Schedule* env = env_schedule_for(s, qmm_strategies()))
      return Decision{plan(*env), "HETKERN_SCHEDULE"};
    const TuningRecord k = qmm_key(p);
    if (auto d = from_database<QmmStrategyPlan>(s, k, plan)) return *std::move(d);
    return Decision{default_qmm_plan(p), "heuristic, no tuning record"};
  });
}

}  // namespace hk::detail

namespace hk {

void reset_dispatch() { detail::Dispatcher::instance().reset(); }

}  // namespace hk

// A call's candidates for the cost model, and the rule used before the rates are measured.
#include "runtime/tuning/model_choice.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "hetkern/error.hpp"
#ifdef HETKERN_OFFLOAD
#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "runtime/platform/page_locked.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/scan_host_chunks.hpp"
#endif
#include "runtime/tuning/cost_model.hpp"
#include "runtime/tuning/heuristic.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

#ifdef HETKERN_OFFLOAD
// The conservative rule's GPU threshold: a matmul this large gains several times over on a GPU
// even through a slow link, and smaller sides would waste the tensor-core tiles.
constexpr double conservative_gpu_macs = double(std::int64_t(1) << 34);
constexpr std::int64_t conservative_gpu_min_side = 1024;
#endif
// Below these a host call takes well under a millisecond, which a GPU's call cost and
// transfers never beat: no reason to measure the rates for it.
constexpr std::int64_t calibration_scan_elements = std::int64_t(1) << 24;
constexpr double calibration_qmm_macs = double(std::int64_t(1) << 30);

// Candidates and their plans side by side; a plan that is illegal for the call is left out.
template <class Plan> struct CandidateList {
  std::vector<CandidateWork> work;
  std::vector<Plan> plans;
  bool host_page_locked = false;  // every host tensor in page-locked memory: GPU candidates copy them unstaged

  void add(const Plan& plan, double amount, double bytes_in, double bytes_out) {
    const bool gpu = is_offload_plan(plan);
    CandidateWork w;
    w.strategy = strategy_of(plan).name;
    w.where = gpu ? Executor::gpu : Executor::host;
    w.work = amount;
    w.bytes_to_device = gpu ? bytes_in : 0;
    w.bytes_to_host = gpu ? bytes_out : 0;
    w.host_page_locked = host_page_locked;
    work.push_back(std::move(w));
    plans.push_back(plan);
  }

  template <class PlanFn> void add_named(const char* strategy, PlanFn&& plan_fn, double amount, double in, double out) {
    try {
      add(plan_fn(Schedule(strategy)), amount, in, out);
    } catch (const Error&) {
      // Not legal for this call (a layout or size the strategy refuses): not a candidate.
    }
  }

  // The fastest priced candidate; nullopt unless candidate 0 (the heuristic's, which any other
  // must beat) is priced.
  std::optional<ModelDecision<Plan>> choose(const MachineRates& rates, bool transfers) const {
    const std::vector<Prediction> ranked = rank(rates, work);
    bool heuristic_priced = false;
    for (const auto& r : ranked) heuristic_priced |= r.index == 0;
    if (!heuristic_priced) return std::nullopt;
    auto describe = [&](const Prediction& p) {
      std::string text = work[p.index].strategy + " " + seconds_text(p.cost.seconds());
      if (transfers && p.cost.transfer_seconds > 0) text += " (transfers " + seconds_text(p.cost.transfer_seconds) + ")";
      return text;
    };
    std::string reason = "cost model: " + describe(ranked[0]) + " predicted";
    reason += ranked.size() > 1 ? ", runner-up " + describe(ranked[1]) : ", the only candidate";
    return ModelDecision<Plan>{plans[ranked[0].index], std::move(reason)};
  }
};

#ifdef HETKERN_OFFLOAD
// Whether each of the ranges {data, bytes} lies in page-locked memory.
bool all_page_locked(std::initializer_list<std::pair<const void*, std::size_t>> ranges) {
  for (const auto& [data, bytes] : ranges)
    if (!host_range_page_locked(data, bytes)) return false;
  return true;
}
#endif

double qmm_macs(const QmmProblem& p) { return double(p.batch[0]) * double(p.batch[1]) * double(p.M) * double(p.N) * double(p.K); }

}  // namespace

std::optional<ModelDecision<ScanStrategyPlan>> model_scan_plan(const CumulativeCall& call, DataHome home,
                                                              const MachineRates& rates) {
  const ScanLayout layout = make_scan_layout(call);
  const double bytes = double(layout.lines()) * double(layout.length) * double(size_of(call.input.desc.dtype()));
  CandidateList<ScanStrategyPlan> c;
  c.add(default_scan_plan(call, home), 2 * bytes, 0, 0);
#ifdef HETKERN_OFFLOAD
  c.host_page_locked = home == DataHome::host && has_page_locked_rates(rates) && host_tensors_page_locked(call);
  if (home == DataHome::host) {
    const std::size_t before = c.work.size();
    c.add_named(default_offload_scan_strategy(call), [&](const Schedule& s) { return plan_scan(call, s); }, 2 * bytes,
                bytes, bytes);
    if (c.work.size() > before) c.work.back().copy_chunks = scan_host_chunks(call);
  }
  // Every line over every GPU, from page-locked tensors only: its calibrated rate holds the copies
  // over all the links at once, so it moves nothing more here.
  if (home == DataHome::host && c.host_page_locked && offload_device_count() > 1)
    c.add_named("scan.split", [&](const Schedule&) { return plan_scan(call, Schedule("scan.split").set("gpu_share", 1000)); }, 2 * bytes,
                0, 0);
#endif
  return c.choose(rates, home == DataHome::host);
}

std::optional<ModelDecision<QmmStrategyPlan>> model_qmm_plan(const QmmProblem& p, DataHome home,
                                                            const MachineRates& rates) {
  const double batch = double(p.batch[0]) * double(p.batch[1]);
  const double in = batch * (double(p.M) * double(p.K) + double(p.K) * double(p.N));
  const double out = batch * double(p.M) * double(p.N) * double(size_of(p.out_type));
  CandidateList<QmmStrategyPlan> c;
  // Tensors in device memory cross no host link: only host tensors' GPU candidates pay copies.
  const double host_in = home == DataHome::host ? in : 0, host_out = home == DataHome::host ? out : 0;
#ifdef HETKERN_OFFLOAD
  c.host_page_locked = home == DataHome::host && has_page_locked_rates(rates) && host_tensors_page_locked(p);
#endif
  c.add(default_qmm_plan(p, home), qmm_macs(p), host_in, host_out);
#ifdef HETKERN_OFFLOAD
  // The tensor cores only: dp4a was slower at every shape measured, and its rate, calibrated on
  // one square shape, made it look faster for small M (docs/performance.md). Weights packed by
  // hk::pack_b are the host kernels' panels, which a GPU call unpacks on the host every time:
  // they stay on the host.
  if (home == DataHome::host && !p.packed_b)
    c.add_named("qmm.offload_mma", [&](const Schedule& s) { return plan_qmm(p, s); }, qmm_macs(p), host_in, host_out);
  // Every GPU on one call; its rate, calibrated on device tensors, holds the copies between them.
  if (offload_device_count() > 1 && !p.packed_b)
    c.add_named("qmm.devices", [&](const Schedule& s) { return plan_qmm(p, s); }, qmm_macs(p), host_in, host_out);
#endif
  return c.choose(rates, home == DataHome::host);
}

std::optional<ModelDecision<QmmStrategyPlan>> conservative_qmm_plan([[maybe_unused]] const QmmProblem& p,
                                                                   [[maybe_unused]] DataHome home) {
#ifdef HETKERN_OFFLOAD
  if (home == DataHome::host && !p.packed_b && qmm_macs(p) >= conservative_gpu_macs &&
      p.M >= conservative_gpu_min_side && p.N >= conservative_gpu_min_side) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "conservative rule, no machine rates: 2^%.1f multiply-adds, M and N >= %lld",
                  std::log2(qmm_macs(p)), static_cast<long long>(conservative_gpu_min_side));
    return ModelDecision<QmmStrategyPlan>{plan_qmm(p, Schedule("qmm.offload_mma")), buf};
  }
#endif
  return std::nullopt;
}

bool host_tensors_page_locked([[maybe_unused]] const CumulativeCall& call) {
#ifdef HETKERN_OFFLOAD
  return worth_calibrating(call) && all_page_locked({{call.input.data, std::size_t(byte_span(call.input.desc).hi)},
                          {call.output.data, std::size_t(byte_span(call.output.desc).hi)}});
#else
  return false;
#endif
}

bool host_tensors_page_locked([[maybe_unused]] const QmmProblem& p) {
#ifdef HETKERN_OFFLOAD
  if (p.packed_b || p.M == 0 || p.N == 0 || p.K == 0 || p.batch[0] * p.batch[1] == 0 || !worth_calibrating(p))
    return false;
  const QmmSpans spans = qmm_spans(p);
  return all_page_locked({{p.a.data, spans.a}, {p.b.data, spans.b}, {p.out, spans.out}});
#else
  return false;
#endif
}

bool worth_calibrating(const CumulativeCall& call) {
  const ScanLayout layout = make_scan_layout(call);
  return layout.lines() * layout.length >= calibration_scan_elements;
}

bool worth_calibrating(const QmmProblem& problem) { return qmm_macs(problem) >= calibration_qmm_macs; }

}  // namespace hk::detail

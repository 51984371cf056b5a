// The cost model's arithmetic: fixed cost + work / rate + transfers / link bandwidth.
#include "runtime/tuning/cost_model.hpp"

#include <algorithm>
#include <cstdio>

namespace hk::detail {
namespace {

double rate_of(const std::map<std::string, double>& rates, const std::string& strategy) {
  const auto it = rates.find(strategy);
  return it == rates.end() ? 0 : it->second;
}

}  // namespace

bool has_page_locked_rates(const MachineRates& rates) {
  return rates.page_locked_to_device_bytes_per_s > 0 && rates.page_locked_to_host_bytes_per_s > 0;
}

std::optional<Cost> predict(const MachineRates& rates, const CandidateWork& c) {
  const double rate = rate_of(rates.strategy_rates, c.strategy);
  if (!(rate > 0)) return std::nullopt;
  Cost cost;
  cost.work_seconds = c.work / rate;
  const auto fixed = rates.strategy_fixed_seconds.find(c.strategy);
  if (fixed != rates.strategy_fixed_seconds.end()) cost.fixed_seconds = fixed->second;
  if (c.where == Executor::gpu) {
    if (!rates.has_gpu_costs()) return std::nullopt;
    // A strategy measured without its own fixed cost pays the generic GPU call's.
    if (fixed == rates.strategy_fixed_seconds.end()) cost.fixed_seconds = rates.gpu_call_seconds;
    const bool unstaged = c.host_page_locked && has_page_locked_rates(rates);
    const double in = c.bytes_to_device / (unstaged ? rates.page_locked_to_device_bytes_per_s : rates.to_device_bytes_per_s);
    const double back = c.bytes_to_host / (unstaged ? rates.page_locked_to_host_bytes_per_s : rates.to_host_bytes_per_s);
    // In chunks, the slower direction bounds the copies, plus one chunk of the other that
    // overlaps nothing.
    cost.transfer_seconds = c.copy_chunks > 0 ? std::max(in, back) + std::min(in, back) / double(c.copy_chunks) : in + back;
    // Host tensors: the copies' own cost, which a small call's bytes do not show.
    if (c.bytes_to_device > 0 || c.bytes_to_host > 0) cost.transfer_seconds += rates.host_tensor_call_seconds;
  }
  return cost;
}

std::vector<Prediction> rank(const MachineRates& rates, const std::vector<CandidateWork>& candidates) {
  std::vector<Prediction> out;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (const auto cost = predict(rates, candidates[i])) out.push_back({i, *cost});
  std::sort(out.begin(), out.end(), [](const Prediction& a, const Prediction& b) {
    return a.cost.seconds() != b.cost.seconds() ? a.cost.seconds() < b.cost.seconds() : a.index < b.index;
  });
  return out;
}

std::string seconds_text(double seconds) {
  char buf[32];
  if (seconds < 1e-6)
    std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
  else if (seconds < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  else if (seconds < 1)
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  return buf;
}

}  // namespace hk::detail

// What the split strategies (scan.split, qmm.split) share: their parameters, plan and search
// space, how a call's work units are shared out, and the concurrent run of the parts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedules/split_plan.hpp"
#include "schedules/strategies/device_speeds.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// gpu_share (`share_help` gives its default and why), devices and threads, in that order.
std::vector<ParamSpec> split_params(const char* share_help);

/// The `devices` parameter: offload devices used, from 1 to a fixed bound.
ParamSpec device_count_param(const char* meaning);

/// The `devices` value a schedule gives (default: every visible device). Throws
/// hk::Error(Errc::invalid_schedule) naming `op` when it exceeds offload_device_count().
int bound_device_count(const std::string& op, const BoundParams& params);

/// qmm.devices' tuner axes: device counts from 2 and a few home shares; nullopt (nothing to
/// spread over) with fewer than two devices.
SearchSpace spread_space();

/// The plan a schedule gives. Throws hk::Error(Errc::invalid_schedule) naming `op` when it asks
/// for more devices than offload_device_count().
SplitPlan bound_split_plan(const std::string& op, const BoundParams& params, int default_share);

/// The plan as schedule text, every parameter explicit.
Schedule split_schedule(const char* name, const SplitPlan& plan);

/// The tuner's axes: a few shares, and the device counts where there is more than one device.
SearchSpace split_space();

/// Work units [begin, end) of one part of a call.
struct SplitRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

/// The ranges of `units` work units under `plan`: the devices' share (gpu_share per mille,
/// rounded to the nearest unit) first, divided among them in device order in proportion to
/// `speeds` (one per device, as split_speeds gives them), or evenly where they are empty or alike
/// (the first ones take one more when it does not divide), then the host's, the rest. Index 0 is
/// the host's, index 1 + d device d's.
std::vector<SplitRange> split_ranges(std::int64_t units, const SplitPlan& plan, const std::vector<double>& speeds = {});

/// The measured speeds at `work` of the devices a split plan runs on (device_speeds); empty where
/// they are fewer than the plan's (the host fallback).
std::vector<double> split_speeds(const SplitPlan& plan, SpreadWork work);

/// Runs every part at once: parts[0] on the calling thread, each other one on a thread of its own,
/// kept for later calls (a new one starts when none is idle). Returns when all have finished;
/// then rethrows the first exception one threw. Where no thread can be had for a part, no later
/// part starts, `not_started` runs (so that parts already running and waiting for one that never
/// will can end), and the error is rethrown once the running ones have finished. With
/// AfterPart::linger the kept threads stay awake for a few milliseconds after their part (polling,
/// and yielding their core to any other thread; unless HETKERN_GPU_WAIT=block), so that the parts
/// of a call that follows soon start at once: on the four-GPU host, waking a sleeping thread took
/// 0.1 to 0.5 ms. Only for calls with no host part, whose cores a lingering thread would take.
enum class AfterPart { sleep, linger };
void run_parts(const std::vector<std::function<void()>>& parts, const std::function<void()>& not_started = {},
               AfterPart after = AfterPart::sleep);

/// The devices a call spread over `count` of them runs on: the home device (offload_device(),
/// where device tensors lie) first, then the other visible ones in number order. On the host
/// fallback, the host.
std::vector<int> spread_devices(int count);

/// The ranges of `units` work units over `devices` devices: the home device's (index 0)
/// home_share per mille (rounded to the nearest unit), the rest divided among the others in order,
/// in proportion to `others` (their speeds, one each), or evenly where that is empty or alike (the
/// first ones take one more when it does not divide). With one device, all of it.
std::vector<SplitRange> spread_ranges(std::int64_t units, int devices, int home_share,
                                      const std::vector<double>& others = {});

/// The measured speeds at `work` of every device but the first (device_speeds).
std::vector<double> other_devices_speeds(const std::vector<int>& devices, SpreadWork work);

/// Runs a call's parts at once: `device_part(d, device, range)` for each device d (0 to
/// plan.devices - 1) with work, on a thread of its own (`device` its OpenMP device number, the
/// d-th of spread_devices(plan.devices)), and
/// `host_part(range)` on the calling thread, the ranges those split_ranges gave for `plan`.
/// Returns when every part has finished; then rethrows the first exception one threw.
/// `not_started` as for run_parts.
void run_split(const SplitPlan& plan, const std::vector<SplitRange>& ranges, const std::function<void(SplitRange)>& host_part,
               const std::function<void(int, int, SplitRange)>& device_part,
               const std::function<void()>& not_started = {});

}  // namespace hk::detail

// Parameters, plan, space and concurrent run shared by the split strategies.
#include "schedules/strategies/split_common.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "runtime/platform/environment.hpp"

namespace hk::detail {
namespace {

constexpr int max_split_devices = 64;

// How long a kept thread stays awake after a part that asks it to (AfterPart::linger): the other
// devices' copy threads of a 16384^3 matmul over four GPUs wait about 3 ms for the next call.
constexpr std::chrono::milliseconds linger_time{5};

// Threads kept for the parts of later calls, started as parts need them: on four GPUs, when every
// call started threads of its own, each call's first copy between devices began 0.2 to 0.9 ms
// late, with kept threads 0.1 to 0.5 ms (docs/gpu.md). Never destroyed: idle threads wait for
// work until the process ends. A child of fork() has none of its parent's threads, so it starts
// a set of its own.
class PartThreads {
 public:
  static PartThreads& get() {
    static const bool started = [] {
      current() = new PartThreads;
      pthread_atfork(nullptr, nullptr, [] { current() = new PartThreads; });
      return true;
    }();
    (void)started;
    return *current();
  }

  // Runs `task` on an idle kept thread, or on a new one when none is idle. With `linger` the
  // thread then stays awake a while (AfterPart::linger).
  void run(std::function<void()> task, bool linger) {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(task), linger});
    queued_.store(queue_.size(), std::memory_order_release);
    if (std::ptrdiff_t(queue_.size()) > idle_) {
      try {
        std::thread([this] { serve(); }).detach();
      } catch (...) {
        queue_.pop_back();
        queued_.store(queue_.size(), std::memory_order_release);
        throw;
      }
    } else {
      wake_.notify_one();
    }
  }

 private:
  struct Task {
    std::function<void()> run;
    bool linger;
  };

  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (bool linger = false;;) {
      ++idle_;
      if (linger && queue_.empty()) {
        lock.unlock();
        stay_awake();
        lock.lock();
      }
      wake_.wait(lock, [this] { return !queue_.empty(); });
      --idle_;
      Task task = std::move(queue_.front());
      queue_.pop_front();
      queued_.store(queue_.size(), std::memory_order_release);
      lock.unlock();
      task.run();
      linger = task.linger && gpu_waits_spin();
      lock.lock();
    }
  }

  // Polls for a task for up to linger_time, yielding the core to any other thread that wants it.
  void stay_awake() const {
    const auto until = std::chrono::steady_clock::now() + linger_time;
    while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
  }

  static PartThreads*& current() {
    static PartThreads* threads = nullptr;
    return threads;
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  std::atomic<std::size_t> queued_{0};  // queue_.size(), for threads that stay awake without the lock
  std::ptrdiff_t idle_ = 0;  // threads waiting for a task; a new one starts when tasks outnumber them
};

// `parts` contiguous ranges of `units` from `begin`, evenly (the first ones one more when it does
// not divide), after those already in `ranges`.
void append_even_ranges(std::vector<SplitRange>& ranges, std::int64_t begin, std::int64_t units, int parts) {
  for (int d = 0; d < parts; ++d) {
    const std::int64_t n = units / parts + (d < units % parts ? 1 : 0);
    ranges.push_back({begin, begin + n});
    begin += n;
  }
}

// `parts` contiguous ranges of `units` from `begin` in proportion to `speeds` (one per part; empty
// or all alike: evenly, as above), each boundary the nearest unit to its share of the speeds so far.
void append_ranges_by_speed(std::vector<SplitRange>& ranges, std::int64_t begin, std::int64_t units, int parts,
                            const std::vector<double>& speeds) {
  if (speeds.size() != std::size_t(parts) ||
      std::all_of(speeds.begin(), speeds.end(), [&](double v) { return v == speeds.front(); })) {
    append_even_ranges(ranges, begin, units, parts);
    return;
  }
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  double so_far = 0;
  std::int64_t start = begin;
  for (int d = 0; d < parts; ++d) {
    so_far += speeds[std::size_t(d)];
    const std::int64_t end =
        d + 1 == parts ? begin + units : begin + std::int64_t(std::llround(double(units) * (so_far / total)));
    ranges.push_back({start, std::max(start, end)});
    start = std::max(start, end);
  }
}

}  // namespace

ParamSpec device_count_param(const char* meaning) { return {"devices", 1, max_split_devices, meaning}; }

int bound_device_count(const std::string& op, const BoundParams& p) {
  const int visible = offload_device_count();
  const int devices = int(p.get("devices", visible));
  if (devices > visible)
    throw Error(Errc::invalid_schedule, op, p.schedule().to_string(),
                "devices = " + std::to_string(devices) + " but " + std::to_string(visible) +
                    " offload device(s) are visible");
  return devices;
}

std::vector<ParamSpec> split_params(const char* share_help) {
  return {{"gpu_share", 0, 1000, share_help},
          device_count_param("offload devices used, the home device (hk::offload_device()) first (default: every visible "
                             "one; the host fallback has one)"),
          {"threads", 1, max_threads,
           "OpenMP threads of the host part (default: hk::default_threads() less one per device, "
           "whose thread drives it, at least 1)"}};
}

SplitPlan bound_split_plan(const std::string& op, const BoundParams& p, int default_share) {
  const int devices = bound_device_count(op, p);
  return {int(p.get("gpu_share", default_share)), devices,
          int(p.get("threads", std::max(1, default_threads() - devices)))};
}

Schedule split_schedule(const char* name, const SplitPlan& plan) {
  return Schedule(name).set("gpu_share", plan.gpu_share).set("devices", plan.devices).set("threads", plan.threads);
}

SearchSpace split_space() {
  std::vector<SpaceAxis> axes = {{"gpu_share", {"250", "500", "750", "900"}}};
  const int visible = offload_device_count();
  if (visible > 1) {
    SpaceAxis devices{"devices", {}};
    for (int d = 1; d <= std::min(visible, max_split_devices); ++d) devices.values.push_back(std::to_string(d));
    axes.push_back(std::move(devices));
  }
  return axes;
}

SearchSpace spread_space() {
  const int visible = std::min(offload_device_count(), max_split_devices);
  if (visible < 2) return std::nullopt;
  SpaceAxis devices{"devices", {}};
  for (int d = 2; d <= visible; ++d) devices.values.push_back(std::to_string(d));
  // Around the best shares measured on four H200s for two, three and four devices (525, 358,
  // 275-300: an even share and 25 more; the home device copies nothing, so it takes a little more).
  return std::vector<SpaceAxis>{std::move(devices), {"home_share", {"275", "300", "350", "375", "525", "550"}}};
}

std::vector<SplitRange> split_ranges(std::int64_t units, const SplitPlan& plan, const std::vector<double>& speeds) {
  const std::int64_t device_units = (units * plan.gpu_share + 500) / 1000;
  std::vector<SplitRange> ranges{{device_units, units}};
  append_ranges_by_speed(ranges, 0, device_units, plan.devices, speeds);
  return ranges;
}

std::vector<double> split_speeds(const SplitPlan& plan, SpreadWork work) {
  const std::vector<int> devices = spread_devices(plan.devices);
  if (int(devices.size()) != plan.devices) return {};
  return device_speeds(work, devices);
}

void run_parts(const std::vector<std::function<void()>>& parts, const std::function<void()>& if_not_started,
               AfterPart after) {
  std::mutex mutex;
  std::exception_ptr first;
  const auto guarded = [&](const std::function<void()>& part) {
    try {
      part();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!first) first = std::current_exception();
    }
  };
  std::condition_variable finished;
  std::size_t running = 0;
  std::exception_ptr not_started;  // no thread could be had for a part: the others still finish
  for (std::size_t i = 1; i < parts.size() && !not_started; ++i) {
    try {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        ++running;
      }
      PartThreads::get().run([&, i] {
        guarded(parts[i]);
        const std::lock_guard<std::mutex> lock(mutex);
        --running;
        finished.notify_all();
      }, after == AfterPart::linger);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex);
      --running;
      not_started = std::current_exception();
    }
  }
  if (not_started && if_not_started) guarded(if_not_started);
  if (!parts.empty() && !not_started) guarded(parts[0]);
  {
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return running == 0; });
  }
  if (not_started) std::rethrow_exception(not_started);
  if (first) std::rethrow_exception(first);
}

std::vector<int> spread_devices(int count) {
  const int home = offload_device();
  if (offload_on_host()) return {home};
  std::vector<int> devices{home};
  for (int d = 0; d < offload_device_count() && int(devices.size()) < count; ++d)
    if (d != home) devices.push_back(d);
  return devices;
}

std::vector<SplitRange> spread_ranges(std::int64_t units, int devices, int home_share,
                                      const std::vector<double>& others) {
  const std::int64_t home = devices == 1 ? units : (units * home_share + 500) / 1000;
  std::vector<SplitRange> ranges{{0, home}};
  append_ranges_by_speed(ranges, home, units - home, devices - 1, others);
  return ranges;
}

std::vector<double> other_devices_speeds(const std::vector<int>& devices, SpreadWork work) {
  if (devices.size() < 2) return {};
  return device_speeds(work, std::vector<int>(devices.begin() + 1, devices.end()));
}

void run_split(const SplitPlan& plan, const std::vector<SplitRange>& ranges, const std::function<void(SplitRange)>& host_part,
               const std::function<void(int, int, SplitRange)>& device_part, const std::function<void()>& not_started) {
  const std::vector<int> devices = spread_devices(plan.devices);
  std::vector<std::function<void()>> parts{[&] {
    if (ranges[0].size() > 0) host_part(ranges[0]);
  }};
  for (int d = 0; d < plan.devices; ++d) {
    const SplitRange range = ranges[std::size_t(1 + d)];
    if (range.size() == 0) continue;
    // On the host fallback the one device is the host itself.
    const int device = devices[std::min(std::size_t(d), devices.size() - 1)];
    parts.push_back([&, d, device, range] { device_part(d, device, range); });
  }
  run_parts(parts, not_started);
}

}  // namespace hk::detail

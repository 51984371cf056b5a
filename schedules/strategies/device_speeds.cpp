// The devices' measured speeds (device_speeds.hpp), kept for the process.
#include "schedules/strategies/device_speeds.hpp"

#include <mutex>

namespace hk::detail {
namespace {

struct Speeds {
  std::mutex mutex;
  std::vector<double> of[2];  // by SpreadWork
};

Speeds& speeds() {
  static Speeds s;
  return s;
}

}  // namespace

void set_device_speeds(SpreadWork work, std::vector<double> values) {
  Speeds& s = speeds();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.of[int(work)] = std::move(values);
}

std::vector<double> device_speeds(SpreadWork work, const std::vector<int>& devices) {
  Speeds& s = speeds();
  const std::lock_guard<std::mutex> lock(s.mutex);
  const std::vector<double>& known = s.of[int(work)];
  std::vector<double> out;
  for (const int d : devices) {
    // A device the speeds do not name (the host fallback's, or one measured with fewer visible):
    // none of them are used, since they would compare with nothing.
    if (d < 0 || std::size_t(d) >= known.size() || !(known[std::size_t(d)] > 0))
      return std::vector<double>(devices.size(), 1.0);
    out.push_back(known[std::size_t(d)]);
  }
  return out;
}

}  // namespace hk::detail

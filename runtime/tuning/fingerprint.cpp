// The machine fingerprint that tuning records are keyed by.
#include "runtime/tuning/fingerprint.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hetkern/info.hpp"
#include "hetkern/topology.hpp"
#include "hetkern/tuning.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace hk {
namespace detail {
namespace {

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

// The processor's brand string (CPUID 0x80000002..4), else /proc/cpuinfo's model name.
std::string read_cpu_model() {
#if defined(__x86_64__)
  unsigned max_leaf = __get_cpuid_max(0x80000000u, nullptr);
  if (max_leaf >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      unsigned r[4];
      __get_cpuid(0x80000002u + i, &r[0], &r[1], &r[2], &r[3]);
      for (int j = 0; j < 4; ++j)
        for (int b = 0; b < 4; ++b) brand[i * 16 + j * 4 + b] = char((r[j] >> (8 * b)) & 0xff);
    }
    std::string s = trimmed(brand);
    if (!s.empty()) return s;
  }
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trimmed(line.substr(colon + 1));
    }
  return "unknown";
}

// Records tuned with a GPU name offload and split schedules, which mean something else without
// one, with another GPU or with another number of them. The NVIDIA driver names its GPUs in /proc
// (folders named by bus address: the order of device numbers); other devices go by number.
// Several devices: "N x model" when they are alike, else their models in device order.
std::string read_offload_device_model() {
#ifdef HETKERN_OFFLOAD
  if (offload_on_host()) return "none";
  const auto count = std::size_t(offload_device_count());
  std::vector<std::filesystem::path> gpus;
  std::error_code ec;
  for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) gpus.push_back(gpu.path());
  std::sort(gpus.begin(), gpus.end());
  std::vector<std::string> models;
  for (const auto& gpu : gpus) {
    std::ifstream info(gpu / "information");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("Model:", 0) == 0) models.push_back(trimmed(line.substr(6)));
  }
  if (models.size() < count) {
    models.clear();
    for (std::size_t d = 0; d < count; ++d) models.push_back("openmp-device-" + std::to_string(d));
  }
  models.resize(count);
  if (count == 1) return models[0];
  if (std::all_of(models.begin(), models.end(), [&](const std::string& m) { return m == models[0]; }))
    return std::to_string(count) + " x " + models[0];
  std::string text = models[0];
  for (std::size_t d = 1; d < count; ++d) text += " + " + models[d];
  return text;
#else
  return "none";
#endif
}

// ';' and '=' separate the fields, so they may not appear inside one.
std::string field_value(std::string v) {
  for (char& c : v)
    if (c == ';' || c == '=') c = ' ';
  return v;
}

}  // namespace

const std::string& cpu_model() {
  static const std::string model = read_cpu_model();
  return model;
}

std::string fingerprint_text(const FingerprintParts& p) {
  return "cpu=" + field_value(p.cpu_model) + ";isa=" + field_value(p.isa) +
         ";version=" + field_value(p.version) + ";threads=" + std::to_string(p.threads) +
         ";pin=" + field_value(p.pin) + ";topology=" + field_value(p.topology) +
         ";device=" + field_value(p.device);
}

FingerprintParts current_fingerprint_parts() {
  FingerprintParts p;
  p.cpu_model = cpu_model();
  p.isa = name_of(active_isa());
  p.version = HETKERN_VERSION;
  p.threads = default_threads();
  p.pin = name_of(default_pin_policy());
  p.topology = topology_digest();
  // Read once: the device cannot change within a process, and dispatch asks on every new shape.
  static const std::string device_model = read_offload_device_model();
  p.device = device_model;
  return p;
}

}  // namespace detail

std::string machine_fingerprint() { return detail::fingerprint_text(detail::current_fingerprint_parts()); }

std::string tuning_db_path() {
  if (const char* p = std::getenv("HETKERN_TUNING_DB"); p && *p) return p;
  // A relative XDG_CACHE_HOME is invalid by the XDG specification, and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/hetkern/tuning.sqlite";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hetkern/tuning.sqlite";
  return {};
}

}  // namespace hk

// The parts of the machine fingerprint, gathered in one place so that every component that
// changes what a measurement means (pinning, topology, devices) adds its field here.
#pragma once

#include <string>

namespace hk::detail {

struct FingerprintParts {
  std::string cpu_model;  // the processor's brand string
  std::string isa;        // hk::active_isa() by name
  std::string version;    // library version
  int threads = 1;        // hk::default_threads()
  std::string pin;        // the default thread pinning policy (hk::default_pin_policy())
  std::string topology;   // hk::topology_digest(): the allowed hwloc topology
  std::string device;     // the offload devices the schedules may use: "none", the GPU's model, or
                          // several GPUs' ("2 x model")
};

FingerprintParts current_fingerprint_parts();
std::string fingerprint_text(const FingerprintParts& parts);
/// The processor's brand string, read once.
const std::string& cpu_model();

}  // namespace hk::detail

// Each offload device's measured speed, which the strategies that spread one call over several
// devices share its work by (qmm.devices, qmm.split, scan.split). Calibration measures them
// (MachineRates::device_matmul_speeds, device_scan_speeds) and the runtime passes them here once it
// has the machine's rates; until then, and for devices they do not name, every device counts alike.
#pragma once

#include <vector>

namespace hk::detail {

/// What a device's share is measured by: the matmul on its own memory, or a scan of host tensors
/// through its link.
enum class SpreadWork { matmul, scan };

/// Sets the speeds of every device, by OpenMP device number (relative to any one of them; values
/// that are not positive count as unknown). Empty: unknown.
void set_device_speeds(SpreadWork work, std::vector<double> speeds);

/// The speeds of `devices`, in their order: 1 for each where any of them is unknown.
std::vector<double> device_speeds(SpreadWork work, const std::vector<int>& devices);

}  // namespace hk::detail

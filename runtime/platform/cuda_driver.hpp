// The CUDA driver's own functions, for what the offload runtime does not tell (a GPU's
// architecture, whether host memory is page-locked): libcuda.so.1 opened through dlopen, so that
// libhetkern and its GPU plugin link no CUDA library.
#pragma once

namespace hk::detail {

/// The driver function `name`, or null where there is no driver, it does not start (cuInit) or it
/// has no such function. The driver is opened and started once per process and stays loaded (the
/// offload runtime uses it too).
void* cuda_driver_function(const char* name);

}  // namespace hk::detail

// What a call on DLPack tensors needs around the library: results as DLPack capsules, device
// tensors as borrowed device buffers, and the producers' CUDA streams waited for.
#pragma once

#include <Python.h>

#include "python/ext/operand.hpp"

namespace hkpy {

/// _hetkern.empty(like, shape, dtype): a new packed tensor as a "dltensor" capsule on the
/// device of the capsule `like` (host memory for the CPU, hk::DeviceBuffer for CUDA); a shape
/// or dtype of None takes like's.
PyObject* py_empty(PyObject* self, PyObject* args);

/// Checks that every device operand lies on the device hetkern offloads to and that host and
/// device operands are not mixed. Returns -1 with a Python exception set, else 1 when the call
/// runs on the device (it then calls wait_for_producers before its kernels) and 0 when it runs on
/// the host.
int device_call(const char* op, std::initializer_list<const Operand*> operands);

#ifdef HETKERN_OFFLOAD
/// Waits for all the work queued on the current CUDA context (`cuCtxSynchronize`), which holds
/// whatever the producers queued on any of their streams before handing out the capsules. Throws
/// hk::Error; called without the GIL, inside the call's run_unlocked, which so releases it once.
void wait_for_producers(const char* op);
#endif

}  // namespace hkpy

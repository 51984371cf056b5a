// DLPack results, device checks and the producers' streams (device_glue.hpp).
#include "python/ext/device_glue.hpp"

#include <dlpack/dlpack.h>

#include <memory>
#include <string>
#include <vector>

#include "hetkern/dtype.hpp"
#include "python/ext/errors.hpp"

#ifdef HETKERN_OFFLOAD
#include <dlfcn.h>

#include <optional>

#include "hetkern/device.hpp"
#endif

namespace hkpy {
namespace {

struct Owned {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape;
  std::unique_ptr<std::byte[]> host;
#ifdef HETKERN_OFFLOAD
  std::optional<hk::DeviceBuffer> device;
#endif
};

void delete_owned(DLManagedTensor* managed) { delete static_cast<Owned*>(managed->manager_ctx); }

// A capsule nobody consumed still owns its tensor (a consumer renames it "used_dltensor").
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  managed->deleter(managed);
}

DLDataType dlpack_type(hk::DataType type) {
  const std::string_view name = hk::name_of(type);
  const auto bits = std::uint8_t(hk::size_of(type) * 8);
  std::uint8_t code = kDLInt;
  if (name.starts_with("uint")) code = kDLUInt;
  else if (name.starts_with("float")) code = kDLFloat;
  else if (name.starts_with("bfloat")) code = kDLBfloat;
  return {code, bits, 1};
}

}  // namespace

PyObject* py_empty(PyObject*, PyObject* args) {
  PyObject *like, *shape;
  const char* type_name;
  if (!PyArg_ParseTuple(args, "OOz", &like, &shape, &type_name)) return nullptr;
  auto* source = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(like, "dltensor"));
  if (!source) return nullptr;
  DLDataType dl_type = source->dl_tensor.dtype;
  if (type_name) {
    const auto type = hk::parse_data_type(type_name);
    if (!type)
      return raise_error(hk::Errc::invalid_type, "empty", "dtype", std::string(type_name) + " is unknown");
    dl_type = dlpack_type(*type);
  }
  auto owned = std::make_unique<Owned>();
  std::int64_t count = 1;
  if (shape == Py_None) {
    owned->shape.assign(source->dl_tensor.shape, source->dl_tensor.shape + source->dl_tensor.ndim);
  } else {
    PyObject* sizes = PySequence_Tuple(shape);
    if (!sizes) return nullptr;
    for (Py_ssize_t i = 0; i < PyTuple_Size(sizes); ++i) {
      const long long n = PyLong_AsLongLong(PyTuple_GetItem(sizes, i));
      if (n == -1 && PyErr_Occurred()) {
        Py_DECREF(sizes);
        return nullptr;
      }
      owned->shape.push_back(n);
    }
    Py_DECREF(sizes);
  }
  for (const std::int64_t n : owned->shape) {
    if (n < 0) return raise_error(hk::Errc::invalid_shape, "empty", "shape", "sizes must not be negative");
    count *= n;
  }
  const std::size_t bytes = std::size_t(count) * ((dl_type.bits + 7u) / 8u);
  DLDevice device = source->dl_tensor.device;
  void* data = nullptr;
  if (device.device_type == kDLCUDA || device.device_type == kDLCUDAManaged) {
#ifdef HETKERN_OFFLOAD
    const auto failure = run_unlocked([&] { owned->device.emplace(bytes); });
    if (failure.kind != Failure::none) return failure.raise();
    data = owned->device->data();
    device.device_type = kDLCUDA;
#else
    return raise_error(hk::Errc::invalid_parameter, "empty", "like",
                       "CUDA tensors need a build with offload (the offload preset)");
#endif
  } else {
    owned->host.reset(new (std::nothrow) std::byte[bytes == 0 ? 1 : bytes]);
    if (!owned->host) return PyErr_NoMemory();
    data = owned->host.get();
    device = {kDLCPU, 0};
  }
  DLTensor& t = owned->managed.dl_tensor;
  t.data = data;
  t.device = device;
  t.ndim = int(owned->shape.size());
  t.dtype = dl_type;
  t.shape = owned->shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  owned->managed.manager_ctx = owned.get();
  owned->managed.deleter = delete_owned;
  PyObject* capsule = PyCapsule_New(&owned->managed, "dltensor", capsule_destructor);
  if (capsule) owned.release();
  return capsule;
}

int device_call(const char* op, std::initializer_list<const Operand*> operands) {
  int on_device = -1;
  for (const Operand* o : operands) {
    if (!o) continue;
    if (on_device < 0) on_device = o->on_device;
    else if (on_device != int(o->on_device)) {
      raise_error(hk::Errc::invalid_parameter, op, "tensors",
                  "host and device tensors cannot be mixed in one call");
      return -1;
    }
  }
  if (on_device <= 0) return 0;
#ifdef HETKERN_OFFLOAD
  if (hk::offload_on_host()) {
    // A plugin that could not be opened says why (hk::load_gpu_plugin has tried by now).
    if (const hk::GpuPluginStatus plugin = hk::gpu_plugin_status(); !plugin.loaded && !plugin.error.empty())
      raise_error(hk::Errc::unavailable, op, "device", "the GPU plugin is unavailable: " + plugin.error);
    else
      raise_error(hk::Errc::invalid_parameter, op, "device", "OpenMP offload found no GPU to run on");
    return -1;
  }
  for (const Operand* o : operands)
    if (o && o->device_id != hk::offload_device()) {
      raise_error(hk::Errc::invalid_parameter, op, "device",
                  "a tensor is on cuda:" + std::to_string(o->device_id) +
                      "; hetkern offloads to OpenMP device " + std::to_string(hk::offload_device()));
      return -1;
    }
  return 1;
#else
  raise_error(hk::Errc::invalid_parameter, op, "device",
              "CUDA tensors need a build with offload (the offload preset)");
  return -1;
#endif
}

#ifdef HETKERN_OFFLOAD
void wait_for_producers(const char* op) {
  using Sync = int (*)();
  static const Sync sync = [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
    return cuda ? reinterpret_cast<Sync>(dlsym(cuda, "cuCtxSynchronize")) : nullptr;
  }();
  if (!sync) throw hk::Error(hk::Errc::invalid_parameter, op, "stream", "libcuda.so.1 cannot be loaded");
  if (const int status = sync(); status != 0)
    throw hk::Error(hk::Errc::invalid_parameter, op, "stream",
                    "waiting for the producers' CUDA streams failed (CUresult " + std::to_string(status) + ")");
}
#endif

}  // namespace hkpy

// _hetkern.qmm and _hetkern.pack_b: QuantizedLinearMatMul in numpy.matmul's conventions.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "hetkern/operators.hpp"
#include "python/ext/calls.hpp"
#include "python/ext/device_glue.hpp"
#include "python/ext/errors.hpp"
#include "python/ext/operand.hpp"

#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

namespace hkpy {
namespace {

constexpr const char* qmm_op = "quantized_linear_matmul";
constexpr const char* packed_capsule = "hetkern.PackedB";
#ifdef HETKERN_OFFLOAD
constexpr const char* device_packed_capsule = "hetkern.DevicePackedB";
#endif

// A scale or zero point: absent (None), a Python number of `number_type`, or an array. A 0-d
// array (a numpy scalar such as np.uint8(3), which keeps its type) is one value per tensor. ONNX
// gives per-row parameters of A and the output as 1-D arrays of M values; the library wants
// them as {M,1}, so a 1-D array of another length is refused here, in the caller's shape.
bool parameter(PyObject* object, hk::DataType number_type, bool per_row, std::int64_t rows, const char* subject,
               Operand& operand, bool& present) {
  present = object != Py_None;
  if (!present) return true;
  if (PyFloat_Check(object) || PyLong_Check(object))
    return scalar_operand(object, number_type, qmm_op, subject, operand);
  if (!acquire(object, false, qmm_op, subject, operand)) return false;
  if (operand.on_device) {
    raise_error(hk::Errc::invalid_parameter, qmm_op, subject,
                "quantization parameters are host arrays (they are read on the host)");
    return false;
  }
  if (operand.rank == 0) operand.insert_unit_dim(0);
  if (per_row && operand.rank == 1 && operand.sizes[0] > 1) {
    if (operand.sizes[0] != rows) {
      raise_error(hk::Errc::invalid_shape, qmm_op, subject,
                  "shape (" + std::to_string(operand.sizes[0]) +
                      ",) is neither per-tensor (1,) nor per-row (M,) or (M, 1) with M = " + std::to_string(rows));
      return false;
    }
    operand.insert_unit_dim(1);
  }
  return true;
}

void delete_packed(PyObject* capsule) {
  delete static_cast<hk::PackedB*>(PyCapsule_GetPointer(capsule, packed_capsule));
}

#ifdef HETKERN_OFFLOAD
void delete_device_packed(PyObject* capsule) {
  delete static_cast<hk::DevicePackedB*>(PyCapsule_GetPointer(capsule, device_packed_capsule));
}
#endif

// pack_b's result as (capsule, shape, dtype name, packed bytes, on the device).
template <class Packed> PyObject* packed_tuple(Packed* packed, const char* name, void (*destroy)(PyObject*)) {
  PyObject* capsule = PyCapsule_New(packed, name, destroy);
  if (!capsule) {
    delete packed;
    return nullptr;
  }
  const hk::TensorDesc& desc = packed->desc();
  PyObject* shape = PyTuple_New(desc.rank());
  for (int d = 0; shape && d < desc.rank(); ++d) PyTuple_SetItem(shape, d, PyLong_FromLongLong(desc.size(d)));
  const std::string type(hk::name_of(desc.dtype()));
  return Py_BuildValue("(NNsLO)", capsule, shape, type.c_str(), static_cast<long long>(packed->packed_bytes()),
                       std::is_same_v<Packed, hk::PackedB> ? Py_False : Py_True);
}

// numpy.matmul's shapes: a vector A is one row, a vector B one column (the output drops them),
// and batch dimensions broadcast through stride 0.
void broadcast_matmul(Operand& a, Operand* b, const hk::TensorDesc* packed, Operand& y) {
  const bool a_vector = a.rank == 1, b_vector = b && b->rank == 1;
  if (a_vector) {
    a.insert_unit_dim(0);
    y.insert_unit_dim(std::max(0, y.rank - (b_vector ? 0 : 1)));
  }
  if (b_vector) {
    b->insert_unit_dim(1);
    y.insert_unit_dim(y.rank);
  }
  const int b_rank = b ? b->rank : packed->rank();
  if (a.rank < 2 || b_rank < 2) return;  // the library names the rank
  const int batch = std::max(a.rank, b_rank) - 2;
  while (a.rank - 2 < batch && a.rank < hk::max_rank) a.insert_unit_dim(0);
  while (b && b->rank - 2 < batch && b->rank < hk::max_rank) b->insert_unit_dim(0);
  const int b_batch = (b ? b->rank : b_rank) - 2;
  for (int i = 0; i < batch && i < a.rank - 2; ++i) {
    const int j = i - (batch - b_batch);
    const std::int64_t nb = j < 0 ? 1 : (b ? b->sizes[j] : packed->size(j));
    if (a.sizes[i] == 1 && nb != 1) a.sizes[i] = nb;
    if (b && nb == 1 && a.sizes[i] != 1) {
      b->sizes[i] = a.sizes[i];
      b->byte_strides[i] = 0;
    }
  }
}

}  // namespace

// qmm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, out, schedule,
// mode): b is an array or pack_b's capsule; mode 0 runs into `out`, mode 1 returns the schedule
// text it would run.
PyObject* py_qmm(PyObject*, PyObject* args) {
  PyObject *a_obj, *sa_obj, *za_obj, *b_obj, *sb_obj, *zb_obj, *sy_obj, *zy_obj, *out_obj;
  const char* schedule_text;
  int mode;
  if (!PyArg_ParseTuple(args, "OOOOOOOOOzi", &a_obj, &sa_obj, &za_obj, &b_obj, &sb_obj, &zb_obj,
                        &sy_obj, &zy_obj, &out_obj, &schedule_text, &mode))
    return nullptr;
  Operand a, b, y, sa, za, sb, zb, sy, zy;
  const hk::PackedB* packed = nullptr;
  if (PyCapsule_IsValid(b_obj, packed_capsule))
    packed = static_cast<const hk::PackedB*>(PyCapsule_GetPointer(b_obj, packed_capsule));
#ifdef HETKERN_OFFLOAD
  const hk::DevicePackedB* device_packed = nullptr;
  if (PyCapsule_IsValid(b_obj, device_packed_capsule))
    device_packed = static_cast<const hk::DevicePackedB*>(PyCapsule_GetPointer(b_obj, device_packed_capsule));
  const hk::TensorDesc* packed_desc = packed ? &packed->desc() : device_packed ? &device_packed->desc() : nullptr;
#else
  const hk::TensorDesc* packed_desc = packed ? &packed->desc() : nullptr;
#endif
  if (!acquire(a_obj, false, qmm_op, "a", a) || (!packed_desc && !acquire(b_obj, false, qmm_op, "b", b)) ||
      !acquire(out_obj, true, qmm_op, "output", y))
    return nullptr;
  Operand* bp = packed_desc ? nullptr : &b;
  const hk::DataType b_type = packed_desc ? packed_desc->dtype() : b.dtype;
  bool has_za, has_zb, has_zy, present;
  const std::int64_t rows = a.rank >= 2 ? a.sizes[a.rank - 2] : 1;  // a vector A is one row
  if (!parameter(sa_obj, hk::DataType::float32, true, rows, "a_scale", sa, present) ||
      !parameter(za_obj, a.dtype, true, rows, "a_zero_point", za, has_za) ||
      !parameter(sb_obj, hk::DataType::float32, false, rows, "b_scale", sb, present) ||
      !parameter(zb_obj, b_type, false, rows, "b_zero_point", zb, has_zb) ||
      !parameter(sy_obj, hk::DataType::float32, true, rows, "y_scale", sy, present) ||
      !parameter(zy_obj, y.dtype, true, rows, "y_zero_point", zy, has_zy))
    return nullptr;
  broadcast_matmul(a, bp, packed_desc, y);
  // Axes shared with a packed B keep their direction (its order is fixed): stage() copies an
  // operand that still walks one of them backwards.
  if (!packed_desc) {
    for (int d = -a.rank; d < -2; ++d) flip_together({{&a, d}, {bp, d}, {&y, d}});
    flip_together({{bp, -1}, {&y, -1}, {&sb, -1}, {&zb, -1}});
    flip_together({{&a, -1}, {bp, -2}});
  }
  flip_together({{&a, -2}, {&y, -2}, {&sa, -2}, {&za, -2}, {&sy, -2}, {&zy, -2}});
  // Every input before staging: the library sees only the copies of staged ones.
  for (const auto& [input, name] : {std::pair<const Operand*, const char*>{&a, "a"}, {bp, "b"}, {&sa, "a_scale"},
                                    {has_za ? &za : nullptr, "a_zero_point"}, {&sb, "b_scale"},
                                    {has_zb ? &zb : nullptr, "b_zero_point"}, {&sy, "y_scale"},
                                    {has_zy ? &zy : nullptr, "y_zero_point"}})
    if (input && !input->staged && !input->on_device && !y.on_device && share_bytes(y, *input))
      return raise_error(hk::Errc::overlap, qmm_op, "output",
                         std::string("overlaps ") + name + " (QuantizedLinearMatMul never runs in place)");
  if (!stage(qmm_op, "a", a) || (bp && !stage(qmm_op, "b", b)) || !stage(qmm_op, "output", y) ||
      !stage(qmm_op, "a_scale", sa) || !stage(qmm_op, "a_zero_point", za) ||
      !stage(qmm_op, "b_scale", sb) || !stage(qmm_op, "b_zero_point", zb) ||
      !stage(qmm_op, "y_scale", sy) || !stage(qmm_op, "y_zero_point", zy))
    return nullptr;
  const int on_device = device_call(qmm_op, {&a, bp, &y});
  if (on_device < 0) return nullptr;
  auto optional = [](bool has, const Operand& o) {
    return has ? std::optional<hk::ConstTensor>(o.const_tensor()) : std::nullopt;
  };
  std::string chosen;
  const Failure failure = run_unlocked([&] {
    const hk::Schedule schedule = schedule_text ? hk::Schedule::parse(schedule_text) : hk::Schedule{};
    if (on_device) {
#ifdef HETKERN_OFFLOAD
      if (mode == 1 || packed)
        throw hk::Error(hk::Errc::invalid_parameter, qmm_op, "b",
                        "device tensors take neither a B packed from a host array nor default_schedule "
                        "(it answers for host tensors only)");
      wait_for_producers(qmm_op);
      hk::DeviceBuffer a_buffer = hk::DeviceBuffer::borrow(a.data, a.span_bytes());
      hk::DeviceBuffer b_buffer =
          device_packed ? hk::DeviceBuffer() : hk::DeviceBuffer::borrow(b.data, b.span_bytes());
      hk::DeviceBuffer y_buffer = hk::DeviceBuffer::borrow(y.data, y.span_bytes());
      const hk::DeviceQuantizedMatMulArgs device_args{
          {a.desc(), &a_buffer, 0},
          sa.const_tensor(),
          optional(has_za, za),
          device_packed ? hk::DeviceConstTensor{} : hk::DeviceConstTensor{b.desc(), &b_buffer, 0},
          sb.const_tensor(),
          optional(has_zb, zb),
          sy.const_tensor(),
          optional(has_zy, zy),
          device_packed};
      hk::quantized_linear_matmul(device_args, hk::DeviceTensor{y.desc(), &y_buffer, 0}, schedule);
#endif
      return;
    }
#ifdef HETKERN_OFFLOAD
    if (device_packed)
      throw hk::Error(hk::Errc::invalid_parameter, qmm_op, "b",
                      "B packed from a CUDA tensor takes CUDA tensors (a and the output on its GPU)");
#endif
    hk::QuantizedMatMulArgs host_args{a.const_tensor(), sa.const_tensor(), optional(has_za, za),
                                      packed ? hk::ConstTensor{} : b.const_tensor(),
                                      sb.const_tensor(), optional(has_zb, zb),
                                      sy.const_tensor(), optional(has_zy, zy), packed};
    if (mode == 1) {
      chosen = hk::default_schedule(host_args, y.tensor(), schedule).to_string();
      return;
    }
    hk::quantized_linear_matmul(host_args, y.tensor(), schedule);
    unstage(y);
  });
  if (failure.kind != Failure::none) return failure.raise();
  if (mode == 1) return PyUnicode_FromStringAndSize(chosen.data(), Py_ssize_t(chosen.size()));
  Py_RETURN_NONE;
}

// pack_b(b) -> (capsule, shape, dtype name, packed bytes)
PyObject* py_pack_b(PyObject*, PyObject* args) {
  PyObject* b_obj;
  if (!PyArg_ParseTuple(args, "O", &b_obj)) return nullptr;
  Operand b;
  if (!acquire(b_obj, false, "pack_b", "b", b) || !stage("pack_b", "b", b)) return nullptr;
  if (b.on_device) {
#ifdef HETKERN_OFFLOAD
    const int on_device = device_call("pack_b", {&b});
    if (on_device < 0) return nullptr;
    hk::DevicePackedB* packed = nullptr;
    const Failure failure = run_unlocked([&] {
      wait_for_producers("pack_b");
      hk::DeviceBuffer buffer = hk::DeviceBuffer::borrow(b.data, b.span_bytes());
      packed = new hk::DevicePackedB(hk::pack_b(hk::DeviceConstTensor{b.desc(), &buffer, 0}));
    });
    if (failure.kind != Failure::none) return failure.raise();
    return packed_tuple(packed, device_packed_capsule, delete_device_packed);
#endif
  }
  hk::PackedB* packed = nullptr;
  const Failure failure = run_unlocked([&] { packed = new hk::PackedB(hk::pack_b(b.const_tensor())); });
  if (failure.kind != Failure::none) return failure.raise();
  return packed_tuple(packed, packed_capsule, delete_packed);
}

}  // namespace hkpy

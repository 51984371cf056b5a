// Array arguments from the buffer protocol and DLPack capsules (operand.hpp).
#include "python/ext/operand.hpp"

#include <dlpack/dlpack.h>

#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "algorithms/byte_layout.hpp"
#include "hetkern/dtype.hpp"
#include "python/ext/errors.hpp"

namespace hkpy {
namespace {

constexpr int max_operand_rank = hk::max_rank + 2;

// The type's name as hetkern spells it, from a struct-module format ("<f", "B", "=q", ...).
std::string format_type_name(const char* format, Py_ssize_t item) {
  std::string f = format ? format : "B";
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.erase(0, 1);
  else if (!f.empty() && (f[0] == '>' || f[0] == '!')) return "big-endian " + format_type_name(f.c_str() + 1, item);
  const std::string bits = std::to_string(item * 8);
  // Text and objects: numpy's "3w" (str), "5s" (bytes), "O"; complex numbers "Zf", "Zd".
  const std::size_t count_end = f.find_first_not_of("0123456789");
  const std::string kind = count_end == std::string::npos ? f : f.substr(count_end);
  if (kind == "w") return "str";
  if (kind == "s") return "bytes";
  if (kind == "O") return "object";
  if (kind.size() == 2 && kind[0] == 'Z') return "complex" + bits;
  if (f.size() != 1) return "'" + f + "'";
  switch (f[0]) {
    case 'e': case 'f': case 'd': return "float" + bits;
    case 'b': case 'h': case 'i': case 'l': case 'q': return "int" + bits;
    case 'B': case 'H': case 'I': case 'L': case 'Q': return "uint" + bits;
    case '?': return "bool";
    case 'Z': return "complex";
    default: return "'" + f + "'";
  }
}

std::string dlpack_type_name(DLDataType t) {
  if (t.lanes != 1) return std::to_string(t.lanes) + "-lane vectors";
  const std::string bits = std::to_string(t.bits);
  switch (t.code) {
    case kDLInt: return "int" + bits;
    case kDLUInt: return "uint" + bits;
    case kDLFloat: return "float" + bits;
    case kDLBfloat: return "bfloat" + bits;
    case kDLComplex: return "complex" + bits;
    default: return "DLPack type code " + std::to_string(t.code);
  }
}

bool set_type(const std::string& name, std::size_t item, const char* op, const char* subject,
              Operand& operand) {
  const auto type = hk::parse_data_type(name);
  if (!type || hk::name_of(*type) != name || hk::size_of(*type) != item) {
    raise_error(hk::Errc::invalid_type, op, subject, name + " is not a type hetkern computes with");
    return false;
  }
  operand.dtype = *type;
  return true;
}

// str(object.dtype), or "" where it has none.
std::string dtype_text(PyObject* object) {
  PyObject* dtype = PyObject_GetAttrString(object, "dtype");
  PyObject* text = dtype ? PyObject_Str(dtype) : nullptr;
  Py_ssize_t size = 0;
  const char* utf8 = text ? PyUnicode_AsUTF8AndSize(text, &size) : nullptr;
  std::string result = utf8 ? std::string(utf8, std::size_t(size)) : "";
  Py_XDECREF(text);
  Py_XDECREF(dtype);
  PyErr_Clear();
  return result;
}

bool from_buffer(PyObject* object, const char* op, const char* subject, Operand& operand) {
  if (PyObject_GetBuffer(object, &operand.buffer, operand.output ? PyBUF_RECORDS : PyBUF_RECORDS_RO) != 0) {
    // numpy refuses a writable view of a read-only array with ValueError, others with BufferError;
    // numpy arrays of a type the buffer protocol cannot describe (datetime64, ...) with ValueError.
    if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError)) return false;
    PyErr_Clear();
    const std::string dtype = dtype_text(object);
    if (!dtype.empty() && !hk::parse_data_type(dtype)) {
      raise_error(hk::Errc::invalid_type, op, subject, dtype + " is not a type hetkern computes with");
      return false;
    }
    raise_error(hk::Errc::invalid_parameter, op, subject,
                operand.output ? "is not a writable array" : "cannot be read as an array");
    return false;
  }
  operand.holds_buffer = true;
  const Py_buffer& b = operand.buffer;
  if (b.ndim > hk::max_rank) {
    raise_error(hk::Errc::invalid_shape, op, subject,
                "rank " + std::to_string(b.ndim) + " exceeds " + std::to_string(hk::max_rank));
    return false;
  }
  if (!set_type(format_type_name(b.format, b.itemsize), std::size_t(b.itemsize), op, subject, operand))
    return false;
  operand.rank = b.ndim;
  std::int64_t packed = b.itemsize;
  for (int d = b.ndim - 1; d >= 0; --d) {
    operand.sizes[d] = b.shape[d];
    operand.byte_strides[d] = b.strides ? b.strides[d] : packed;
    packed *= b.shape[d];
  }
  operand.data = static_cast<char*>(b.buf);
  return true;
}

bool from_dlpack(PyObject* capsule, const char* op, const char* subject, Operand& operand) {
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (!managed) return false;
  const DLTensor& t = managed->dl_tensor;
  switch (t.device.device_type) {
    case kDLCPU: case kDLCUDAHost: break;
    case kDLCUDA: case kDLCUDAManaged: operand.on_device = true; break;
    default:
      raise_error(hk::Errc::invalid_parameter, op, subject,
                  "DLPack device type " + std::to_string(t.device.device_type) +
                      " is neither the CPU nor CUDA");
      return false;
  }
  operand.device_id = t.device.device_id;
  if (t.ndim < 0 || t.ndim > hk::max_rank) {
    raise_error(hk::Errc::invalid_shape, op, subject,
                "rank " + std::to_string(t.ndim) + " exceeds " + std::to_string(hk::max_rank));
    return false;
  }
  const std::size_t item = (std::size_t(t.dtype.bits) + 7) / 8;
  if (!set_type(dlpack_type_name(t.dtype), item, op, subject, operand)) return false;
  operand.rank = t.ndim;
  std::int64_t packed = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    operand.sizes[d] = t.shape[d];
    operand.byte_strides[d] = (t.strides ? t.strides[d] : packed) * std::int64_t(item);
    packed *= t.shape[d];
  }
  operand.data = static_cast<char*>(t.data) + t.byte_offset;
  return true;
}

void copy_strided(const char* src, const std::int64_t* src_strides, char* dst,
                  const std::int64_t* dst_strides, const std::int64_t* sizes, int rank,
                  std::size_t item) {
  if (rank == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  for (std::int64_t i = 0; i < sizes[0]; ++i)
    copy_strided(src + i * src_strides[0], src_strides + 1, dst + i * dst_strides[0],
                 dst_strides + 1, sizes + 1, rank - 1, item);
}

hk::detail::ByteLayout byte_layout(const Operand& o) {
  return {std::int64_t(reinterpret_cast<std::uintptr_t>(o.data)), o.sizes.data(), o.byte_strides.data(), o.rank,
          std::int64_t(o.item_size())};
}

std::string dims_text(const std::int64_t* v, int n) {
  std::string s = "{";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace

Operand::~Operand() {
  if (holds_buffer) PyBuffer_Release(&buffer);
}

std::size_t Operand::item_size() const { return hk::size_of(dtype); }

hk::TensorDesc Operand::desc() const {
  std::array<std::int64_t, max_operand_rank> strides{};
  const auto item = std::int64_t(item_size());
  for (int d = 0; d < rank; ++d) strides[d] = byte_strides[d] / item;
  return hk::TensorDesc(dtype, std::span(sizes.data(), std::size_t(rank)),
                        std::span(strides.data(), std::size_t(rank)));
}

std::size_t Operand::span_bytes() const {
  std::int64_t last = 0;
  for (int d = 0; d < rank; ++d) last += (sizes[d] - 1) * byte_strides[d];
  return std::size_t(last) + item_size();
}

void Operand::insert_unit_dim(int at) {
  for (int d = rank; d > at; --d) {
    sizes[d] = sizes[d - 1];
    byte_strides[d] = byte_strides[d - 1];
  }
  sizes[at] = 1;
  byte_strides[at] = 0;
  ++rank;
}

bool acquire(PyObject* object, bool output, const char* op, const char* subject, Operand& operand) {
  operand.output = output;
  bool ok;
  if (PyObject_CheckBuffer(object)) {
    ok = from_buffer(object, op, subject, operand);
  } else if (PyCapsule_IsValid(object, "dltensor")) {
    ok = from_dlpack(object, op, subject, operand);
  } else {
    PyErr_Format(PyExc_TypeError, "%s: %s: expected an array (buffer protocol or DLPack), got %R",
                 op, subject, reinterpret_cast<PyObject*>(Py_TYPE(object)));
    return false;
  }
  if (!ok) return false;
  // A dimension of size 1 is never stepped along: stride 0 keeps its sign out of the way.
  for (int d = 0; d < operand.rank; ++d)
    if (operand.sizes[d] == 1) operand.byte_strides[d] = 0;
  return true;
}

bool scalar_operand(PyObject* number, hk::DataType dtype, const char* op, const char* subject,
                    Operand& operand) {
  operand.dtype = dtype;
  operand.rank = 1;
  operand.sizes[0] = 1;
  operand.byte_strides[0] = 0;
  operand.staged = std::make_unique<std::byte[]>(8);
  operand.data = reinterpret_cast<char*>(operand.staged.get());
  if (dtype == hk::DataType::float32) {
    const double value = PyFloat_AsDouble(number);
    if (value == -1.0 && PyErr_Occurred()) return false;
    const auto f = float(value);
    // The library sees the float32: name the number given where rounding changed its meaning.
    if (value > 0 && std::isfinite(value) && (f == 0 || std::isinf(f))) {
      char text[32];
      const auto end = std::to_chars(text, text + sizeof text, value).ptr;  // the shortest, as Python prints it
      raise_error(hk::Errc::invalid_parameter, op, subject,
                  std::string(text, end) + (f == 0 ? " rounds to 0 as a float32" : " overflows float32") +
                      " (scales are positive finite float32 numbers)");
      return false;
    }
    std::memcpy(operand.data, &f, sizeof f);
    return true;
  }
  if (dtype == hk::DataType::int8 || dtype == hk::DataType::uint8) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (value == -1 && PyErr_Occurred()) return false;
    const bool is_signed = dtype == hk::DataType::int8;
    if (overflow || value < (is_signed ? -128 : 0) || value > (is_signed ? 127 : 255)) {
      raise_error(hk::Errc::invalid_parameter, op, subject,
                  (overflow ? std::string(overflow > 0 ? "a number above 2^63" : "a number below -2^63")
                            : std::to_string(value)) +
                      " does not fit " + std::string(hk::name_of(dtype)));
      return false;
    }
    const auto byte = static_cast<unsigned char>(value);
    std::memcpy(operand.data, &byte, 1);
    return true;
  }
  raise_error(hk::Errc::invalid_type, op, subject,
              "a number cannot stand for a " + std::string(hk::name_of(dtype)) + " tensor");
  return false;
}

bool flip_together(std::initializer_list<Axis> members) {
  bool out_neg = false, out_pos = false, in_neg = false, in_pos = false;
  auto resolve = [](const Axis& a) {
    if (!a.operand) return -1;
    const int d = a.dim < 0 ? a.operand->rank + a.dim : a.dim;
    return d >= 0 && d < a.operand->rank ? d : -1;
  };
  for (const Axis& a : members) {
    const int d = resolve(a);
    if (d < 0) continue;
    if (a.operand->sizes[d] < 1) return false;  // refused by the library before anything runs
    const std::int64_t s = a.operand->byte_strides[d];
    (a.operand->output ? (s < 0 ? out_neg : out_pos) : (s < 0 ? in_neg : in_pos)) |= s != 0;
  }
  const bool flip = out_neg ? !out_pos : (!out_pos && in_neg && !in_pos);
  if (!flip) return false;
  for (const Axis& a : members) {
    const int d = resolve(a);
    if (d < 0) continue;
    Operand& o = *a.operand;
    o.data += (o.sizes[d] - 1) * o.byte_strides[d];
    o.byte_strides[d] = -o.byte_strides[d];
  }
  return true;
}

bool axis_argument(PyObject* object, const char* op, int rank, int& axis) {
  PyObject* index = PyNumber_Index(object);
  if (!index) return false;
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (value == -1 && PyErr_Occurred()) return false;
  if (!overflow && value >= INT_MIN && value <= INT_MAX) {
    // Out of range, it goes to the library, whose checks come in their order.
    axis = int(value < 0 && value >= -rank ? value + rank : value);
    return true;
  }
  // Past int it is the library's out-of-range error, not an overflow.
  raise_error(hk::Errc::invalid_parameter, op, "axis",
              (overflow ? std::string(overflow > 0 ? "a number above 2^63" : "a number below -2^63")
                        : std::to_string(value)) +
                  " is out of range for a rank-" + std::to_string(rank) + " tensor (" + std::to_string(-rank) +
                  " to " + std::to_string(rank - 1) + ", negative counting from the last)");
  return false;
}

bool share_bytes(const Operand& a, const Operand& b) {
  for (const Operand* o : {&a, &b})
    for (int d = 0; d < o->rank; ++d)
      if (o->sizes[d] < 1) return false;  // refused by the library before anything runs
  return hk::detail::may_share_bytes(byte_layout(a), byte_layout(b));
}

bool same_tensor(const Operand& a, const Operand& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.sizes[d] != b.sizes[d] || (a.sizes[d] > 1 && a.byte_strides[d] != b.byte_strides[d])) return false;
  return true;
}

bool stage(const char* op, const char* subject, Operand& operand) {
  const auto item = std::int64_t(operand.item_size());
  bool needed = reinterpret_cast<std::uintptr_t>(operand.data) % std::uintptr_t(item) != 0;
  std::int64_t count = 1;
  for (int d = 0; d < operand.rank; ++d) {
    if (operand.sizes[d] < 1) return true;  // refused by the library before anything runs
    needed = needed || operand.byte_strides[d] < 0 || operand.byte_strides[d] % item != 0;
    if (__builtin_mul_overflow(count, operand.sizes[d], &count)) return true;
  }
  if (!needed || operand.staged) return true;
  // The library checks the staged copy, not the caller's layout, so an output whose elements
  // would share bytes is refused here, as the library refuses it unstaged.
  if (const int d = operand.output ? hk::detail::overlapping_dimension(byte_layout(operand)) : -1; d >= 0) {
    raise_error(hk::Errc::invalid_stride, op, subject,
                "byte strides " + dims_text(operand.byte_strides.data(), operand.rank) + " with sizes " +
                    dims_text(operand.sizes.data(), operand.rank) +
                    " can make elements overlap: each stride must step over everything the smaller strides "
                    "reach (dimension " + std::to_string(d) + ")");
    return false;
  }
  if (operand.on_device) {
    raise_error(hk::Errc::invalid_stride, op, subject,
                "a device tensor's strides must be non-negative multiples of its element size");
    return false;
  }
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(count, item, &bytes)) return true;  // the library reports the size
  try {
    operand.staged.reset(new std::byte[std::size_t(bytes)]);
  } catch (const std::bad_alloc&) {
    PyErr_Format(PyExc_MemoryError, "%s: %s: no memory for the %lld-byte copy its layout needs", op, subject,
                 static_cast<long long>(bytes));
    return false;
  }
  std::array<std::int64_t, max_operand_rank> packed{};
  std::int64_t step = item;
  for (int d = operand.rank - 1; d >= 0; --d) {
    packed[d] = step;
    step *= operand.sizes[d];
  }
  auto* dst = reinterpret_cast<char*>(operand.staged.get());
  if (operand.output) {
    operand.caller_data = operand.data;
    operand.caller_strides = operand.byte_strides;
  } else {
    copy_strided(operand.data, operand.byte_strides.data(), dst, packed.data(), operand.sizes.data(),
                 operand.rank, std::size_t(item));
  }
  operand.data = dst;
  operand.byte_strides = packed;
  return true;
}

void unstage(const Operand& operand) {
  if (!operand.caller_data) return;
  copy_strided(operand.data, operand.byte_strides.data(), operand.caller_data,
               operand.caller_strides.data(), operand.sizes.data(), operand.rank, operand.item_size());
}

}  // namespace hkpy

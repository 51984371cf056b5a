// One array argument of a call as the library sees it, borrowed from an object that exports the
// buffer protocol (numpy) or from a DLPack capsule (PyTorch, CuPy, JAX), and the layout repairs
// that keep the library's rules (non-negative element strides) without copying where possible.
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include "hetkern/tensor.hpp"

namespace hkpy {

struct Operand {
  hk::DataType dtype = hk::DataType::float32;
  int rank = 0;
  std::array<std::int64_t, hk::max_rank + 2> sizes{};
  std::array<std::int64_t, hk::max_rank + 2> byte_strides{};
  char* data = nullptr;
  bool output = false;
  bool on_device = false;  // CUDA memory: never staged, read or written by the host
  int device_id = 0;

  // A packed host copy that stands in for the caller's memory when its layout cannot be given
  // to the library (negative strides that no flip removes, byte strides or an address that are
  // not a multiple of the element size): inputs are copied in before the call, outputs are
  // copied back after a successful one.
  std::unique_ptr<std::byte[]> staged;
  char* caller_data = nullptr;
  std::array<std::int64_t, hk::max_rank + 2> caller_strides{};

  Py_buffer buffer{};
  bool holds_buffer = false;

  Operand() = default;
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;
  ~Operand();  // releases the buffer: destroy with the GIL held

  std::size_t item_size() const;
  hk::TensorDesc desc() const;
  hk::ConstTensor const_tensor() const { return {desc(), data}; }
  hk::Tensor tensor() const { return {desc(), data}; }
  /// Bytes from `data` to the end of the last element (strides non-negative).
  std::size_t span_bytes() const;
  /// Inserts a dimension of size 1 at position `at` (acquire() leaves room for two).
  void insert_unit_dim(int at);
};

/// Fills `operand` from `object` (buffer protocol or "dltensor" capsule) for operator `op`, where
/// `subject` names the argument in errors. Returns false with a Python exception set.
bool acquire(PyObject* object, bool output, const char* op, const char* subject, Operand& operand);

/// An axis argument of a tensor of `rank`: any Python integer (TypeError for anything else),
/// one from -rank to -1 counted from the end; others left for the library to refuse. Returns
/// false with a Python exception set where it is out of range and past int.
bool axis_argument(PyObject* object, const char* op, int rank, int& axis);

/// A one-element host operand holding `value` converted to `dtype` (scales and zero points given
/// as Python numbers). Returns false with a Python exception set when the value does not fit.
bool scalar_operand(PyObject* number, hk::DataType dtype, const char* op, const char* subject,
                    Operand& operand);

/// One dimension of one operand; dim counts from the front, a negative dim from the back, and
/// an operand of null or too small a rank is not a member.
struct Axis {
  Operand* operand;
  int dim;
};

/// Dimensions that index the same positions in every member (a scan's input and output along
/// one dimension, the M of A and of the output, ...). When reversing all of them together turns
/// the outputs' strides positive (or, without outputs, every negative stride), they are
/// reversed: the result is the same, read and written in the other order. Returns whether they
/// were reversed.
bool flip_together(std::initializer_list<Axis> members);

/// Whether host operands `a` and `b` share a byte of the caller's memory, by their byte strides:
/// checked before stage(), whose copies the library's own overlap check cannot see through.
bool share_bytes(const Operand& a, const Operand& b);
/// Whether `a` and `b` are the same tensor: address, type, sizes and strides (in place).
bool same_tensor(const Operand& a, const Operand& b);

/// After the flips: stages the operand when the library cannot take its layout as it is.
/// Returns false with a Python exception set (a device tensor cannot be staged).
bool stage(const char* op, const char* subject, Operand& operand);
/// Copies a staged output's result back to the caller's memory (no GIL needed).
void unstage(const Operand& operand);

}  // namespace hkpy

// hetkern.Error from the extension, and running library calls with the GIL released.
#pragma once

#include <Python.h>

#include <exception>
#include <new>
#include <string>

#include "hetkern/error.hpp"

namespace hkpy {

/// Registers the Python classes raised for hk::Error (hetkern.Error) and for type errors
/// (hetkern.DTypeError, an Error and a TypeError). Borrowed references are kept.
void set_error_classes(PyObject* error, PyObject* dtype_error);

/// "invalid_type", "invalid_shape", ... as the C++ enumerators are spelled.
const char* code_name(hk::Errc code);

/// Raises hetkern.Error (hetkern.DTypeError for invalid_type) and returns nullptr.
PyObject* raise_error(hk::Errc code, const std::string& op, const std::string& subject,
                      const std::string& rule);

/// What a call run without the GIL threw, kept until the GIL is back.
struct Failure {
  enum Kind { none, error, no_memory, other } kind = none;
  hk::Errc code = hk::Errc::invalid_parameter;
  std::string op, subject, rule, what;

  /// Raises the matching Python exception (GIL held) and returns nullptr.
  PyObject* raise() const;
};

/// Runs `body` with the GIL released, catching what it throws into the returned Failure.
template <class Body>
Failure run_unlocked(Body&& body) {
  Failure failure;
  Py_BEGIN_ALLOW_THREADS
  try {
    body();
  } catch (const hk::Error& e) {
    failure = {Failure::error, e.code(), e.op(), e.subject(), e.rule(), e.what()};
  } catch (const std::bad_alloc&) {
    failure.kind = Failure::no_memory;
  } catch (const std::exception& e) {
    failure.kind = Failure::other;
    failure.what = e.what();
  }
  Py_END_ALLOW_THREADS
  return failure;
}

}  // namespace hkpy

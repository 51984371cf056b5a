// hetkern.Error from the extension (errors.hpp).
#include "python/ext/errors.hpp"

namespace hkpy {
namespace {
PyObject* error_class = nullptr;
PyObject* dtype_error_class = nullptr;
}  // namespace

void set_error_classes(PyObject* error, PyObject* dtype_error) {
  Py_XINCREF(error);
  Py_XINCREF(dtype_error);
  error_class = error;
  dtype_error_class = dtype_error;
}

const char* code_name(hk::Errc code) {
  switch (code) {
    case hk::Errc::invalid_type: return "invalid_type";
    case hk::Errc::invalid_shape: return "invalid_shape";
    case hk::Errc::invalid_stride: return "invalid_stride";
    case hk::Errc::invalid_parameter: return "invalid_parameter";
    case hk::Errc::overlap: return "overlap";
    case hk::Errc::invalid_schedule: return "invalid_schedule";
    case hk::Errc::invalid_file: return "invalid_file";
    case hk::Errc::unavailable: return "unavailable";
  }
  return "error";
}

PyObject* raise_error(hk::Errc code, const std::string& op, const std::string& subject,
                      const std::string& rule) {
  PyObject* cls = code == hk::Errc::invalid_type ? dtype_error_class : error_class;
  if (!cls) cls = code == hk::Errc::invalid_type ? PyExc_TypeError : PyExc_ValueError;
  const std::string message = op + ": " + subject + ": " + rule;
  PyObject* exc = cls == PyExc_TypeError || cls == PyExc_ValueError
                      ? PyObject_CallFunction(cls, "s", message.c_str())
                      : PyObject_CallFunction(cls, "sssss", message.c_str(), code_name(code),
                                              op.c_str(), subject.c_str(), rule.c_str());
  if (exc) {
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
  }
  return nullptr;
}

PyObject* Failure::raise() const {
  switch (kind) {
    case none: break;
    case error: return raise_error(code, op, subject, rule);
    case no_memory:
      PyErr_SetString(PyExc_MemoryError, "hetkern: not enough memory for this call (its packed operands or buffers)");
      return nullptr;
    case other: PyErr_SetString(PyExc_RuntimeError, what.c_str()); return nullptr;
  }
  PyErr_SetString(PyExc_SystemError, "hetkern: no failure to raise");
  return nullptr;
}

}  // namespace hkpy

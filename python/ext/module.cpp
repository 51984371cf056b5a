// The _hetkern extension module: CPython's stable ABI (Py_LIMITED_API 3.11), so that one build
// imports into every Python from 3.11 on (docs/python.md says why).
#include <Python.h>

#include "python/ext/calls.hpp"
#include "python/ext/device_glue.hpp"
#include "python/ext/errors.hpp"

namespace {

PyObject* py_set_error_classes(PyObject*, PyObject* args) {
  PyObject *error, *dtype_error;
  if (!PyArg_ParseTuple(args, "OO", &error, &dtype_error)) return nullptr;
  hkpy::set_error_classes(error, dtype_error);
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"set_error_classes", py_set_error_classes, METH_VARARGS, "set_error_classes(Error, DTypeError)"},
    {"cumulative", hkpy::py_cumulative, METH_VARARGS,
     "cumulative(product, x, out, axis, reverse, exclusive, schedule, mode)"},
    {"qmm", hkpy::py_qmm, METH_VARARGS,
     "qmm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, out, schedule, mode)"},
    {"pack_b", hkpy::py_pack_b, METH_VARARGS, "pack_b(b) -> (capsule, shape, dtype, packed_bytes)"},
    {"empty", hkpy::py_empty, METH_VARARGS, "empty(like_capsule, shape, dtype) -> DLPack capsule"},
    {"schedule_parse", hkpy::py_schedule_parse, METH_VARARGS, "schedule_parse(text) -> (text, strategy, params)"},
    {"info", hkpy::py_info, METH_NOARGS, "info() -> dict"},
    {"devices", hkpy::py_devices, METH_NOARGS, "devices() -> list of dicts"},
    {"tune", hkpy::py_tune, METH_VARARGS,
     "tune(op, types, shape, axis, reverse, exclusive, budget, exhaustive) -> dict"},
    {"transfer_counters", hkpy::py_transfer_counters, METH_VARARGS, "transfer_counters(reset=False) -> dict"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hetkern", "hetkern's kernels; use the hetkern package.", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__hetkern() {
  PyObject* m = PyModule_Create(&module);
#ifdef HETKERN_OFFLOAD
  if (m && PyModule_AddIntConstant(m, "offload", 1) != 0) Py_CLEAR(m);
#else
  if (m && PyModule_AddIntConstant(m, "offload", 0) != 0) Py_CLEAR(m);
#endif
  return m;
}

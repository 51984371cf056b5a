// The functions of the _hetkern extension module (python/hetkern wraps them in numpy's
// conventions); each returns a new reference, or nullptr with a Python exception set.
#pragma once

#include <Python.h>

namespace hkpy {

PyObject* py_cumulative(PyObject* self, PyObject* args);
PyObject* py_qmm(PyObject* self, PyObject* args);
PyObject* py_pack_b(PyObject* self, PyObject* args);
PyObject* py_schedule_parse(PyObject* self, PyObject* args);
PyObject* py_info(PyObject* self, PyObject* args);
PyObject* py_devices(PyObject* self, PyObject* args);
PyObject* py_tune(PyObject* self, PyObject* args);
PyObject* py_transfer_counters(PyObject* self, PyObject* args);

}  // namespace hkpy

// _hetkern's descriptive functions: schedules, info, devices, tuning and transfer counters.
#include <string>
#include <vector>

#include "hetkern/info.hpp"
#include "hetkern/schedule.hpp"
#include "hetkern/topology.hpp"
#include "hetkern/tuning.hpp"
#include "python/ext/calls.hpp"
#include "python/ext/errors.hpp"
#include "python/ext/operand.hpp"

#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

namespace hkpy {
namespace {

PyObject* text(const std::string& s) { return PyUnicode_FromStringAndSize(s.data(), Py_ssize_t(s.size())); }

// Sets d[key] = value and drops the reference to value; false when anything failed.
bool put(PyObject* d, const char* key, PyObject* value) {
  if (!value) return false;
  const int status = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return status == 0;
}

PyObject* string_list(const std::vector<std::string>& items) {
  PyObject* list = PyList_New(Py_ssize_t(items.size()));
  for (std::size_t i = 0; list && i < items.size(); ++i) PyList_SetItem(list, Py_ssize_t(i), text(items[i]));
  return list;
}

PyObject* record_dict(const hk::TuningRecord& r, bool stored) {
  PyObject* d = PyDict_New();
  PyObject* shape = PyList_New(Py_ssize_t(r.shape.size()));
  for (std::size_t i = 0; shape && i < r.shape.size(); ++i)
    PyList_SetItem(shape, Py_ssize_t(i), PyLong_FromLongLong(r.shape[i]));
  if (d && put(d, "op", text(r.op)) && put(d, "dtype", text(r.dtype)) && put(d, "shape", shape) &&
      put(d, "params", text(r.params)) && put(d, "schedule", text(r.schedule)) &&
      put(d, "median_ns", PyFloat_FromDouble(r.median_ns)) &&
      put(d, "default_ns", PyFloat_FromDouble(r.default_ns)) &&
      put(d, "candidates", PyLong_FromLongLong(r.candidates)) && put(d, "stored", PyBool_FromLong(stored)))
    return d;
  Py_XDECREF(d);
  return nullptr;
}

}  // namespace

// schedule_parse(text) -> (canonical text, strategy, ((key, value), ...))
PyObject* py_schedule_parse(PyObject*, PyObject* args) {
  const char* source;
  if (!PyArg_ParseTuple(args, "s", &source)) return nullptr;
  hk::Schedule schedule;
  try {
    schedule = hk::Schedule::parse(source);
  } catch (const hk::Error& e) {
    return raise_error(e.code(), e.op(), e.subject(), e.rule());
  }
  PyObject* params = PyTuple_New(Py_ssize_t(schedule.params().size()));
  for (std::size_t i = 0; params && i < schedule.params().size(); ++i)
    PyTuple_SetItem(params, Py_ssize_t(i),
                    Py_BuildValue("(ss)", schedule.params()[i].key.c_str(), schedule.params()[i].value.c_str()));
  return Py_BuildValue("(NsN)", text(schedule.to_string()), schedule.strategy().c_str(), params);
}

PyObject* py_info(PyObject*, PyObject*) {
  const hk::BuildInfo build = hk::build_info();
  const hk::TopologyInfo topology = hk::topology_info();
  PyObject* d = PyDict_New();
  if (d && put(d, "version", text(build.version)) && put(d, "compiler", text(build.compiler)) &&
      put(d, "offload", PyBool_FromLong(build.offload)) && put(d, "openmp", PyBool_FromLong(build.openmp)) &&
      put(d, "isa", text(hk::name_of(hk::active_isa()))) &&
      put(d, "detected_isa", text(hk::name_of(hk::detected_isa()))) &&
      put(d, "cpu_features", string_list(hk::cpu_features())) &&
      put(d, "default_threads", PyLong_FromLong(hk::default_threads())) &&
      put(d, "cores", PyLong_FromLong(topology.cores)) && put(d, "pus", PyLong_FromLong(topology.pus)) &&
      put(d, "numa_nodes", PyLong_FromLong(topology.numa_nodes)) &&
      put(d, "tuning_db", text(hk::tuning_db_path())) &&
      put(d, "fingerprint", text(hk::machine_fingerprint())))
    return d;
  Py_XDECREF(d);
  return nullptr;
}

// devices() -> [{"kind": "cpu", ...}, {"kind": "cuda", ...}]: where hetkern runs.
PyObject* py_devices(PyObject*, PyObject*) {
  PyObject* list = PyList_New(0);
  PyObject* cpu = PyDict_New();
  if (!list || !cpu || !put(cpu, "kind", text("cpu")) || !put(cpu, "isa", text(hk::name_of(hk::active_isa()))) ||
      !put(cpu, "threads", PyLong_FromLong(hk::default_threads())) || PyList_Append(list, cpu) != 0) {
    Py_XDECREF(cpu);
    Py_XDECREF(list);
    return nullptr;
  }
  Py_DECREF(cpu);
#ifdef HETKERN_OFFLOAD
  if (!hk::offload_on_host()) {
    PyObject* gpu = PyDict_New();
    if (!gpu || !put(gpu, "kind", text("cuda")) || !put(gpu, "openmp_device", PyLong_FromLong(hk::offload_device())) ||
        !put(gpu, "team_memory_bytes", PyLong_FromLong(hk::gpu_team_memory_bytes())) ||
        PyList_Append(list, gpu) != 0) {
      Py_XDECREF(gpu);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(gpu);
  }
#endif
  return list;
}

// tune(op, types, shape, axis, reverse, exclusive, budget_seconds, exhaustive) -> record dict
PyObject* py_tune(PyObject*, PyObject* args) {
  const char* op_name;
  PyObject *types_obj, *shape_obj, *axis_obj;
  int reverse, exclusive, exhaustive;
  double budget;
  if (!PyArg_ParseTuple(args, "sOOOppdp", &op_name, &types_obj, &shape_obj, &axis_obj, &reverse, &exclusive,
                        &budget, &exhaustive))
    return nullptr;
  hk::TuneProblem problem;
  const std::string name = op_name;
  if (name == "cumulative_sum") problem.op = hk::Operator::cumulative_sum;
  else if (name == "cumulative_product") problem.op = hk::Operator::cumulative_product;
  else if (name == "quantized_linear_matmul") problem.op = hk::Operator::quantized_linear_matmul;
  else return raise_error(hk::Errc::invalid_parameter, "tune", "op", name + " is not an operator");
  PyObject* types = PySequence_Tuple(types_obj);
  PyObject* shape = types ? PySequence_Tuple(shape_obj) : nullptr;
  for (Py_ssize_t i = 0; shape && i < PyTuple_Size(types); ++i) {
    const char* t = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(types, i), nullptr);
    const auto type = t ? hk::parse_data_type(t) : std::nullopt;
    if (!type) {
      Py_DECREF(types);
      Py_DECREF(shape);
      return t ? raise_error(hk::Errc::invalid_type, "tune", "dtype", std::string(t) + " is unknown") : nullptr;
    }
    problem.types.push_back(*type);
  }
  for (Py_ssize_t i = 0; shape && i < PyTuple_Size(shape); ++i)
    problem.shape.push_back(PyLong_AsLongLong(PyTuple_GetItem(shape, i)));
  Py_XDECREF(types);
  Py_XDECREF(shape);
  if (!shape || PyErr_Occurred()) return nullptr;
  int axis;
  if (!axis_argument(axis_obj, op_name, int(problem.shape.size()), axis)) return nullptr;
  problem.options = {axis, reverse ? hk::Direction::decreasing : hk::Direction::increasing, exclusive != 0};
  hk::TuneOptions options;
  options.budget_seconds = budget;
  options.exhaustive = exhaustive != 0;
  hk::TuneResult result;
  bool stored = false;
  const Failure failure = run_unlocked([&] {
    result = hk::tune(problem, options);
    const std::string path = hk::tuning_db_path();
    if (!path.empty()) {
      hk::TuningDb db(path, true);
      db.put(result.record);
      hk::reset_dispatch();
      stored = true;
    }
  });
  if (failure.kind != Failure::none) return failure.raise();
  return record_dict(result.record, stored);
}

// transfer_counters(reset) -> {"to_device_bytes": ..., ...}: copies hetkern made between host and
// device (all zero in builds without offload).
PyObject* py_transfer_counters(PyObject*, PyObject* args) {
  int reset = 0;
  if (!PyArg_ParseTuple(args, "|p", &reset)) return nullptr;
  long long counts[6] = {0, 0, 0, 0, 0, 0};
#ifdef HETKERN_OFFLOAD
  const hk::TransferCounters c = hk::transfer_counters();
  counts[0] = c.to_device_bytes;
  counts[1] = c.to_host_bytes;
  counts[2] = c.to_device_copies;
  counts[3] = c.to_host_copies;
  counts[4] = c.between_devices_bytes;
  counts[5] = c.between_devices_copies;
  if (reset) hk::reset_transfer_counters();
#endif
  return Py_BuildValue("{sLsLsLsLsLsL}", "to_device_bytes", counts[0], "to_host_bytes", counts[1],
                       "to_device_copies", counts[2], "to_host_copies", counts[3], "between_devices_bytes",
                       counts[4], "between_devices_copies", counts[5]);
}

}  // namespace hkpy

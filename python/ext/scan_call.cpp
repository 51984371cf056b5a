// _hetkern.cumulative: cumulative_sum and cumulative_product on arrays and DLPack tensors.
#include <string>

#include "hetkern/operators.hpp"
#include "python/ext/calls.hpp"
#include "python/ext/device_glue.hpp"
#include "python/ext/errors.hpp"
#include "python/ext/operand.hpp"

#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

namespace hkpy {

// cumulative(product, x, out, axis, reverse, exclusive, schedule, mode): mode 0 runs the
// operator into `out` and returns None; mode 1 returns the text of the schedule it would run.
PyObject* py_cumulative(PyObject*, PyObject* args) {
  int product, reverse, exclusive, mode;
  PyObject *x, *out, *axis_object;
  const char* schedule_text;
  if (!PyArg_ParseTuple(args, "pOOOppzi", &product, &x, &out, &axis_object, &reverse, &exclusive,
                        &schedule_text, &mode))
    return nullptr;
  const char* op = product ? "cumulative_product" : "cumulative_sum";
  Operand input, output;
  if (!acquire(x, false, op, "input", input) || !acquire(out, true, op, "output", output)) return nullptr;
  int axis;
  if (!axis_argument(axis_object, op, input.rank, axis)) return nullptr;
  if (input.rank == output.rank)
    for (int d = 0; d < input.rank; ++d)
      if (flip_together({{&input, d}, {&output, d}}) && d == axis) reverse = !reverse;
  if (!input.on_device && !output.on_device && share_bytes(input, output) && !same_tensor(input, output))
    return raise_error(hk::Errc::overlap, op, "output",
                       "overlaps the input without being the same tensor (in-place needs the same data "
                       "pointer, sizes and strides)");
  if (!stage(op, "input", input) || !stage(op, "output", output)) return nullptr;
  const int on_device = device_call(op, {&input, &output});
  if (on_device < 0) return nullptr;
  const hk::CumulativeOptions options{axis, reverse ? hk::Direction::decreasing : hk::Direction::increasing,
                                      exclusive != 0};
  std::string chosen;
  const Failure failure = run_unlocked([&] {
    const hk::Schedule schedule = schedule_text ? hk::Schedule::parse(schedule_text) : hk::Schedule{};
    if (on_device) {
#ifdef HETKERN_OFFLOAD
      if (mode == 1)
        throw hk::Error(hk::Errc::invalid_parameter, op, "input",
                        "default_schedule answers for host tensors only");
      wait_for_producers(op);
      hk::DeviceBuffer in_buffer = hk::DeviceBuffer::borrow(input.data, input.span_bytes());
      hk::DeviceBuffer out_buffer = hk::DeviceBuffer::borrow(output.data, output.span_bytes());
      const hk::DeviceConstTensor in{input.desc(), &in_buffer, 0};
      const hk::DeviceTensor o{output.desc(), &out_buffer, 0};
      if (product) hk::cumulative_product(in, o, options, schedule);
      else hk::cumulative_sum(in, o, options, schedule);
#endif
      return;
    }
    if (mode == 1) {
      chosen = hk::default_schedule(product ? hk::Operator::cumulative_product : hk::Operator::cumulative_sum,
                                    input.const_tensor(), output.tensor(), options, schedule)
                   .to_string();
      return;
    }
    if (product) hk::cumulative_product(input.const_tensor(), output.tensor(), options, schedule);
    else hk::cumulative_sum(input.const_tensor(), output.tensor(), options, schedule);
    unstage(output);
  });
  if (failure.kind != Failure::none) return failure.raise();
  if (mode == 1) return PyUnicode_FromStringAndSize(chosen.data(), Py_ssize_t(chosen.size()));
  Py_RETURN_NONE;
}

}  // namespace hkpy

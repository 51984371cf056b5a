// cumulative_sum and cumulative_product with descriptors, options and schedules drawn from the
// fuzzer's bytes, buffers sized exactly from the descriptors. Every call throws hk::Error and
// leaves the output untouched, or succeeds; a descriptor whose sizes, strides or byte span are
// invalid by the independent computation here must be refused. Descriptors too large to back
// with memory go through default_schedule, which validates without touching any data.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "test/fuzz/fuzz_support.hpp"

using namespace hk;

namespace {

const char* const schedules[] = {"",
                                 "reference",
                                 "scan.tiled",
                                 "scan.tiled(tile=3)",
                                 "scan.parallel(tile=2, threads=2)",
                                 "scan.blocked(block=16, threads=2)",
                                 "scan.blocked(block=17, threads=3, stream=1)",
                                 "qmm.tiled"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool product = in.ConsumeBool();
  const DataType in_type = in.PickValueInArray(fuzz::all_types);
  const auto in_sizes = fuzz::draw_sizes(in, 0, 9);
  const auto in_desc = fuzz::make_desc(in_type, in_sizes, fuzz::draw_strides(in, in_sizes.size()));
  if (!in_desc) return 0;
  const int output_kind = in.ConsumeIntegralInRange<int>(0, 3);  // 0: in place, 1: same desc, else drawn
  std::optional<TensorDesc> out_desc = in_desc;
  if (output_kind >= 2) {
    const DataType out_type = output_kind == 2 ? in_type : in.PickValueInArray(fuzz::all_types);
    const auto out_sizes = in.ConsumeBool() ? in_sizes : fuzz::draw_sizes(in, 0, 9);
    out_desc = fuzz::make_desc(out_type, out_sizes, fuzz::draw_strides(in, out_sizes.size()));
    if (!out_desc) return 0;
  }
  CumulativeOptions options;
  options.axis = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(0, 8) : in.ConsumeIntegral<int>();
  options.direction = static_cast<Direction>(in.ConsumeIntegralInRange<int>(0, 2));
  options.exclusive = in.ConsumeBool();
  const char* schedule_text = in.PickValueInArray(schedules);
  const Schedule schedule = *schedule_text ? Schedule::parse(schedule_text) : Schedule();

  const auto in_span = fuzz::byte_span(*in_desc), out_span = fuzz::byte_span(*out_desc);
  const bool invalid = !in_span || !out_span || in_desc->rank() == 0;
  const bool small = !invalid && *in_span <= fuzz::max_buffer_bytes && *out_span <= fuzz::max_buffer_bytes &&
                     fuzz::logical_count(*in_desc) <= 4096;
  const Operator op = product ? Operator::cumulative_product : Operator::cumulative_sum;

  if (!small) {
    // Separate one-byte allocations: non-null, distinct, never dereferenced by validation.
    std::vector<unsigned char> x(1), y(1);
    try {
      default_schedule(op, {*in_desc, x.data()}, {*out_desc, y.data()}, options);
    } catch (const Error&) {
      return 0;
    }
    fuzz::require(!invalid, "an invalid size, stride or byte span was accepted");
    return 0;
  }
  auto x = fuzz::make_buffer(in, *in_span);
  std::vector<unsigned char> y_storage;
  void* y = x.data();
  if (output_kind != 0) {
    y_storage = fuzz::make_buffer(in, *out_span);
    y = y_storage.data();
  }
  const std::vector<unsigned char> before = output_kind == 0 ? x : y_storage;
  try {
    if (product)
      cumulative_product({*in_desc, x.data()}, {*out_desc, y}, options, schedule);
    else
      cumulative_sum({*in_desc, x.data()}, {*out_desc, y}, options, schedule);
  } catch (const Error&) {
    fuzz::require((output_kind == 0 ? x : y_storage) == before, "a refused call wrote to its output");
    return 0;
  }
  return 0;
}

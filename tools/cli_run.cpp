// `hetkern run`: reads .npy inputs, runs one operator, writes the .npy output (tools/output_file.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "algorithms/quantized_matmul.hpp"
#include "hetkern/hetkern.hpp"
#include "tools/cli.hpp"
#include "tools/npy.hpp"

namespace hk::cli {
namespace {

struct ScanArgs {
  std::string input, output, schedule;
  int axis = 0;
  bool reverse = false, exclusive = false;
};

struct QmmArgs {
  std::string output, a, a_scale, a_zero, b, b_scale, b_zero, out_scale, out_zero, out_type;
  std::string schedule;
};

// Address space that no memory backs, for validating a call against its output's place without
// allocating the output.
class ReservedAddresses {
 public:
  ReservedAddresses(std::size_t bytes, const TensorDesc& desc) : bytes_(std::max<std::size_t>(bytes, 1)) {
    data_ = mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (data_ == MAP_FAILED)
      throw Error(Errc::invalid_shape, "quantized_linear_matmul", "output",
                  desc.to_string() + " takes " + std::to_string(bytes) + " bytes, more than this machine can address");
  }
  ~ReservedAddresses() { munmap(data_, bytes_); }
  ReservedAddresses(const ReservedAddresses&) = delete;
  ReservedAddresses& operator=(const ReservedAddresses&) = delete;
  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

Schedule schedule_from(const std::string& text) {
  return text.empty() ? Schedule() : Schedule::parse(text);
}

void run_scan(const ScanArgs& args, bool product) {
  const npy::Array in = npy::read(args.input);
  const TensorDesc out_desc(in.desc.dtype(), in.desc.sizes());
  std::vector<std::byte> out(in.bytes.size());
  const CumulativeOptions options{args.axis,
                                  args.reverse ? Direction::decreasing : Direction::increasing,
                                  args.exclusive};
  const Schedule schedule = schedule_from(args.schedule);
  const ConstTensor x{in.desc, in.data()};
  const Tensor y{out_desc, out.data()};
  if (product)
    cumulative_product(x, y, options, schedule);
  else
    cumulative_sum(x, y, options, schedule);
  npy::write(args.output, out_desc, out.data());
}

// Parameter files may hold scalars (rank 0): they are per-tensor values of shape {1}.
ConstTensor as_parameter(const npy::Array& a) {
  if (a.desc.rank() > 0) return {a.desc, a.data()};
  return {TensorDesc(a.desc.dtype(), {1}), a.data()};
}

// A decimal number as strtod reads it, with an optional '+' (which from_chars refuses); beyond
// float64's range, the infinity or zero it rounds to, marked as such.
struct Number {
  double value = 0;
  bool out_of_range = false;
};

std::optional<Number> as_number(const std::string& text) {
  const std::size_t skip = text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+' ? 1 : 0;
  const char* begin = text.data() + skip;
  const char* end = text.data() + text.size();
  Number n;
  const auto [stop, ec] = std::from_chars(begin, end, n.value);
  if (stop != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) return std::nullopt;
  if (ec == std::errc::result_out_of_range) n = {std::strtod(begin, nullptr), true};
  return n;
}

// A quantization parameter given as a number or as a .npy file. A number becomes a per-tensor
// value of shape {1}: a scale as float32 (the decimal rounded to double, then to float32, as
// numpy.float32(0.0066) does), a zero point as `zero_type`, within its range.
npy::Array read_parameter(const std::string& text, const char* option, std::optional<DataType> zero_type) {
  const std::optional<Number> parsed = as_number(text);
  if (!parsed) {
    std::error_code ec;
    if (!std::filesystem::exists(text, ec))
      throw Error(Errc::invalid_parameter, "qlinear-matmul", option,
                  "'" + text + "' is neither a number nor an existing .npy file");
    return npy::read(text);
  }
  npy::Array a{TensorDesc(zero_type.value_or(DataType::float32), {1}), {}};
  const double number = parsed->value;
  if (!zero_type) {
    const float scale = float(number);
    // The operator sees the float32: name what was typed where rounding changed its meaning.
    // (A positive decimal below float64's range, 1e-400, reads as +0 out of range.)
    const bool positive = number > 0 || (parsed->out_of_range && number == 0 && !std::signbit(number));
    if ((scale == 0 || std::isinf(scale)) && (std::isfinite(number) || parsed->out_of_range) && positive)
      throw Error(Errc::invalid_parameter, "qlinear-matmul", option,
                  text + (scale == 0 ? " rounds to 0 as a float32" : " overflows float32") +
                      " (scales are positive finite float32 numbers)");
    a.bytes.resize(sizeof scale);
    std::memcpy(a.bytes.data(), &scale, sizeof scale);
    return a;
  }
  const int lo = *zero_type == DataType::int8 ? -128 : 0, hi = *zero_type == DataType::int8 ? 127 : 255;
  if (number != std::floor(number) || number < lo || number > hi)
    throw Error(Errc::invalid_parameter, "qlinear-matmul", option,
                text + " is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                    " (" + std::string(name_of(*zero_type)) + ")");
  a.bytes.push_back(std::byte(std::uint8_t(std::int32_t(number))));
  return a;
}

// numpy.matmul's output sizes: A's and B's batch dimensions broadcast (right-aligned, a size of 1
// repeats), then M and N. Sizes that do not broadcast are left for the operator to refuse.
std::vector<std::int64_t> output_sizes(const TensorDesc& a, const TensorDesc& b) {
  if (a.rank() < 2 || b.rank() < 2) {
    std::vector<std::int64_t> sizes(a.sizes().begin(), a.sizes().end());
    if (!sizes.empty() && b.rank() > 0) sizes.back() = b.size(b.rank() - 1);
    return sizes;
  }
  const int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(rank));
  for (int d = 0; d < rank - 2; ++d) {
    const int da = d - (rank - a.rank()), db = d - (rank - b.rank());
    const std::int64_t sa = da >= 0 ? a.size(da) : 1, sb = db >= 0 ? b.size(db) : 1;
    sizes[std::size_t(d)] = sa == 1 ? sb : sa;
  }
  sizes[std::size_t(rank - 2)] = a.size(a.rank() - 2);
  sizes[std::size_t(rank - 1)] = b.size(b.rank() - 1);
  return sizes;
}

void run_qmm(const QmmArgs& args) {
  const npy::Array a = npy::read(args.a), b = npy::read(args.b);
  const npy::Array sa = read_parameter(args.a_scale, "--a-scale", std::nullopt),
                   sb = read_parameter(args.b_scale, "--b-scale", std::nullopt),
                   sy = read_parameter(args.out_scale, "--out-scale", std::nullopt);
  // A number given as a zero point takes its tensor's type; the output's is --out-type, else
  // uint8 as in ONNX. A .npy zero point brings its own type, which the operator checks.
  std::optional<DataType> out_type;
  if (!args.out_type.empty()) out_type = parse_data_type(args.out_type);
  auto read_zero = [](const std::string& text, const char* option, DataType type) -> std::optional<npy::Array> {
    if (text.empty()) return std::nullopt;
    return read_parameter(text, option, type);
  };
  const auto za = read_zero(args.a_zero, "--a-zero-point", a.desc.dtype()),
             zb = read_zero(args.b_zero, "--b-zero-point", b.desc.dtype()),
             zy = read_zero(args.out_zero, "--out-zero-point", out_type.value_or(DataType::uint8));
  if (zy) {
    if (out_type && *out_type != zy->desc.dtype())
      throw Error(Errc::invalid_type, "quantized_linear_matmul", "output",
                  "--out-type " + args.out_type + " differs from the output zero point's type " +
                      std::string(name_of(zy->desc.dtype())));
    out_type = zy->desc.dtype();
  }

  const std::vector<std::int64_t> sizes = output_sizes(a.desc, b.desc);
  const TensorDesc out_desc(out_type.value_or(DataType::uint8), sizes);
  std::uint64_t out_bytes = size_of(out_desc.dtype());
  for (std::int64_t size : sizes)
    if (__builtin_mul_overflow(out_bytes, std::uint64_t(size), &out_bytes))
      throw Error(Errc::invalid_shape, "quantized_linear_matmul", "output",
                  "byte size of " + out_desc.to_string() + " exceeds 64 bits");

  QuantizedMatMulArgs q;
  q.a = {a.desc, a.data()};
  q.b = {b.desc, b.data()};
  q.a_scale = as_parameter(sa);
  q.b_scale = as_parameter(sb);
  q.output_scale = as_parameter(sy);
  if (za) q.a_zero_point = as_parameter(*za);
  if (zb) q.b_zero_point = as_parameter(*zb);
  if (zy) q.output_zero_point = as_parameter(*zy);
  const Schedule schedule = schedule_from(args.schedule);
  // M x N can exceed both input files by far: the arguments are validated against address space
  // reserved for the output before memory is asked for it, so that a pair of files whose shapes
  // do not match is refused as such, not as too large. Validation alone: no schedule is chosen
  // twice.
  {
    const ReservedAddresses place(std::size_t(out_bytes), out_desc);
    detail::validate(q, Tensor{out_desc, place.data()});
  }
  const auto out = std::make_unique_for_overwrite<std::byte[]>(std::size_t(out_bytes));
  quantized_linear_matmul(q, {out_desc, out.get()}, schedule);
  npy::write(args.output, out_desc, out.get());
}

void add_scan_command(CLI::App& run, const char* name, const char* help, bool product) {
  auto args = std::make_shared<ScanArgs>();
  CLI::App* cmd = run.add_subcommand(name, help);
  cmd->add_option("input", args->input, "input .npy file")->required();
  cmd->add_option("output", args->output, "output .npy file (written only on success), or - for standard output")
      ->required();
  cmd->add_option("--axis", args->axis, "axis to scan, -rank <= axis < rank (-1: the last)")
      ->required()
      ->check(whole_number_within(std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
  cmd->add_flag("--reverse", args->reverse, "traverse the axis by decreasing index");
  cmd->add_flag("--exclusive", args->exclusive, "leave each element out of its own tally");
  cmd->add_option("--schedule", args->schedule,
                  "schedule text, e.g. scan.parallel(threads=2); default: chosen by hetkern");
  cmd->callback([args, product] { run_scan(*args, product); });
}

}  // namespace

void add_run(CLI::App& app) {
  CLI::App* run = app.add_subcommand("run", "run one operator on .npy files");
  run->require_subcommand(0, 1);
  add_scan_command(*run, "cumsum", "cumulative sum along an axis", false);
  add_scan_command(*run, "cumprod", "cumulative product along an axis", true);

  auto args = std::make_shared<QmmArgs>();
  CLI::App* cmd = run->add_subcommand(
      "qlinear-matmul",
      "quantized matrix multiplication (ONNX QLinearMatMul); batch dimensions broadcast as in "
      "numpy.matmul; each scale and zero point is a number (one value) or a .npy file of rank 0 to "
      "4, right-aligned: one value, one per row {M,1} (A, output) or one per column {1,N} (B)");
  cmd->add_option("output", args->output, "output .npy file (written only on success), or - for standard output")
      ->required();
  cmd->add_option("--a", args->a, "A {[B],[C],M,K}, int8 or uint8")->required();
  cmd->add_option("--a-scale", args->a_scale, "A scale: a number or a .npy file, float32 or float16")->required();
  cmd->add_option("--a-zero-point", args->a_zero, "A zero point: a number or a .npy file of A's type (default 0)");
  cmd->add_option("--b", args->b, "B {[B],[C],K,N}, int8 or uint8")->required();
  cmd->add_option("--b-scale", args->b_scale, "B scale: a number or a .npy file, float32 or float16")->required();
  cmd->add_option("--b-zero-point", args->b_zero, "B zero point: a number or a .npy file of B's type (default 0)");
  cmd->add_option("--out-scale", args->out_scale, "output scale: a number or a .npy file, float32 or float16")
      ->required();
  cmd->add_option("--out-zero-point", args->out_zero,
                  "output zero point: a number (of the output type) or a .npy file (its type is the "
                  "output type); default 0");
  cmd->add_option("--out-type", args->out_type,
                  "output type; default: the output zero point file's type, else uint8 (as in ONNX)")
      ->check(CLI::IsMember({"int8", "uint8"}));
  cmd->add_option("--schedule", args->schedule,
                  "schedule text, e.g. qmm.parallel(threads=2); default: chosen by hetkern");
  cmd->callback([args] { run_qmm(*args); });
}

}  // namespace hk::cli

// `hetkern run`: reads .npy inputs, runs one operator, writes the .npy output atomically.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

void run_qmm(const QmmArgs& args) {
  auto read_optional = [](const std::string& path) -> std::optional<npy::Array> {
    if (path.empty()) return std::nullopt;
    return npy::read(path);
  };
  const npy::Array a = npy::read(args.a), b = npy::read(args.b);
  const npy::Array sa = npy::read(args.a_scale), sb = npy::read(args.b_scale),
                   sy = npy::read(args.out_scale);
  const auto za = read_optional(args.a_zero), zb = read_optional(args.b_zero),
             zy = read_optional(args.out_zero);

  std::optional<DataType> out_type;
  if (!args.out_type.empty()) out_type = parse_data_type(args.out_type);
  if (zy) {
    if (out_type && *out_type != zy->desc.dtype())
      throw Error(Errc::invalid_type, "quantized_linear_matmul", "output",
                  "--out-type " + args.out_type + " differs from the output zero point's type " +
                      std::string(name_of(zy->desc.dtype())));
    out_type = zy->desc.dtype();
  }
  if (!out_type)
    throw Error(Errc::invalid_type, "quantized_linear_matmul", "output",
                "type unknown: give --out-zero-point or --out-type int8|uint8");

  // The output is {batch..., M, N}: A's sizes with its last one replaced by B's last.
  std::vector<std::int64_t> sizes(a.desc.sizes().begin(), a.desc.sizes().end());
  if (!sizes.empty() && b.desc.rank() > 0) sizes.back() = b.desc.size(b.desc.rank() - 1);
  const TensorDesc out_desc(*out_type, sizes);
  // M x N can exceed both input files by far. The buffer is left uninitialized: its pages are
  // first touched when the operator writes them, after it has validated everything, so a hostile
  // pair of files that fails validation costs no memory.
  std::uint64_t out_bytes = size_of(*out_type);
  for (std::int64_t size : sizes)
    if (__builtin_mul_overflow(out_bytes, std::uint64_t(size), &out_bytes))
      throw Error(Errc::invalid_shape, "quantized_linear_matmul", "output",
                  "byte size of " + out_desc.to_string() + " exceeds 64 bits");
  const auto out = std::make_unique_for_overwrite<std::byte[]>(std::size_t(out_bytes));

  QuantizedMatMulArgs q;
  q.a = {a.desc, a.data()};
  q.b = {b.desc, b.data()};
  q.a_scale = as_parameter(sa);
  q.b_scale = as_parameter(sb);
  q.output_scale = as_parameter(sy);
  if (za) q.a_zero_point = as_parameter(*za);
  if (zb) q.b_zero_point = as_parameter(*zb);
  if (zy) q.output_zero_point = as_parameter(*zy);
  quantized_linear_matmul(q, {out_desc, out.get()}, schedule_from(args.schedule));
  npy::write(args.output, out_desc, out.get());
}

void add_scan_command(CLI::App& run, const char* name, const char* help, bool product) {
  auto args = std::make_shared<ScanArgs>();
  CLI::App* cmd = run.add_subcommand(name, help);
  cmd->add_option("input", args->input, "input .npy file")->required();
  cmd->add_option("output", args->output, "output .npy file (written only on success)")->required();
  cmd->add_option("--axis", args->axis, "axis to scan, -rank <= axis < rank (-1: the last)")->required();
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
      "quantized matrix multiplication; parameter arrays have rank 0 to 4, right-aligned: "
      "one value, one per row {M,1} (A, output) or one per column {1,N} (B)");
  cmd->add_option("output", args->output, "output .npy file (written only on success)")->required();
  cmd->add_option("--a", args->a, "A {[B],[C],M,K}, int8 or uint8")->required();
  cmd->add_option("--a-scale", args->a_scale, "A scale, float32")->required();
  cmd->add_option("--a-zero-point", args->a_zero, "A zero point, A's type");
  cmd->add_option("--b", args->b, "B {[B],[C],K,N}, int8 or uint8")->required();
  cmd->add_option("--b-scale", args->b_scale, "B scale, float32")->required();
  cmd->add_option("--b-zero-point", args->b_zero, "B zero point, B's type");
  cmd->add_option("--out-scale", args->out_scale, "output scale, float32")->required();
  cmd->add_option("--out-zero-point", args->out_zero, "output zero point; its type is the output type");
  cmd->add_option("--out-type", args->out_type, "output type when no output zero point is given")
      ->check(CLI::IsMember({"int8", "uint8"}));
  cmd->add_option("--schedule", args->schedule,
                  "schedule text, e.g. qmm.parallel(threads=2); default: chosen by hetkern");
  cmd->callback([args] { run_qmm(*args); });
}

}  // namespace hk::cli

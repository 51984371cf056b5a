// The command-line options of one operator problem, shared by `hetkern bench` and `hetkern tune`.
#include "tools/cli_problem.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/cli.hpp"

namespace hk::cli {

void add_problem_options(CLI::App& cmd, ProblemArgs& a, bool scan) {
  if (scan) {
    add_list_option(cmd, "--shape", a.shape, "sizes D0,D1,...", whole_number_within(1, std::numeric_limits<std::int64_t>::max()))
        ->required();
    cmd.add_option("--dtype", a.dtype, "element type: float16, float32, float64, bfloat16, int32, uint32, int64, uint64")->required();
    cmd.add_option("--axis", a.axis, "axis to scan, -rank <= axis < rank (-1: the last)")
        ->required()
        ->check(whole_number_within(std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    cmd.add_option("--direction", a.direction, "traversal order along the axis")
        ->check(CLI::IsMember({"increasing", "decreasing"}))
        ->capture_default_str();
    cmd.add_flag("--exclusive", a.exclusive, "leave each element out of its own tally");
  } else {
    add_list_option(cmd, "--shape", a.shape, "M,N,K: A {M,K} x B {K,N}",
                    whole_number_within(1, std::numeric_limits<std::int64_t>::max()))
        ->required();
    add_list_option(cmd, "--types", a.types, "types of A, B and the output, each u8 or s8 (default u8,s8,u8)",
                    CLI::Validator());
  }
}

DataType data_type_option(const std::string& option, const std::string& text) {
  const auto t = parse_data_type(text);
  if (!t) throw CLI::ValidationError(option, "unknown data type '" + text + "'");
  return *t;
}

CumulativeOptions scan_options(const ProblemArgs& a) {
  return {a.axis, a.direction == "decreasing" ? Direction::decreasing : Direction::increasing, a.exclusive};
}

void check_qmm_args(const ProblemArgs& a) {
  if (a.shape.size() != 3) throw CLI::ValidationError("--shape", "needs three sizes M,N,K");
  if (a.types.size() != 3) throw CLI::ValidationError("--types", "needs three types A,B,OUTPUT, each u8 or s8");
}

}  // namespace hk::cli

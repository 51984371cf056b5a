// The command-line options of one operator problem, shared by `hetkern bench` and `hetkern tune`.
#include "tools/cli_problem.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/cli.hpp"

namespace hk::cli {

namespace {

// --shape read as one text: a vector option with a delimiter dropped empty items (64,,64 ran
// {64,64}) and joined a second --shape onto the first.
void add_shape_option(CLI::App& cmd, std::vector<std::int64_t>& shape, const char* help) {
  cmd.add_option_function<std::string>(
         "--shape",
         [&shape](const std::string& text) {
           const CLI::Validator size = whole_number_within(1, std::numeric_limits<std::int64_t>::max());
           shape.clear();
           for (std::size_t at = 0;;) {
             const std::size_t comma = text.find(',', at);
             std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
             if (const std::string error = size(item); !error.empty())
               throw CLI::ValidationError("--shape", error + " in '" + text + "'");
             shape.push_back(std::stoll(item));
             if (comma == std::string::npos) return;
             at = comma + 1;
           }
         },
         help)
      ->required()
      ->type_name("SIZES");
}

}  // namespace

void add_problem_options(CLI::App& cmd, ProblemArgs& a, bool scan) {
  if (scan) {
    add_shape_option(cmd, a.shape, "sizes D0,D1,...");
    cmd.add_option("--dtype", a.dtype, "element type: float16, float32, float64, bfloat16, int32, uint32, int64, uint64")->required();
    cmd.add_option("--axis", a.axis, "axis to scan, -rank <= axis < rank (-1: the last)")
        ->required()
        ->check(whole_number_within(std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    cmd.add_option("--direction", a.direction, "traversal order along the axis")
        ->check(CLI::IsMember({"increasing", "decreasing"}))
        ->capture_default_str();
    cmd.add_flag("--exclusive", a.exclusive, "leave each element out of its own tally");
  } else {
    add_shape_option(cmd, a.shape, "M,N,K: A {M,K} x B {K,N}");
    cmd.add_option("--types", a.types, "types of A, B and the output, each u8 or s8")
        ->delimiter(',')
        ->capture_default_str();
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

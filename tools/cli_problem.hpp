// The options that describe one operator problem on the command line (shape, types, scan axis,
// direction, exclusive), read the same way by `hetkern bench` and `hetkern tune`.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "hetkern/hetkern.hpp"

namespace hk::cli {

struct ProblemArgs {
  std::vector<std::int64_t> shape;
  std::string dtype;
  int axis = 0;
  std::string direction = "increasing";
  bool exclusive = false;
  std::vector<std::string> types = {"u8", "s8", "u8"};
};

/// Adds the scan options (--shape, --dtype, --axis, --direction, --exclusive) or the matmul ones
/// (--shape M,N,K, --types) to `cmd`, read into `args`.
void add_problem_options(CLI::App& cmd, ProblemArgs& args, bool scan);

/// The data type `text` names; throws CLI::ValidationError naming `option` for an unknown name.
DataType data_type_option(const std::string& option, const std::string& text);

/// The scan options the arguments give.
CumulativeOptions scan_options(const ProblemArgs& args);

/// Throws CLI::ValidationError unless the matmul arguments give three sizes and three types.
void check_qmm_args(const ProblemArgs& args);

}  // namespace hk::cli

// The subcommands of the `hetkern` command line, and the option checks they share; main.cpp wires
// them up.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "hetkern/info.hpp"  // max_threads, the bound of every --threads option

namespace hk::cli {

/// Checks that an option's value is a finite number of seconds from `lo` (above it when
/// `above_lo`) to `hi`. CLI11's number checks let nan and inf through, which never end a timing
/// loop, and name the largest double as their bound.
CLI::Validator seconds_within(double lo, double hi, bool above_lo = false);

/// Checks that each of an option's values is a whole number from `lo` to `hi`, by its text:
/// CLI11's conversions clamp a number past the type's range to its bound, and its range check
/// reports text that is not a number as out of range.
CLI::Validator whole_number_within(std::int64_t lo, std::int64_t hi);

/// A comma-separated list option (`--threads 1,2,4`), read as one text: every item passes `item`
/// (pass CLI::Validator() for none) and none is empty, and a second use of the option is refused.
/// CLI11's delimiter dropped empty items (64,,64 read as 64,64) and joined a repeated option's
/// lists. T is std::string or an integer type (items then checked as whole numbers by `item`).
template <class T>
CLI::Option* add_list_option(CLI::App& cmd, const std::string& name, std::vector<T>& out, const std::string& help,
                             CLI::Validator item) {
  return cmd
      .add_option_function<std::string>(
          name,
          [&out, name, item](const std::string& text) {
            out.clear();
            for (std::size_t at = 0;;) {
              const std::size_t comma = text.find(',', at);
              std::string value = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
              std::string error = value.empty() ? "expected a value, got an empty one" : item(value);
              if (!error.empty()) throw CLI::ValidationError(name, error + " in '" + text + "'");
              if constexpr (std::is_same_v<T, std::string>)
                out.push_back(value);
              else
                out.push_back(T(std::stoll(value)));
              if (comma == std::string::npos) return;
              at = comma + 1;
            }
          },
          help)
      ->type_name("LIST");
}

/// Makes every option of `app` and its subcommands that takes a value refuse an empty one: CLI11
/// reads "" as 0 for a number (`--axis ""` scanned axis 0) and the commands read it as "not given".
void refuse_empty_values(CLI::App& app);

/// Thrown by a command that stopped early on Ctrl-C after reporting and writing what finished:
/// hetkern then exits with status 130, as a shell reports a process ended by SIGINT.
struct Interrupted {};

/// `hetkern run cumsum|cumprod|qlinear-matmul ...`: one operator over .npy files.
void add_run(CLI::App& app);
/// `hetkern info`: build, CPU features and the schedules each operator offers.
void add_info(CLI::App& app);
/// `hetkern demo`: the documentation examples and a timed comparison of schedules.
void add_demo(CLI::App& app);
/// `hetkern bench cumsum|cumprod|qlinear-matmul ...`: one case timed next to its baseline.
void add_bench(CLI::App& app);
/// `hetkern bench --sweep SPEC ...`: the sweep's options on the bench command (cli_sweep.cpp).
void add_bench_sweep(CLI::App& bench);
/// `hetkern tune ...`: measure schedules per shape into the tuning database; list, export, import.
void add_tune(CLI::App& app);

}  // namespace hk::cli

// The subcommands of the `hetkern` command line; main.cpp wires them up.
#pragma once

#include <CLI/CLI.hpp>

namespace hk::cli {

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

}  // namespace hk::cli

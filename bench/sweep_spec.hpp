// The cases of a benchmark sweep: a preset name or a SPEC file, one case per line.
//
//   # op          shape            dtype       options
//   cumsum        1024,4096        float32     axis=1
//   cumprod       4096,1024        float32     axis=0 direction=decreasing exclusive
//   qlinear-matmul 256,1024,1024   u8,s8,u8    b_range=-64,63
//
// Fields are separated by spaces or tabs; '#' starts a comment; blank lines are ignored.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/qmm_bench.hpp"
#include "bench/scan_bench.hpp"

namespace hk::bench {

struct SweepCase {
  int line = 0;       // line in the SPEC text, for messages
  std::string text;   // the line without its comment, spaces collapsed: the case's name in records
  bool is_qmm = false;
  ScanCase scan;      // op, dtype, shape, options (schedule and threads are set per measurement)
  QmmCase qmm;        // m, n, k, types, b_range, b_layout
};

/// The preset names, in the order --help lists them: scans, qmm, small, all.
std::vector<std::string> sweep_presets();

/// The SPEC text of a preset, or nullopt for another name.
std::optional<std::string> preset_spec(std::string_view name);

/// Parses SPEC text; `source` names it in messages ("small", "cases.txt"). Throws
/// hk::Error(Errc::invalid_parameter, "sweep", "SOURCE:LINE", why) for the first bad line, and for
/// text without any case.
std::vector<SweepCase> parse_sweep_spec(std::string_view text, const std::string& source);

/// A preset's cases, or the cases of the file at `spec`; throws hk::Error(Errc::invalid_file) for
/// a file that cannot be read.
std::vector<SweepCase> load_sweep_spec(const std::string& spec);

}  // namespace hk::bench

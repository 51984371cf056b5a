// Block parameters shared by the host strategies of QuantizedLinearMatMul.
#include "schedules/strategies/qmm_host_common.hpp"

#include "schedules/qmm_pack.hpp"
#include "schedules/search_values.hpp"

namespace hk::detail {

std::vector<ParamSpec> qmm_block_params() {
  return {{"mc", 1, 4096, "rows of A per block"},
          {"nc", 1, 8192, "columns of B per block"},
          {"kc", 1, 65536, "depth per kernel call"}};
}

QmmBlocks bound_blocks(const BoundParams& p, const QmmBlocks& defaults) {
  return {p.get("mc", defaults.mc), p.get("nc", defaults.nc), p.get("kc", defaults.kc)};
}

Schedule& set_blocks(Schedule& s, const QmmBlocks& b) { return s.set("mc", b.mc).set("nc", b.nc).set("kc", b.kc); }

void add_block_axes(std::vector<SpaceAxis>& axes, const QmmProblem& p) {
  const std::vector<ParamSpec> params = qmm_block_params();
  add_axis(axes, "mc", geometric_values(16, round_up(p.M, qmm_row_align), 2, params[0]));
  add_axis(axes, "nc", geometric_values(16, round_up(p.N, 16), 4, params[1]));
  add_axis(axes, "kc", geometric_values(64, round_up(p.K, qmm_depth_align), 4, params[2]));
}

}  // namespace hk::detail

// The oneDNN baseline of a build where CMake found no oneDNN: every case says so.
#include "bench/onednn_baseline.hpp"

namespace hk::bench {

struct OnednnMatmul::Impl {};

OnednnMatmul::OnednnMatmul(const OnednnQmmProblem&)
    : reason_("built without oneDNN: libdnnl-dev was not found when hetkern was configured") {}

OnednnMatmul::~OnednnMatmul() = default;

std::string OnednnMatmul::implementation() const { return {}; }

void OnednnMatmul::pack_weights() {}

void OnednnMatmul::run() {}

std::string cap_onednn_isa(Isa) { return {}; }

std::string onednn_version() { return {}; }

}  // namespace hk::bench

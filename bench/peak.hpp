// The compute roof of QuantizedLinearMatMul on this machine: how many int8 operations per second
// the instructions of hetkern's kernel at an instruction-set level can retire, measured by running
// them back to back, independent of each other, on every thread. And the core clock, measured.
#pragma once

#include <string>

#include "hetkern/info.hpp"

namespace hk::bench {

struct Peak {
  double gops = 0;     // 0 when the level has no SIMD peak (portable)
  double clock_ghz = 0;
  std::string method;  // how gops was obtained, for labels
};

/// Core clock under load in GHz, the median over `threads` threads: a chain of dependent integer
/// additions (one per cycle on every x86-64 core) timed for a few milliseconds.
double measured_clock_ghz(int threads);

/// The int8 operation peak (2 per multiply-accumulate) of `threads` threads at `level`: one core's
/// rate times `threads` (the best of many short rounds on one core, so that a machine shared with
/// other work still yields its roof), where one core's rate is
///   avx512_vnni  vpdpbusd zmm (64 u8 x s8 MACs), 12 independent accumulators, measured;
///   avx2, avx512 vpmaddubsw + vpmaddwd + vpaddd on ymm (32 MACs), the AVX2 kernel's exact path,
///                measured;
///   amx          1024 MACs per cycle (tdpbusd's rate) times the measured clock;
///   portable     none.
Peak measured_peak(Isa level, int threads);

}  // namespace hk::bench

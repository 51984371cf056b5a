// The host lowering of QuantizedLinearMatMul (qmm_host.cpp): packed blocks on one thread or an
// OpenMP team, and the reference from a caller's packed B.
#pragma once

#include <cstdint>

#include "algorithms/quantized_matmul.hpp"

namespace hk::detail {

/// Block sizes of the packed lowering: rows of A, columns of B, depth per kernel call.
struct QmmBlocks {
  std::int64_t mc = 0, nc = 0, kc = 0;
};

/// Block sizes for `threads` threads from the shape and the L2 cache (hwloc's, else 1 MiB).
QmmBlocks default_qmm_blocks(const QmmProblem& problem, int threads);

/// qmm.tiled (threads = 1) and qmm.parallel: A packed once, B packed per thread or shared (or the
/// caller's packed B), each block through the active ISA's kernel and requantized. The caller pins.
void run_qmm_blocks(const QmmProblem& problem, const QmmBlocks& blocks, int threads);

/// The reference, B recovered first when the caller packed it.
void run_qmm_reference(const QmmProblem& problem);

}  // namespace hk::detail

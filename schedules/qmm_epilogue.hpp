// Requantization of a finished block of QuantizedLinearMatMul dot products into the output.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/quantized_matmul.hpp"

namespace hk::detail {

/// A block of dot(A', B') values (see qmm_pack.hpp) for output rows [i0, i0+rows) and columns
/// [j0, j0+cols) of one batch, and what folds the shifts and zero points back in.
struct QmmBlockResult {
  std::int64_t i0 = 0, rows = 0, j0 = 0, cols = 0;
  const std::int32_t* dots = nullptr;     // dots[r*ld + j] when the depth fits int32 blocks
  const std::int64_t* wide = nullptr;     // otherwise wide[r*ld + j]
  std::int64_t ld = 0;
  const std::int64_t* row_sums = nullptr;  // A' row sums, at row i0
  const std::int64_t* col_sums = nullptr;  // B' column sums, at column j0
  std::int64_t out_offset = 0;             // the batch's offset in the output (elements)
};

/// Per-thread scratch of requantize_block.
struct QmmEpilogueScratch {
  std::vector<double> multiplier, beta, col_term;  // per column; each multiplier a float32 widened exactly
  std::vector<double> alpha, zero_point;           // per row
  std::vector<std::int32_t> value;
  // The float32 path's: per column, then per row (alpha modulo 2^32, and whether to redo the row).
  std::vector<float> multiplier32;
  std::vector<std::uint32_t> col_term32;
  std::vector<std::uint32_t> alpha32;
  std::vector<float> zero_point32;
  std::vector<std::uint8_t> redo;
  /// Room for blocks of up to `rows` rows and `cols` columns.
  void reserve(std::int64_t rows, std::int64_t cols);
};

/// Writes every output of the block: exact accumulator, then requantize() semantics.
void requantize_block(const QmmProblem& p, const QmmBlockResult& r, QmmEpilogueScratch& s);

}  // namespace hk::detail

// Packing B into the kernels' panels, path by path (rows of B contiguous: four panels at once, one
// panel, a partial last panel; columns contiguous; neither), at every instruction-set level: the
// panels hold B' and zero padding, the column sums and the int16 pair bound are B's, and nothing is
// read past B's last element (it lies just before an inaccessible page).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fenced_bytes_test_util.hpp"
#include "isa_test_util.hpp"
#include "schedules/qmm_pack.hpp"

namespace {

using hk::DataType;
using hk::detail::PackedPanels;
using hk::test::FencedBytes;
using i64 = std::int64_t;

struct Layout {
  const char* name;
  i64 row_stride, col_stride;
};

// K x N with its rows contiguous, its columns contiguous (a transposed N x K), elements two apart,
// and each kind broadcast along one dimension; gaps make the strides odd.
std::vector<Layout> layouts(i64 K, i64 N) {
  return {{"rows", N + 3, 1},       {"packed rows", N, 1},    {"columns", 1, K + 5},
          {"packed columns", 1, K}, {"elements apart", 2 * N + 1, 2}, {"one row for every depth", 0, 1},
          {"one column for every column", 1, 0}};
}

void check_packing(i64 K, i64 N, DataType type, bool small, const Layout& layout, std::mt19937_64& rng) {
  const i64 reach = (K - 1) * layout.row_stride + (N - 1) * layout.col_stride + 1;
  FencedBytes storage(reach);
  std::uint8_t* const b = storage.data();
  const int flip = type == DataType::uint8 ? 0x80 : 0;
  for (i64 i = 0; i < reach; ++i) b[i] = std::uint8_t(small ? (int(rng() % 129) - 64) ^ flip : int(rng() % 256));
  const auto at = [&](i64 k, i64 n) { return b[k * layout.row_stride + n * layout.col_stride]; };
  const auto prime = [&](i64 k, i64 n) { return int(std::int8_t(std::uint8_t(at(k, n) ^ flip))); };

  bool fits = true;
  std::vector<i64> sums(std::size_t(N), 0);
  for (i64 k = 0; k < K; ++k)
    for (i64 n = 0; n < N; ++n) {
      sums[std::size_t(n)] += prime(k, n);
      fits = fits && std::abs(prime(k, n)) <= 64;
    }

  PackedPanels out;
  hk::detail::shape_panels(out, 1, K, N, type, false);
  std::memset(out.bytes.data.get(), 0x5A, std::size_t(out.bytes.size));  // junk where no byte is written
  // Two calls, as the tasks of a parallel packing split the panels.
  const i64 half = out.panels / 2;
  bool got_fits = hk::detail::pack_panels(out, 0, b, layout.row_stride, layout.col_stride, 0, half);
  got_fits = hk::detail::pack_panels(out, 0, b, layout.row_stride, layout.col_stride, half, out.panels) && got_fits;

  const std::string where = std::string(layout.name) + ", K " + std::to_string(K) + ", N " + std::to_string(N) + ", " +
                            std::string(hk::name_of(type)) + (small ? " within [-64, 64]" : " full range") + ", isa " +
                            std::string(hk::name_of(hk::active_isa()));
  EXPECT_EQ(got_fits, fits) << where;
  int wrong = 0;
  for (i64 n = 0; n < N; ++n) {
    EXPECT_EQ(out.sums(0)[n], sums[std::size_t(n)]) << "column " << n << " sum; " << where;
    const std::int8_t* panel = out.panel(0, n / hk::detail::qmm_panel_cols);
    for (i64 k = 0; k < out.kp && wrong < 3; ++k) {
      const int got = panel[(k / 4) * 64 + (n % 16) * 4 + k % 4];
      const int want = k < K ? prime(k, n) : 0;
      if (got != want) {
        ++wrong;
        ADD_FAILURE() << "(k, n) = (" << k << ", " << n << ") packed " << got << ", expected " << want << "; "
                      << where;
      }
    }
  }
}

TEST(QmmPacking, EveryPathHoldsBSumsAndBoundAndReadsNothingPastB) {
  std::mt19937_64 rng(31);
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (const i64 K : {1, 3, 4, 15, 16, 17, 70, 200})
      for (const i64 N : {1, 5, 16, 17, 45, 64, 81, 109})
        for (const Layout& layout : layouts(K, N))
          for (const DataType type : {DataType::uint8, DataType::int8})
            check_packing(K, N, type, rng() % 2 == 0, layout, rng);
  }
}

}  // namespace

// Host lowering of the QuantizedLinearMatMul schedules: packed, cache-blocked, optionally parallel.
#include <algorithm>
#include <vector>

#include "schedules/qmm_schedules.hpp"

namespace hk::detail {
namespace {

// Zero points are subtracted while packing: every packed value lies in [-255, 255] and every
// product in [-65025, 65025], so int16 storage and int32 products are exact.
using Packed = std::int16_t;

struct Blocking {
  std::int64_t mc, nc, kc, m_blocks, n_blocks;
};

// Panel `panel` of B for batch offset b_off: columns [panel*nc, +ncb) as K rows of ncb values.
void pack_b_panel(const QmmProblem& p, const Blocking& g, std::int64_t b_off, std::int64_t panel,
                  Packed* dst) {
  const std::int64_t j0 = panel * g.nc, ncb = std::min(g.nc, p.N - j0);
  for (std::int64_t k = 0; k < p.K; ++k)
    for (std::int64_t j = 0; j < ncb; ++j) {
      const std::int64_t n = j0 + j;
      dst[k * ncb + j] = Packed(load_quantized(p.b.data, b_off + k * p.b.row_stride + n * p.b.col_stride, p.b.dtype) -
                                QuantParams::at(p.q.b_zero, n));
    }
}

// Rows [i0, i0+mcb) of A for batch offset a_off, each as K values.
void pack_a_rows(const QmmProblem& p, std::int64_t a_off, std::int64_t i0, std::int64_t mcb,
                 Packed* dst) {
  for (std::int64_t i = 0; i < mcb; ++i) {
    const std::int64_t m = i0 + i;
    const std::int32_t za = QuantParams::at(p.q.a_zero, m);
    for (std::int64_t k = 0; k < p.K; ++k)
      dst[i * p.K + k] = Packed(load_quantized(p.a.data, a_off + m * p.a.row_stride + k * p.a.col_stride, p.a.dtype) - za);
  }
}

// c[mcb x ncb] += a[mcb x kcb] (row stride lda) * b[kcb x ncb]. Four rows share each load of b.
// Cloned for AVX2 so one binary uses the wide integer units where the CPU has them.
__attribute__((target_clones("avx2", "default"))) void multiply_block(
    const Packed* a, std::int64_t lda, const Packed* b, std::int64_t ncb, std::int64_t mcb,
    std::int64_t kcb, std::int32_t* c) {
  std::int64_t i = 0;
  for (; i + 4 <= mcb; i += 4) {
    std::int32_t* c0 = c + i * ncb;
    std::int32_t* c1 = c0 + ncb;
    std::int32_t* c2 = c1 + ncb;
    std::int32_t* c3 = c2 + ncb;
    for (std::int64_t k = 0; k < kcb; ++k) {
      const std::int32_t a0 = a[i * lda + k], a1 = a[(i + 1) * lda + k];
      const std::int32_t a2 = a[(i + 2) * lda + k], a3 = a[(i + 3) * lda + k];
      const Packed* br = b + k * ncb;
      for (std::int64_t j = 0; j < ncb; ++j) {
        const std::int32_t w = br[j];
        c0[j] += a0 * w;
        c1[j] += a1 * w;
        c2[j] += a2 * w;
        c3[j] += a3 * w;
      }
    }
  }
  for (; i < mcb; ++i) {
    std::int32_t* cr = c + i * ncb;
    for (std::int64_t k = 0; k < kcb; ++k) {
      const std::int32_t av = a[i * lda + k];
      const Packed* br = b + k * ncb;
      for (std::int64_t j = 0; j < ncb; ++j) cr[j] += av * br[j];
    }
  }
}

struct Scratch {
  std::vector<Packed> a;
  std::vector<std::int32_t> c;
  std::vector<std::int64_t> wide;
  std::int64_t packed_batch = -1, packed_block = -1;  // which rows `a` holds
};

void run_block(const QmmProblem& p, const Blocking& g, const std::vector<Packed>& bpack,
               bool b_shared, std::int64_t item, Scratch& s) {
  const std::int64_t per_batch = g.m_blocks * g.n_blocks;
  const std::int64_t t = item / per_batch, ib = (item % per_batch) / g.n_blocks,
                     jb = item % g.n_blocks;
  const std::int64_t b0 = t / p.batch[1], b1 = t % p.batch[1];
  const std::int64_t i0 = ib * g.mc, mcb = std::min(g.mc, p.M - i0);
  const std::int64_t j0 = jb * g.nc, ncb = std::min(g.nc, p.N - j0);
  if (s.packed_batch != t || s.packed_block != ib) {
    pack_a_rows(p, b0 * p.a.batch_stride[0] + b1 * p.a.batch_stride[1], i0, mcb, s.a.data());
    s.packed_batch = t;
    s.packed_block = ib;
  }
  const Packed* panel = bpack.data() + ((b_shared ? 0 : t) * g.n_blocks + jb) * p.K * g.nc;
  const bool wide = p.K > qmm_int32_max_k;
  std::fill_n(s.c.begin(), mcb * ncb, 0);
  if (wide) std::fill_n(s.wide.begin(), mcb * ncb, 0);
  for (std::int64_t k0 = 0; k0 < p.K; k0 += g.kc) {
    const std::int64_t kcb = std::min(g.kc, p.K - k0);
    multiply_block(s.a.data() + k0, p.K, panel + k0 * ncb, ncb, mcb, kcb, s.c.data());
    if (wide) {
      for (std::int64_t e = 0; e < mcb * ncb; ++e) s.wide[e] += s.c[e];
      std::fill_n(s.c.begin(), mcb * ncb, 0);
    }
  }
  const std::int64_t y_off = b0 * p.out_batch_stride[0] + b1 * p.out_batch_stride[1];
  for (std::int64_t i = 0; i < mcb; ++i) {
    const std::int64_t m = i0 + i;
    const float sa = QuantParams::at(p.q.a_scale, m), sy = QuantParams::at(p.q.out_scale, m);
    const std::int32_t zy = QuantParams::at(p.q.out_zero, m);
    for (std::int64_t j = 0; j < ncb; ++j) {
      const std::int64_t n = j0 + j;
      const std::int64_t acc = wide ? s.wide[i * ncb + j] : s.c[i * ncb + j];
      const float mult = requant_multiplier(sa, QuantParams::at(p.q.b_scale, n), sy);
      store_quantized(p.out, y_off + m * p.out_row_stride + n * p.out_col_stride, p.out_type,
                      requantize(acc, mult, zy, p.out_type));
    }
  }
}

void run_blocked(const QmmProblem& p, const QmmPlan& plan) {
  Blocking g;
  g.mc = std::min(plan.mc, p.M);
  g.nc = std::min(plan.nc, p.N);
  g.kc = std::min(plan.kc, p.K);
  g.m_blocks = (p.M + g.mc - 1) / g.mc;
  g.n_blocks = (p.N + g.nc - 1) / g.nc;
  const std::int64_t batches = p.batch[0] * p.batch[1];
  // A B broadcast over every batch is packed once.
  const bool b_shared = p.b.batch_stride[0] == 0 && p.b.batch_stride[1] == 0;
  const std::int64_t b_batches = b_shared ? 1 : batches;
  std::vector<Packed> bpack(std::size_t(b_batches * g.n_blocks * p.K * g.nc));
  const std::int64_t items = batches * g.m_blocks * g.n_blocks;
  const int threads = plan.kind == QmmPlan::Kind::parallel ? plan.threads : 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < b_batches * g.n_blocks; ++i) {
      const std::int64_t t = i / g.n_blocks, panel = i % g.n_blocks;
      const std::int64_t b0 = t / p.batch[1], b1 = t % p.batch[1];
      pack_b_panel(p, g, b0 * p.b.batch_stride[0] + b1 * p.b.batch_stride[1], panel,
                   bpack.data() + i * p.K * g.nc);
    }
    Scratch s;
    s.a.resize(std::size_t(g.mc * p.K));
    s.c.resize(std::size_t(g.mc * g.nc));
    if (p.K > qmm_int32_max_k) s.wide.resize(std::size_t(g.mc * g.nc));
#pragma omp for schedule(static)
    for (std::int64_t item = 0; item < items; ++item) run_block(p, g, bpack, b_shared, item, s);
  }
}

}  // namespace

void run_qmm(const QmmProblem& problem, const QmmPlan& plan) {
  if (plan.kind == QmmPlan::Kind::reference)
    reference_qmm(problem);
  else
    run_blocked(problem, plan);
}

}  // namespace hk::detail

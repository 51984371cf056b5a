// The measured compute roof of QuantizedLinearMatMul at an instruction-set level (peak.hpp).
#include "bench/peak.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace hk::bench {
namespace {

using Clock = std::chrono::steady_clock;
// Many short rounds, the best kept: on a shared machine some round finds every core free.
constexpr int rounds = 20;

// Runs body(iterations) on `threads` threads at once, `rounds` times, and returns the best rate
// of work units per nanosecond over all threads: work_per_iteration * iterations * threads / time.
// (One thread for the peaks; the clock may be asked for several.)
template <class Body>
double best_rate(int threads, std::int64_t iterations, double work_per_iteration, const Body& body) {
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
    body(iterations);
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    best = std::max(best, work_per_iteration * double(iterations) * threads / ns);
  }
  return best;
}

// Eight dependent additions per iteration: eight cycles, whatever the loop's own instructions.
void add_chain(std::int64_t iterations) {
  std::uint64_t x = 0, one = 1;
  // A register operand: an Emerald Rapids VM ran a chain of additions of an immediate about four a
  // cycle (12 GHz measured), of a register one a cycle (2.96 GHz).
  for (std::int64_t i = 0; i < iterations; ++i)
    asm volatile(
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
        "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
        : "+r"(x)
        : "r"(one));
}

// Inputs the compiler cannot see, so that the instructions are not folded away.
alignas(64) volatile std::uint8_t operand_bytes[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
std::int64_t sink;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void vnni_chains(std::int64_t iterations) {
  const __m512i a = _mm512_loadu_si512(const_cast<const std::uint8_t*>(operand_bytes));
  const __m512i b = _mm512_set1_epi8(3);
  __m512i acc[12];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (std::int64_t i = 0; i < iterations; ++i)
    for (auto& v : acc) v = _mm512_dpbusd_epi32(v, a, b);
  __m512i total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm512_add_epi32(total, acc[j]);
#pragma omp atomic
  sink += _mm512_reduce_add_epi32(total);
}

__attribute__((target("avx2"))) void avx2_chains(std::int64_t iterations) {
  const __m256i a = _mm256_loadu_si256(const_cast<const __m256i*>(
      reinterpret_cast<const volatile __m256i*>(operand_bytes)));
  const __m256i b = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256i acc[8];
  for (auto& v : acc) v = _mm256_setzero_si256();
  for (std::int64_t i = 0; i < iterations; ++i)
    for (auto& v : acc) v = _mm256_add_epi32(v, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
  __m256i total = acc[0];
  for (int j = 1; j < 8; ++j) total = _mm256_add_epi32(total, acc[j]);
  alignas(32) std::int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
#pragma omp atomic
  sink += lanes[0];
}

}  // namespace

double measured_clock_ghz(int threads) {
  return best_rate(threads, std::int64_t(1) << 18, 8, add_chain) / threads;
}

Peak measured_peak(Isa level, int threads) {
  // One core measured, times the thread count: a roof, unaffected by whatever else shares the
  // machine during the sweep.
  Peak p;
  p.clock_ghz = measured_clock_ghz(1);
  switch (level) {
    case Isa::amx:
      p.gops = 2.0 * 1024 * p.clock_ghz * threads;
      p.method = "AMX tdpbusd: 1024 MAC/cycle/core x measured clock x threads";
      break;
    case Isa::avx512_vnni:
      p.gops = best_rate(1, std::int64_t(1) << 16, 12 * 64 * 2, vnni_chains) * threads;
      p.method = "vpdpbusd zmm throughput of one core, measured, x threads";
      break;
    case Isa::avx512:
    case Isa::avx2:
      p.gops = best_rate(1, std::int64_t(1) << 16, 8 * 32 * 2, avx2_chains) * threads;
      p.method = "vpmaddubsw+vpmaddwd+vpaddd ymm throughput of one core, measured, x threads";
      break;
    case Isa::portable:
      p.method = "no SIMD peak for the portable kernels";
      break;
  }
  return p;
}

}  // namespace hk::bench

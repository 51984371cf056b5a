// Helpers shared by the cumulative-operator tests: typed buffers, schedules to try, an oracle.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/scan_types.hpp"
#include "hetkern/hetkern.hpp"

namespace hk::test {

using detail::float16_t;

/// Every scan strategy, with defaults and with awkward explicit parameters.
inline std::vector<Schedule> all_scan_schedules() {
  std::vector<Schedule> out = {Schedule()};  // the default choice
  for (const auto& s : strategies(Operator::cumulative_sum)) out.push_back(Schedule(s.name));
  for (const char* text : {"scan.tiled(tile=1)", "scan.tiled(tile=3)", "scan.tiled(tile=4096)",
                           "scan.parallel(tile=1, threads=3)", "scan.parallel(tile=7, threads=2)",
                           "scan.blocked(block=16, threads=3)", "scan.blocked(block=17, threads=2)",
                           "scan.blocked(block=1000000, threads=1)", "scan.tiled(tile=5, stream=1)",
                           "scan.parallel(tile=2, threads=2, stream=1)",
                           "scan.blocked(block=33, threads=2, stream=1)"})
    out.push_back(Schedule::parse(text));
#ifdef HETKERN_OFFLOAD
  // Few teams and threads, one or a few items: many tiles, chunks and look-backs per line.
  for (const char* text : {"scan.offload_rows(teams=3, threads=32, items=1)",
                           "scan.offload_rows(teams=2, threads=64, items=3)",
                           // Striped tiles (16-byte accesses) with a partial warp, reading ahead.
                           "scan.offload_rows(teams=2, threads=48, items=8, ahead=2)",
                           // A warp a line: fewer warps than lines, every vector count, teams with
                           // one and with several warps.
                           "scan.offload_warp_rows(teams=1, threads=32, vectors=1)",
                           "scan.offload_warp_rows(teams=2, threads=64, vectors=3)",
                           "scan.offload_warp_rows(teams=3, threads=96, vectors=4)",
                           "scan.offload_columns(teams=2, threads=32, chunks=1)",
                           "scan.offload_columns(teams=3, threads=32, chunks=5)",
                           // One pass: a partial warp, lines per warp not dividing 32, no shuffles.
                           "scan.offload_columns(teams=2, threads=48, chunks=1, items=3, width=8)",
                           "scan.offload_columns(teams=3, threads=64, chunks=1, items=1, width=3)",
                           "scan.offload_columns(teams=1, threads=32, chunks=1, items=8, width=256)",
                           // Several warps per block (folds through team memory), with a partial
                           // warp, and lines per warp not dividing 32; the next tile in registers.
                           "scan.offload_columns(teams=2, threads=80, chunks=1, items=2, width=4, stages=1)",
                           "scan.offload_columns(teams=3, threads=256, chunks=1, items=3, width=12, stages=1)",
                           // The same through rings of two, three and eight tiles in team memory.
                           "scan.offload_columns(teams=2, threads=80, chunks=1, items=2, width=4, stages=3)",
                           "scan.offload_columns(teams=3, threads=256, chunks=1, items=3, width=12, stages=2)",
                           "scan.offload_columns(teams=2, threads=48, chunks=1, items=3, width=8, stages=8)",
                           // 480 threads: 4-byte integers take 15 warps, other types 8.
                           "scan.offload_columns(teams=2, threads=480, chunks=1, items=5, width=16)",
                           "scan.offload_columns(teams=2, threads=480, chunks=1, items=5, width=16, stages=1)",
                           // Chunks chained by look-back: more teams than units and fewer, one
                           // warp and several with a partial one, rings and registers.
                           "scan.offload_columns(teams=64, threads=64, chunks=3, items=2, width=8, stages=3)",
                           "scan.offload_columns(teams=2, threads=80, chunks=7, items=1, width=4, stages=1)",
                           "scan.offload_columns(teams=3, threads=48, chunks=4, items=3, width=12, stages=2)",
                           "scan.offload_columns(teams=5, threads=256, chunks=2, items=2, width=3)",
                           "scan.offload_chained(teams=3, threads=32, items=1)",
                           "scan.offload_chained(teams=4, threads=32, items=3)",
                           // Runs of 16 or 32 bytes: tiles staged through team memory too.
                           "scan.offload_chained(teams=3, threads=32, items=4)",
                           "scan.offload_chained(teams=2, threads=64, items=8)",
                           // 33 threads: a partial warp, and chunks that wrap across runs as a
                           // thread steps through a staged tile.
                           "scan.offload_chained(teams=3, threads=33, items=8)",
                           // Seven warps on a staged tile: runs of 64 bytes of int32 and 32 of
                           // float16 (two buffers and three), of 48 of float32 (three buffers).
                           "scan.offload_chained(teams=3, threads=224, items=16)",
                           "scan.offload_chained(teams=3, threads=224, items=12)",
                           // The lines shared between the device and the host, and all to either.
                           "scan.split(gpu_share=500, threads=3)", "scan.split(gpu_share=1000)",
                           "scan.split(gpu_share=0, threads=2)"})
    out.push_back(Schedule::parse(text));
#endif
  return out;
}

inline std::string label(const Schedule& s) { return s.empty() ? "(default)" : s.to_string(); }

/// Whether `s` gives work to an offload device (an offload strategy, or scan.split with a device
/// share, by default 250), which refuses float64 and bfloat16 (host types only).
inline bool offload_refuses(DataType type, const Schedule& s) {
  const bool device_part = s.strategy().find(".offload") != std::string::npos ||
                           (s.strategy() == "scan.split" && s.find("gpu_share").value_or("250") != "0");
  return (type == DataType::float64 || type == DataType::bfloat16) && device_part;
}

/// Values as a float32 tensor of the given sizes, packed.
inline std::vector<float> floats(std::initializer_list<float> v) { return v; }

using detail::bfloat16_t;

/// A stored value as long double, exactly, for comparisons.
template <class T> long double as_real(T v) {
  if constexpr (std::is_same_v<T, bfloat16_t>)
    return static_cast<long double>(static_cast<float>(v));
  else
    return static_cast<long double>(v);
}

/// One float16 ulp at magnitude |v| (subnormal spacing below the normal range).
inline long double f16_ulp(long double v) {
  const long double a = std::fabs(v);
  if (a < 0x1p-14L) return 0x1p-24L;
  return std::ldexp(1.0L, std::ilogb(double(a)) - 10);
}

/// One bfloat16 ulp at magnitude |v| (7 fraction bits, float32's exponent range).
inline long double bf16_ulp(long double v) {
  const long double a = std::fabs(v);
  if (a < 0x1p-126L) return 0x1p-133L;
  return std::ldexp(1.0L, std::ilogb(double(a)) - 7);
}

/// The spec's accuracy for a floating-point output y of a line of `length` elements, against its
/// exact prefix (`exact`, with `abs_sum` the sum of the magnitudes folded into it):
/// float32: one rounding plus 2^-45 of the magnitudes (sums) or 2^-23 relative (products);
/// float64: one rounding plus length * 2^-104 of the magnitudes, the double-double accumulator's
/// own error (products: relative, plus `oracle_rel`, the long double oracle's error);
/// float16 and bfloat16: one ulp of their own.
template <class T>
long double scan_bound(long double exact, long double abs_sum, std::int64_t length, bool product,
                       long double oracle_rel = 0) {
  const long double e = std::fabs(exact);
  if constexpr (std::is_same_v<T, float>)
    return product ? 0x1p-23L * e : 0x1p-24L * e + 0x1p-45L * abs_sum;
  else if constexpr (std::is_same_v<T, double>)
    return 0x1p-53L * e + (long double)(length + 2) * 0x1p-104L * (product ? e : abs_sum) + oracle_rel * e;
  else if constexpr (std::is_same_v<T, bfloat16_t>)
    return bf16_ulp(exact);
  else
    return f16_ulp(exact);
}

}  // namespace hk::test

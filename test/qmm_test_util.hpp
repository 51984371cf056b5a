// Helpers shared by the QuantizedLinearMatMul tests: tensors that own strided storage full of junk,
// an oracle written from the specification alone (it shares no code with the library), and the
// list of schedules every case runs under.
//
// The oracle follows docs/operators.md literally:
//   acc  = sum_k (A - za)(B - zb) in 64-bit integers,
//   mult = float32(float32(sa * sb) / sy), evaluated here in double and rounded once to float
//          (exact products/quotients of floats rounded from double equal the float operations),
//   y    = clamp(RNE(acc * mult) + zy), with acc * mult formed exactly in long double (x87: 64-bit
//          significand, so exact for |acc| < 2^40) and RNE done by hand, not by the FPU mode.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "isa_test_util.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif

namespace qmmt {

using i64 = std::int64_t;
using hk::DataType;

static_assert(std::numeric_limits<long double>::digits >= 64,
              "the oracle needs an x87-style long double to form acc * multiplier exactly");

inline int qmin(DataType t) { return t == DataType::int8 ? -128 : 0; }
inline int qmax(DataType t) { return t == DataType::int8 ? 127 : 255; }

inline std::string dims(const std::vector<i64>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

inline std::vector<i64> packed_strides(const std::vector<i64>& sizes) {
  std::vector<i64> s(sizes.size());
  i64 run = 1;
  for (int d = int(sizes.size()) - 1; d >= 0; --d) {
    s[d] = run;
    run *= sizes[d];
  }
  return s;
}

/// Elements from a tensor's first to its last (non-negative strides), both included.
inline i64 element_reach(const std::vector<i64>& sizes, const std::vector<i64>& strides) {
  i64 reach = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) reach += (sizes[d] - 1) * strides[d];
  return reach;
}

/// Calls fn(idx) for every index of `sizes`, last dimension fastest.
template <class F>
void for_each_index(const std::vector<i64>& sizes, F&& fn) {
  for (i64 n : sizes)
    if (n <= 0) return;
  std::vector<i64> idx(sizes.size(), 0);
  for (;;) {
    fn(static_cast<const std::vector<i64>&>(idx));
    int d = int(sizes.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// A tensor owning its storage: the span its elements reach plus `guard` bytes on each side, every
/// byte random at first, so padding, gaps and guards hold junk that a correct call leaves alone.
struct Buffer {
  static constexpr i64 guard = 64;

  DataType dtype = DataType::uint8;
  std::vector<i64> sizes, strides;
  std::vector<unsigned char> bytes;

  Buffer() = default;
  Buffer(DataType t, std::vector<i64> sz, std::vector<i64> st, std::mt19937_64& rng)
      : dtype(t), sizes(std::move(sz)), strides(st.empty() ? packed_strides(sizes) : std::move(st)) {
    bytes.resize(std::size_t(2 * guard + element_reach(sizes, strides) * elem()));
    for (auto& c : bytes) c = static_cast<unsigned char>(rng());
  }

  i64 elem() const { return i64(hk::size_of(dtype)); }
  int rank() const { return int(sizes.size()); }
  i64 offset(const std::vector<i64>& idx) const {  // in elements, from the spec's formula
    i64 o = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
    return o;
  }
  unsigned char* base() { return bytes.data() + guard; }
  const unsigned char* base() const { return bytes.data() + guard; }
  hk::TensorDesc desc() const { return hk::TensorDesc(dtype, sizes, strides); }
  hk::ConstTensor cview() const { return {desc(), base()}; }
  hk::Tensor view() { return {desc(), base()}; }

  int q(const std::vector<i64>& idx) const {
    const unsigned char c = base()[offset(idx)];
    return dtype == DataType::int8 ? int(static_cast<std::int8_t>(c)) : int(c);
  }
  void set_q(const std::vector<i64>& idx, int v) {
    base()[offset(idx)] = static_cast<unsigned char>(v & 0xff);
  }
  float f(const std::vector<i64>& idx) const {
    float v;
    std::memcpy(&v, base() + offset(idx) * 4, 4);
    return v;
  }
  void set_f(const std::vector<i64>& idx, float v) { std::memcpy(base() + offset(idx) * 4, &v, 4); }
  /// Byte positions (into `bytes`) that hold elements.
  std::vector<bool> element_mask() const {
    std::vector<bool> mask(bytes.size(), false);
    for_each_index(sizes, [&](const std::vector<i64>& idx) {
      for (i64 b = 0; b < elem(); ++b) mask[std::size_t(guard + offset(idx) * elem() + b)] = true;
    });
    return mask;
  }
  std::string describe() const {
    return std::string(hk::name_of(dtype)) + dims(sizes) + " strides " + dims(strides);
  }
};

/// A tensor holding `values` in row-major logical order, cycled when shorter than the tensor (so
/// one matrix's values fill every batch). Strides default to packed.
inline Buffer literal_q(DataType t, std::vector<i64> sizes, const std::vector<int>& values,
                        std::mt19937_64& rng, std::vector<i64> strides = {}) {
  Buffer buf(t, std::move(sizes), std::move(strides), rng);
  std::size_t i = 0;
  for_each_index(buf.sizes, [&](const std::vector<i64>& idx) { buf.set_q(idx, values[i++ % values.size()]); });
  return buf;
}

inline Buffer literal_f(std::vector<i64> sizes, const std::vector<float>& values, std::mt19937_64& rng,
                        std::vector<i64> strides = {}) {
  Buffer buf(DataType::float32, std::move(sizes), std::move(strides), rng);
  std::size_t i = 0;
  for_each_index(buf.sizes, [&](const std::vector<i64>& idx) { buf.set_f(idx, values[i++ % values.size()]); });
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Layouts

enum class Layout { packed, padded, transposed, transposed_padded, random };
inline constexpr Layout all_layouts[] = {Layout::packed, Layout::padded, Layout::transposed,
                                         Layout::transposed_padded, Layout::random};

/// Strides for `sizes` that never make two elements share an address: dimensions are laid out
/// innermost first in the order the layout asks for, each stride stepping over everything the
/// previous ones reach (plus padding). `transposed` swaps the two matrix dimensions (column-major
/// matrices); `padded` adds 1 to 3 junk elements per level and sometimes a gap between elements.
inline std::vector<i64> make_strides(const std::vector<i64>& sizes, Layout layout, std::mt19937_64& rng) {
  const int r = int(sizes.size());
  std::vector<int> order;  // innermost first
  for (int d = r - 1; d >= 0; --d) order.push_back(d);
  if ((layout == Layout::transposed || layout == Layout::transposed_padded) && r >= 2)
    std::swap(order[0], order[1]);
  if (layout == Layout::random) std::shuffle(order.begin(), order.end(), rng);
  const bool pad = layout == Layout::padded || layout == Layout::transposed_padded ||
                   (layout == Layout::random && rng() % 2);
  std::vector<i64> st(r);
  i64 run = pad ? i64(1 + rng() % 2) : 1;
  for (int d : order) {
    st[d] = run;
    run = run * sizes[d] + (pad ? i64(1 + rng() % 3) : 0);
  }
  return st;
}

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::packed: return "packed";
    case Layout::padded: return "padded";
    case Layout::transposed: return "transposed";
    case Layout::transposed_padded: return "transposed_padded";
    case Layout::random: return "random";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Problems

/// How a quantization parameter is given: one value, or one per row (A, output) / column (B).
enum class Gran { tensor, row, column };

struct ParamShape {
  Gran gran = Gran::tensor;
  int rank = 1;  // 1..4, right-aligned; per-row needs rank >= 2
};

/// Sizes of a parameter tensor, right-aligned against {M,K} (row) or {K,N} (column).
inline std::vector<i64> param_sizes(ParamShape s, i64 count) {
  std::vector<i64> sz(std::size_t(s.rank), 1);
  if (s.gran == Gran::row) sz[std::size_t(s.rank - 2)] = count;
  if (s.gran == Gran::column) sz[std::size_t(s.rank - 1)] = count;
  return sz;
}

/// Index of value i (row or column i) of a parameter tensor, read from its sizes.
inline std::vector<i64> param_index(const Buffer& p, i64 i) {
  std::vector<i64> idx(p.sizes.size(), 0);
  const int r = p.rank();
  if (r >= 2 && p.sizes[r - 2] > 1) idx[r - 2] = i;
  if (p.sizes[r - 1] > 1) idx[r - 1] = i;
  return idx;
}

struct Problem {
  std::vector<i64> batch;  // 0 to 2 batch sizes of the output (A's and B's broadcast to them)
  i64 M = 1, N = 1, K = 1;
  Buffer a, b, y, a_scale, b_scale, y_scale;
  std::optional<Buffer> a_zero, b_zero, y_zero;

  hk::QuantizedMatMulArgs args() const {
    hk::QuantizedMatMulArgs x;
    x.a = a.cview();
    x.b = b.cview();
    x.a_scale = a_scale.cview();
    x.b_scale = b_scale.cview();
    x.output_scale = y_scale.cview();
    if (a_zero) x.a_zero_point = a_zero->cview();
    if (b_zero) x.b_zero_point = b_zero->cview();
    if (y_zero) x.output_zero_point = y_zero->cview();
    return x;
  }

  std::string describe() const {
    std::ostringstream s;
    s << "a " << a.describe() << ", b " << b.describe() << ", output " << y.describe()
      << ", a_scale " << dims(a_scale.sizes) << ", b_scale " << dims(b_scale.sizes)
      << ", output_scale " << dims(y_scale.sizes);
    s << ", a_zero_point " << (a_zero ? dims(a_zero->sizes) : "absent");
    s << ", b_zero_point " << (b_zero ? dims(b_zero->sizes) : "absent");
    s << ", output_zero_point " << (y_zero ? dims(y_zero->sizes) : "absent");
    return s.str();
  }
};

inline int zero_at(const std::optional<Buffer>& z, i64 i) { return z ? z->q(param_index(*z, i)) : 0; }
inline float scale_at(const Buffer& s, i64 i) { return s.f(param_index(s, i)); }

/// Exact accumulators, one per output element in row-major order of the output sizes.
inline std::vector<i64> oracle_accumulators(const Problem& p) {
  std::vector<i64> acc;
  const int r = p.y.rank(), ra = p.a.rank(), rb = p.b.rank();
  for_each_index(p.y.sizes, [&](const std::vector<i64>& idx) {
    const i64 m = idx[r - 2], n = idx[r - 1];
    // numpy.matmul's broadcast: batch dimensions right-aligned, an absent or size-1 one repeats.
    i64 a_off = 0, b_off = 0;
    for (int d = 0; d < r - 2; ++d) {
      const int da = d - (r - ra), db = d - (r - rb);
      if (da >= 0 && p.a.sizes[da] > 1) a_off += idx[d] * p.a.strides[da];
      if (db >= 0 && p.b.sizes[db] > 1) b_off += idx[d] * p.b.strides[db];
    }
    const int za = zero_at(p.a_zero, m), zb = zero_at(p.b_zero, n);
    const bool a_signed = p.a.dtype == DataType::int8, b_signed = p.b.dtype == DataType::int8;
    i64 sum = 0;
    for (i64 k = 0; k < p.K; ++k) {
      const unsigned char xa = p.a.base()[a_off + m * p.a.strides[ra - 2] + k * p.a.strides[ra - 1]];
      const unsigned char xb = p.b.base()[b_off + k * p.b.strides[rb - 2] + n * p.b.strides[rb - 1]];
      const i64 va = a_signed ? i64(static_cast<std::int8_t>(xa)) : i64(xa);
      const i64 vb = b_signed ? i64(static_cast<std::int8_t>(xb)) : i64(xb);
      sum += (va - za) * (vb - zb);
    }
    acc.push_back(sum);
  });
  return acc;
}

/// float32(float32(sa * sb) / sy). A product or quotient of two floats computed in double and then
/// rounded to float equals the correctly rounded float operation, so this is independent of how
/// the compiler evaluates float expressions.
inline float canonical_multiplier(float sa, float sb, float sy) {
  const float product = static_cast<float>(double(sa) * double(sb));
  return static_cast<float>(double(product) / double(sy));
}

/// Round half to even of an exactly represented value, done by hand.
inline long double rne(long double v) {
  const long double fl = std::floor(v);
  const long double frac = v - fl;  // exact: both share v's exponent range
  if (frac > 0.5L) return fl + 1;
  if (frac < 0.5L) return fl;
  return std::fmod(fl, 2.0L) == 0 ? fl : fl + 1;
}

inline int saturate(long double v, DataType t) {
  return int(std::clamp(v, (long double)qmin(t), (long double)qmax(t)));
}

/// What each output element may hold: exactly `lo` when lo == hi, otherwise either value.
struct Expected {
  std::vector<int> lo, hi;
  std::vector<i64> acc;
  i64 tolerated = 0;  // elements where the near-tie tolerance applies
};

/// The oracle. With `tolerate_near_ties` (scales that are not powers of two) an element may also
/// take the other neighbour of a value within 1e-6 (relative) of a .5 boundary, as the spec allows;
/// the value judged is both acc * canonical multiplier and the real acc * sa * sb / sy.
inline Expected oracle(const Problem& p, bool tolerate_near_ties) {
  Expected e;
  e.acc = oracle_accumulators(p);
  const int r = p.y.rank();
  const DataType t = p.y.dtype;
  std::size_t i = 0;
  for_each_index(p.y.sizes, [&](const std::vector<i64>& idx) {
    const i64 m = idx[r - 2], n = idx[r - 1];
    const i64 acc = e.acc[i++];
    if (acc >= (i64(1) << 40) || acc <= -(i64(1) << 40))
      ADD_FAILURE() << "oracle: accumulator " << acc << " too wide for an exact long double product";
    const float sa = scale_at(p.a_scale, m), sb = scale_at(p.b_scale, n), sy = scale_at(p.y_scale, m);
    const int zy = zero_at(p.y_zero, m);
    const long double v = (long double)acc * (long double)canonical_multiplier(sa, sb, sy);
    const int exact = saturate(rne(v) + zy, t);
    int lo = exact, hi = exact;
    if (tolerate_near_ties) {
      const long double real = (long double)acc * ((long double)sa * (long double)sb / (long double)sy);
      for (long double x : {v, real}) {
        const long double fl = std::floor(x);
        if (std::fabs(x - (fl + 0.5L)) <= 1e-6L * std::fabs(x)) {
          lo = std::min(lo, saturate(fl + zy, t));
          hi = std::max(hi, saturate(fl + 1 + zy, t));
        }
      }
      if (lo != hi) ++e.tolerated;
    }
    e.lo.push_back(lo);
    e.hi.push_back(hi);
  });
  return e;
}

// ---------------------------------------------------------------------------------------------
// Schedules

/// Every strategy the library lists, bare (library-chosen parameters), with every parameter at its
/// minimum, at its maximum (the first and last of a parameter's named choices) (threads capped at 3: the test machine has 2 cores), and in `random_mixes`
/// random mixtures of small, odd, prime and oversized values; plus a few literal texts and the
/// empty schedule (library's choice). Unknown strategies added later are picked up automatically.
inline std::vector<hk::Schedule> test_schedules(std::mt19937_64& rng, int random_mixes = 4) {
  std::vector<hk::Schedule> out;
  out.emplace_back();  // empty: the heuristic
  const auto pick = [&](const hk::ParamInfo& p, int mode) -> i64 {
    if (!p.choices.empty()) return mode < 2 ? (mode == 0 ? p.min : p.max) : p.min + i64(rng() % p.choices.size());
    // Few threads: many blocks per thread. Offload strategies start at a warp (32).
    if (p.key == "threads") {
      if (mode == 0) return std::max<i64>(p.min, 1);
      if (mode == 1) return std::clamp<i64>(3, p.min, p.max);
      return std::clamp<i64>(i64(1 + rng() % 3), p.min, p.max) + (p.min > 3 ? i64(rng() % 3) * 32 : 0);
    }
#ifdef HETKERN_OFFLOAD
    // A split schedule may name only the devices there are.
    if (p.key == "devices") return mode == 1 ? i64(hk::offload_device_count()) : p.min;
#endif
    if (mode == 0) return p.min;
    if (mode == 1) return p.max;
    static constexpr i64 choices[] = {1, 2, 3, 4, 5, 7, 11, 13, 16, 17, 31, 64, 257};
    i64 v = choices[rng() % std::size(choices)];
    if (rng() % 8 == 0) v = p.max;
    return std::clamp(v, p.min, p.max);
  };
  for (const auto& s : hk::strategies(hk::Operator::quantized_linear_matmul)) {
    out.emplace_back(s.name);
    if (s.params.empty()) continue;
    for (int mode = 0; mode < 2 + random_mixes; ++mode) {
      hk::Schedule sc(s.name);
      for (const auto& p : s.params) {
        const i64 v = pick(p, std::min(mode, 2));
        if (p.choices.empty())
          sc.set(p.key, v);
        else
          sc.set(p.key, p.choices[std::size_t(v - p.min)]);
      }
      out.push_back(sc);
    }
  }
  for (const char* text : {"qmm.tiled(mc=1, nc=1, kc=1)", "qmm.tiled(mc=3, nc=7, kc=5)",
                           "qmm.tiled(kc=1)", "qmm.parallel(mc=1, nc=1, kc=1, threads=2)",
                           "qmm.parallel(mc=7, nc=3, kc=13, threads=3)", "qmm.parallel(threads=1)"})
    out.push_back(hk::Schedule::parse(text));
  return out;
}

inline std::string schedule_name(const hk::Schedule& s) {
  return s.empty() ? std::string("<empty schedule>") : s.to_string();
}

// ---------------------------------------------------------------------------------------------
// Running and checking

/// Checks every element of the output against `e`, reporting the first five that differ.
inline void expect_outputs(const Problem& p, const Expected& e, const std::string& where) {
  int reported = 0;
  std::size_t i = 0;
  for_each_index(p.y.sizes, [&](const std::vector<i64>& idx) {
    const int got = p.y.q(idx);
    if ((got < e.lo[i] || got > e.hi[i]) && reported++ < 5)
      ADD_FAILURE() << "output" << dims(idx) << " = " << got << ", expected "
                    << (e.lo[i] == e.hi[i] ? std::to_string(e.lo[i])
                                           : std::to_string(e.lo[i]) + " or " + std::to_string(e.hi[i]))
                    << " (acc " << e.acc[i] << ")\n  " << where;
    ++i;
  });
}

/// Runs the problem under `schedule` on fresh junk in the output and checks every element against
/// `e`, that no byte of the output other than its elements changed, and that no input changed.
/// The output is restored to its junk afterwards so the next schedule cannot inherit results.
inline void run_and_check(Problem& p, const hk::Schedule& schedule, const Expected& e,
                          const std::string& context = "", const hk::PackedB* packed = nullptr) {
  const std::vector<unsigned char> junk = p.y.bytes;
  const std::vector<const Buffer*> inputs = {&p.a, &p.b, &p.a_scale, &p.b_scale, &p.y_scale};
  std::vector<std::vector<unsigned char>> before;
  for (const Buffer* in : inputs) before.push_back(in->bytes);
  std::vector<std::vector<unsigned char>> zeros_before;
  for (const auto* z : {&p.a_zero, &p.b_zero, &p.y_zero})
    zeros_before.push_back(*z ? (*z)->bytes : std::vector<unsigned char>{});

  const std::string where = "schedule " + schedule_name(schedule) + "; isa " +
                            hk::name_of(hk::active_isa()) + (packed ? "; B packed by pack_b" : "") +
                            "; " + p.describe() + (context.empty() ? "" : "; " + context);
  try {
    hk::QuantizedMatMulArgs args = p.args();
    if (packed) {
      args.b = {};
      args.packed_b = packed;
    }
    hk::quantized_linear_matmul(args, p.y.view(), schedule);
  } catch (const std::exception& ex) {
    ADD_FAILURE() << "threw " << ex.what() << "\n  " << where;
    p.y.bytes = junk;
    return;
  }
  expect_outputs(p, e, where);
  const std::vector<bool> mask = p.y.element_mask();
  for (std::size_t k = 0; k < junk.size(); ++k)
    if (!mask[k] && p.y.bytes[k] != junk[k]) {
      ADD_FAILURE() << "byte " << k - std::size_t(Buffer::guard)
                    << " of the output storage (padding or guard) was written\n  " << where;
      break;
    }
  for (std::size_t k = 0; k < inputs.size(); ++k)
    EXPECT_TRUE(inputs[k]->bytes == before[k]) << "an input was written\n  " << where;
  std::size_t zi = 0;
  for (const auto* z : {&p.a_zero, &p.b_zero, &p.y_zero}) {
    if (*z) {
      EXPECT_TRUE((*z)->bytes == zeros_before[zi]) << "a zero point was written\n  " << where;
    }
    ++zi;
  }
  p.y.bytes = junk;
}

/// Runs under every schedule in `schedules` at every instruction-set level this machine has, then
/// the reference, the default and one parallel schedule again with B packed by hk::pack_b.
/// Whether the library takes B packed for this problem: one matrix for every batch, or one per
/// batch of the output (a B whose batches broadcast against A's is passed unpacked).
inline bool packed_b_applies(const Problem& p) {
  std::vector<i64> b_batch(p.b.sizes.begin(), p.b.sizes.end() - 2), y_batch(p.y.sizes.begin(), p.y.sizes.end() - 2);
  bool one_matrix = true;
  for (std::size_t d = 0; d < b_batch.size(); ++d) one_matrix &= b_batch[d] == 1 || p.b.strides[d] == 0;
  while (b_batch.size() < y_batch.size()) b_batch.insert(b_batch.begin(), 1);
  return one_matrix || b_batch == y_batch;
}

inline void check_all(Problem& p, const std::vector<hk::Schedule>& schedules, const Expected& e,
                      const std::string& context = "") {
  const std::optional<hk::PackedB> packed =
      packed_b_applies(p) ? std::optional<hk::PackedB>(hk::pack_b(p.b.cview())) : std::nullopt;
  bool first_isa = true;
  for (const hk::Isa isa : hk::test::runnable_isas()) {
    const hk::test::IsaCap cap(isa);
    for (const auto& s : schedules) {
      // Offload schedules run no host kernel: one instruction-set level checks them.
      if (first_isa || s.strategy().rfind("qmm.offload", 0) != 0) run_and_check(p, s, e, context);
    }
    first_isa = false;
    if (packed)
      for (const char* text : {"", "reference", "qmm.parallel(mc=16, nc=32, kc=64, threads=3)"})
        run_and_check(p, text[0] ? hk::Schedule::parse(text) : hk::Schedule(), e, context, &*packed);
  }
}

}  // namespace qmmt

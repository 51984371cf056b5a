// quantized_linear_matmul and pack_b with descriptors, parameter tensors and values drawn from the
// fuzzer's bytes, buffers sized exactly from the descriptors. Every call throws hk::Error and
// leaves the output untouched, or succeeds and matches the reference schedule to the bit (the
// operator is exact). Invalid descriptors by the independent computation here must be refused;
// descriptors too large to back with memory go through default_schedule (validation only), and
// pack_b must refuse a B whose packed form could never be allocated.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <optional>
#include <vector>

#include "test/fuzz/fuzz_support.hpp"

using namespace hk;

namespace {

const char* const schedules[] = {"",
                                 "reference",
                                 "qmm.tiled",
                                 "qmm.tiled(mc=2, nc=16, kc=64)",
                                 "qmm.parallel(threads=2)",
                                 "qmm.parallel(mc=16, nc=32, kc=64, threads=3)",
                                 "scan.tiled"};

DataType draw_matrix_type(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) return in.PickValueInArray(fuzz::all_types);
  return in.ConsumeBool() ? DataType::int8 : DataType::uint8;
}

// A tensor with real storage: its descriptor and exactly-sized bytes.
struct Owned {
  TensorDesc desc;
  std::vector<unsigned char> bytes;
  std::int64_t span = 0;  // -1: invalid sizes or strides, or a span beyond 2^63
  ConstTensor view() const { return {desc, bytes.data()}; }
};

// sizes, possibly with one of them replaced by a drawn size.
std::vector<std::int64_t> perturb(FuzzedDataProvider& in, std::vector<std::int64_t> sizes) {
  if (!sizes.empty() && in.ConsumeIntegralInRange<int>(0, 7) == 0)
    sizes[in.ConsumeIntegralInRange<std::size_t>(0, sizes.size() - 1)] = fuzz::draw_size(in);
  return sizes;
}

// Storage for spans up to max_buffer_bytes; a one-byte stand-in (never read) beyond that.
std::optional<Owned> make_owned(FuzzedDataProvider& in, DataType type, const std::vector<std::int64_t>& sizes) {
  const auto desc = fuzz::make_desc(type, sizes, fuzz::draw_strides(in, sizes.size()));
  if (!desc) return std::nullopt;
  const auto span = fuzz::byte_span(*desc);
  Owned t{*desc, {}, span ? *span : -1};
  t.bytes = fuzz::make_buffer(in, span && *span <= fuzz::max_buffer_bytes ? *span : 1);
  return t;
}

// A parameter tensor: per tensor, per row {M,1}, per column {1,N}, or drawn sizes.
std::optional<Owned> make_param(FuzzedDataProvider& in, DataType type, std::int64_t M, std::int64_t N) {
  std::vector<std::int64_t> sizes;
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0: sizes = {1}; break;
    case 1: sizes = {M, 1}; break;
    case 2: sizes = {1, N}; break;
    case 3: sizes = {1, 1, 1}; break;
    default: sizes = fuzz::draw_sizes(in, 0, 5);
  }
  auto t = make_owned(in, type, sizes);
  if (t && type == DataType::float32 && in.ConsumeBool()) {
    // Mostly positive finite scales, so that calls get past the value checks.
    for (std::size_t i = 0; i + 4 <= t->bytes.size(); i += 4) {
      const float v = in.ConsumeFloatingPointInRange<float>(1e-3f, 4.0f);
      std::memcpy(&t->bytes[i], &v, 4);
    }
  }
  return t;
}

std::int64_t saturating_product(std::int64_t a, std::int64_t b) {
  return std::int64_t(std::min<__int128>(__int128(a) * b, __int128(1) << 62));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int rank = in.ConsumeIntegralInRange<int>(0, 9) == 0 ? in.ConsumeIntegralInRange<int>(0, 6)
                                                             : in.ConsumeIntegralInRange<int>(2, 4);
  std::vector<std::int64_t> batch;
  for (int k = 0; k + 2 < rank; ++k) batch.push_back(in.ConsumeIntegralInRange<std::int64_t>(1, 3));
  const std::int64_t M = fuzz::draw_size(in), N = fuzz::draw_size(in);
  const std::int64_t K = in.ConsumeBool() ? fuzz::draw_size(in) : in.ConsumeIntegralInRange<std::int64_t>(1, 80);
  const auto with = [&](std::int64_t r, std::int64_t c) {
    auto s = batch;
    if (rank >= 1) s.push_back(c);
    if (rank >= 2) s.insert(s.end() - 1, r);
    return perturb(in, s);
  };
  auto a = make_owned(in, draw_matrix_type(in), with(M, K));
  auto b = make_owned(in, draw_matrix_type(in), with(K, N));
  auto y = make_owned(in, draw_matrix_type(in), with(M, N));
  auto sa = make_param(in, DataType::float32, M, N);
  auto sb = make_param(in, DataType::float32, M, N);
  auto sy = make_param(in, DataType::float32, M, N);
  if (!a || !b || !y || !sa || !sb || !sy) return 0;
  std::optional<Owned> zero[3];
  for (int i = 0; i < 3; ++i)
    if (in.ConsumeBool()) {
      const DataType own = i == 0 ? a->desc.dtype() : i == 1 ? b->desc.dtype() : y->desc.dtype();
      zero[i] = make_param(in, in.ConsumeIntegralInRange<int>(0, 5) ? own : draw_matrix_type(in), M, N);
      if (!zero[i]) return 0;
    }
  // Parameters are read during validation: they always need real storage.
  for (const Owned* p : {&*sa, &*sb, &*sy, zero[0] ? &*zero[0] : nullptr, zero[1] ? &*zero[1] : nullptr,
                         zero[2] ? &*zero[2] : nullptr})
    if (p && (p->span < 0 || p->span > fuzz::max_buffer_bytes)) return 0;

  QuantizedMatMulArgs q;
  q.a = a->view();
  q.b = b->view();
  q.a_scale = sa->view();
  q.b_scale = sb->view();
  q.output_scale = sy->view();
  if (zero[0]) q.a_zero_point = zero[0]->view();
  if (zero[1]) q.b_zero_point = zero[1]->view();
  if (zero[2]) q.output_zero_point = zero[2]->view();
  const char* schedule_text = in.PickValueInArray(schedules);
  const Schedule schedule = *schedule_text ? Schedule::parse(schedule_text) : Schedule();

  const bool invalid = a->span < 0 || b->span < 0 || y->span < 0;
  // Bounds batches * M * K * N (by batches^2 * M * K^2 * N) so that each input runs quickly.
  const bool small = !invalid && a->span <= fuzz::max_buffer_bytes && b->span <= fuzz::max_buffer_bytes &&
                     y->span <= fuzz::max_buffer_bytes &&
                     saturating_product(fuzz::logical_count(a->desc), fuzz::logical_count(b->desc)) <= (1 << 22);

  // pack_b: refuses, or packs what it was given; beyond any allocatable size it must refuse.
  std::optional<PackedB> packed;
  if (b->span >= 0 && b->span <= fuzz::max_buffer_bytes && b->desc.rank() >= 2 && in.ConsumeBool()) {
    const std::int64_t kn = saturating_product(b->desc.size(b->desc.rank() - 2), b->desc.size(b->desc.rank() - 1));
    // Between the two bounds packing would be legal but could take gigabytes (batches count too).
    if (fuzz::logical_count(b->desc) <= (1 << 18) || kn > (std::int64_t(1) << 48)) {
      try {
        packed = pack_b(b->view());
      } catch (const Error&) {
      }
      fuzz::require(!(packed && kn > (std::int64_t(1) << 48)), "pack_b accepted a B no machine can hold");
      if (packed)
        fuzz::require(packed->desc().dtype() == b->desc.dtype() && packed->desc().rank() == b->desc.rank() &&
                          std::equal(b->desc.sizes().begin(), b->desc.sizes().end(), packed->desc().sizes().begin()) &&
                          packed->packed_bytes() > 0,
                      "pack_b returned an inconsistent packed B");
    }
  }

  if (!small) {
    // Validation copies the per-row and per-column parameters, memory in proportion to M + N that
    // a real output of M x N bytes exceeds; only this harness's stand-in output makes it large.
    const std::int64_t rows = a->desc.rank() >= 2 ? a->desc.size(a->desc.rank() - 2) : 1;
    const std::int64_t cols = b->desc.rank() >= 1 ? b->desc.size(b->desc.rank() - 1) : 1;
    if (!invalid && (rows > (1 << 20) || cols > (1 << 20))) return 0;
    try {
      default_schedule(q, {y->desc, y->bytes.data()});
    } catch (const Error&) {
      return 0;
    }
    fuzz::require(!invalid, "an invalid size, stride or byte span was accepted");
    return 0;
  }
  if (packed && in.ConsumeBool()) {
    q.b = {};
    q.packed_b = &*packed;
  }
  const std::vector<unsigned char> before = y->bytes;
  try {
    quantized_linear_matmul(q, {y->desc, y->bytes.data()}, schedule);
  } catch (const Error&) {
    fuzz::require(y->bytes == before, "a refused call wrote to its output");
    return 0;
  }
  // Exact arithmetic: the reference on the unpacked B gives the same bytes, padding included.
  std::vector<unsigned char> expected = before;
  q.b = b->view();
  q.packed_b = nullptr;
  quantized_linear_matmul(q, {y->desc, expected.data()}, Schedule("reference"));
  fuzz::require(expected == y->bytes, "a schedule's result differs from the reference");
  return 0;
}

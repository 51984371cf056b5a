// Limits: sizes and strides whose byte counts overflow 64 bits or leave the address space, and
// work whose packed form no machine can allocate, are refused with hk::Error before anything is
// allocated or accessed (every buffer here is far smaller than its descriptor claims, so an access
// would fault or be reported by the sanitizers); an allocation that fails surfaces as an
// exception, not a crash.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "hetkern/hetkern.hpp"

// Sanitizer allocators abort on a failed allocation unless told to return null, which the library
// then reports as std::bad_alloc like the system allocator does.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }

namespace {

using hk::DataType;
using hk::Errc;
using hk::TensorDesc;
using i64 = std::int64_t;

constexpr i64 two_to(int e) { return i64(1) << e; }

// Bytes the descriptor spans, in 128 bits: the independent side of the overflow checks.
__int128 span_bytes(const TensorDesc& d) {
  __int128 last = 0;
  for (int k = 0; k < d.rank(); ++k) last += __int128(d.size(k) - 1) * d.stride(k);
  return (last + 1) * __int128(hk::size_of(d.dtype()));
}

template <class Call> hk::Error refusal(Call call) {
  try {
    call();
  } catch (const hk::Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return hk::Error(Errc::invalid_parameter, "", "", "");
}

hk::QuantizedMatMulArgs broadcast_qmm(i64 M, i64 K, i64 N, const std::vector<unsigned char>& bytes,
                                      const float* scale) {
  hk::QuantizedMatMulArgs q;
  q.a = {TensorDesc(DataType::uint8, {M, K}, {0, 0}), bytes.data()};
  q.b = {TensorDesc(DataType::uint8, {K, N}, {0, 0}), bytes.data()};
  q.a_scale = q.b_scale = q.output_scale = {TensorDesc(DataType::float32, {1}), scale};
  return q;
}

TEST(Limits, ScanRefusesByteCountsBeyond64BitsBeforeAnyAccess) {
  std::vector<float> x(4), y(4);
  const hk::CumulativeOptions o{0, hk::Direction::increasing, false};
  // 2^62 elements fit 64 bits, their 2^64 bytes do not.
  const TensorDesc huge(DataType::float32, {two_to(31), two_to(31)});
  ASSERT_GT(span_bytes(huge), __int128(INT64_MAX));
  auto e = refusal([&] { hk::cumulative_sum({huge, x.data()}, {huge, y.data()}, o); });
  EXPECT_EQ(e.code(), Errc::invalid_stride);
  EXPECT_EQ(e.subject(), "input");
  EXPECT_NE(std::string(e.what()).find("exceed 64 bits"), std::string::npos) << e.what();
  // An element count beyond 64 bits.
  const TensorDesc count(DataType::int32, {two_to(32), two_to(32)}, {0, 0});
  e = refusal([&] { hk::cumulative_product({count, x.data()}, {TensorDesc(DataType::int32, {1}), y.data()}, o); });
  EXPECT_EQ(e.code(), Errc::invalid_shape);
  EXPECT_NE(std::string(e.what()).find("exceeds 64 bits"), std::string::npos) << e.what();
  // Strides alone: two elements, 2^62 elements apart.
  const TensorDesc apart(DataType::int64, {2}, {two_to(62)});
  ASSERT_GT(span_bytes(apart), __int128(INT64_MAX));
  e = refusal([&] { hk::cumulative_sum({apart, x.data()}, {TensorDesc(DataType::int64, {2}), y.data()}, o); });
  EXPECT_EQ(e.code(), Errc::invalid_stride);
}

TEST(Limits, ScanRefusesSpansThatRunPastTheEndOfTheAddressSpace) {
  // 4000 bytes from a data pointer 100 bytes below the top: the span wraps around.
  const TensorDesc d(DataType::float32, {1000});
  auto* top = reinterpret_cast<float*>(UINTPTR_MAX - 99);
  std::vector<float> ok(1000);
  const hk::CumulativeOptions o{0, hk::Direction::increasing, false};
  auto e = refusal([&] { hk::cumulative_sum({d, top}, {d, ok.data()}, o); });
  EXPECT_EQ(e.code(), Errc::invalid_stride);
  EXPECT_EQ(e.subject(), "input");
  EXPECT_NE(std::string(e.what()).find("past the end of the address space"), std::string::npos) << e.what();
  e = refusal([&] { hk::cumulative_sum({d, ok.data()}, {d, top}, o); });
  EXPECT_EQ(e.code(), Errc::invalid_stride);
  EXPECT_EQ(e.subject(), "output");
}

TEST(Limits, MatmulRefusesDepthsWhoseExactSumCouldOverflow64Bits) {
  // K = 2^47 broadcast products of |255 * 255| would reach 2^63: refused for every schedule,
  // the reference (which packs nothing) included.
  const std::vector<unsigned char> bytes(1, 255);
  const float scale = 1.0f;
  std::vector<unsigned char> out(1, 0xA5);
  const auto q = broadcast_qmm(1, two_to(47), 1, bytes, &scale);
  for (const char* s : {"reference", "qmm.tiled"}) {
    const auto e = refusal([&] {
      hk::quantized_linear_matmul(q, {TensorDesc(DataType::uint8, {1, 1}), out.data()}, hk::Schedule(s));
    });
    EXPECT_EQ(e.code(), Errc::invalid_shape) << s;
    EXPECT_NE(std::string(e.what()).find("2^47"), std::string::npos) << e.what();
  }
  EXPECT_EQ(out[0], 0xA5);
}

TEST(Limits, PackingThatNoMachineCanAllocateIsRefusedBeforeAllocating) {
  const std::vector<unsigned char> bytes(1, 7);
  // B {2^30, 2^20} broadcast from one byte: 2^50 packed bytes, beyond the 2^47 address space.
  const TensorDesc b(DataType::int8, {two_to(30), two_to(20)}, {0, 0});
  auto e = refusal([&] { hk::pack_b({b, bytes.data()}); });
  EXPECT_EQ(e.code(), Errc::invalid_shape);
  EXPECT_EQ(e.op(), "pack_b");
  EXPECT_EQ(e.subject(), "b");
  EXPECT_NE(std::string(e.what()).find("any machine can allocate"), std::string::npos) << e.what();
  // The same through the operator: K = 2^46 broadcast, below the exactness bound, but its packed
  // A' and B' would take 2^50 bytes each.
  const float scale = 1.0f;
  std::vector<unsigned char> out(1);
  const auto q = broadcast_qmm(1, two_to(46), 1, bytes, &scale);
  e = refusal([&] {
    hk::quantized_linear_matmul(q, {TensorDesc(DataType::uint8, {1, 1}), out.data()}, hk::Schedule("qmm.tiled"));
  });
  EXPECT_EQ(e.code(), Errc::invalid_shape);
  EXPECT_NE(std::string(e.what()).find("any machine can allocate"), std::string::npos) << e.what();
}

TEST(Limits, AFailedAllocationSurfacesAsBadAllocAndWritesNothing) {
  // Under the system allocator this relies on Linux refusing an allocation larger than memory
  // and swap (overcommit heuristics, the default); with overcommit "always" it would succeed.
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  overcommit >> mode;
  if (mode == 1) GTEST_SKIP() << "vm.overcommit_memory is 1: large allocations never fail";
  // K = 2^41: 32 TiB of packed A and of packed B, within the 2^47 bound but beyond any memory.
  const std::vector<unsigned char> bytes(1, 7);
  const float scale = 1.0f;
  std::vector<unsigned char> out(1, 0xA5);
  const auto q = broadcast_qmm(1, two_to(41), 1, bytes, &scale);
  EXPECT_THROW(hk::quantized_linear_matmul(q, {TensorDesc(DataType::uint8, {1, 1}), out.data()},
                                           hk::Schedule("qmm.tiled")),
               std::bad_alloc);
  EXPECT_EQ(out[0], 0xA5);
  const TensorDesc b(DataType::int8, {two_to(41), 16}, {0, 0});
  EXPECT_THROW(hk::pack_b({b, bytes.data()}), std::bad_alloc);
}

}  // namespace

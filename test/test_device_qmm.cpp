// QuantizedLinearMatMul on device-resident tensors, and the device scratch cache (offload builds;
// on a machine without a GPU the device is the host fallback).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/kept_scratch.hpp"
#include "device_test_util.hpp"
#include "qmm_test_util.hpp"

namespace {

using qmmt::Buffer;
using qmmt::OnDevice;
using qmmt::device_args;
using qmmt::DataType;
using qmmt::i64;
using qmmt::Layout;
using qmmt::Problem;

// Batched, strided and broadcast problems of both signednesses, with per-row and per-column
// parameters, sized across the kernels' 128 x 128 tiles.
Problem random_problem(std::mt19937_64& rng, int variant) {
  const DataType ta = variant % 2 ? DataType::int8 : DataType::uint8;
  const DataType tb = variant % 3 ? DataType::int8 : DataType::uint8;
  const DataType ty = variant % 4 < 2 ? DataType::uint8 : DataType::int8;
  Problem p;
  p.M = i64(1 + rng() % 140), p.N = i64(1 + rng() % 140), p.K = i64(1 + rng() % 300);
  p.batch = variant % 2 ? std::vector<i64>{2} : std::vector<i64>{};
  auto with = [&](std::vector<i64> tail) {
    std::vector<i64> s = p.batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const std::vector<i64> sa = with({p.M, p.K}), sb = with({p.K, p.N}), sy = with({p.M, p.N});
  std::vector<i64> stb = qmmt::make_strides(sb, variant % 3 ? Layout::transposed_padded : Layout::packed, rng);
  if (!p.batch.empty() && variant % 4 == 3) stb[0] = 0;  // B broadcast over the batch
  p.a = Buffer(ta, sa, qmmt::make_strides(sa, Layout::random, rng), rng);
  p.b = Buffer(tb, sb, stb, rng);
  p.y = Buffer(ty, sy, qmmt::make_strides(sy, variant % 2 ? Layout::padded : Layout::packed, rng), rng);
  p.a_zero = qmmt::literal_q(ta, {p.M, 1}, {3, -7, 100, 0}, rng);
  p.b_zero = qmmt::literal_q(tb, {1, p.N}, {1, 9, -128, 127}, rng);
  p.y_zero = qmmt::literal_q(ty, {1}, {ty == DataType::int8 ? -5 : 120}, rng);
  p.a_scale = qmmt::literal_f({1}, {0.05f}, rng);
  p.b_scale = qmmt::literal_f({1, p.N}, {0.01f, 0.02f, 0.004f}, rng);
  p.y_scale = qmmt::literal_f({p.M, 1}, {0.6f, 1.1f, 2.0f}, rng);
  return p;
}

// The error code `call` throws, or -1 when it throws none.
template <class Call> hk::Errc code_of(Call&& call) {
  try {
    call();
  } catch (const hk::Error& e) {
    return e.code();
  }
  return hk::Errc(-1);
}

TEST(DeviceQmm, EveryOffloadScheduleMatchesTheOracle) {
  std::mt19937_64 rng(4242);
  for (int variant = 0; variant < 8; ++variant) {
    Problem p = random_problem(rng, variant);
    const qmmt::Expected e = qmmt::oracle(p, true);
    for (const char* text : {"", "qmm.offload", "qmm.offload_mma", "qmm.offload(teams=1, threads=33)",
                             "qmm.offload_mma(teams=2, threads=64)", "qmm.devices(devices=1, threads=64)"}) {
      const std::string where = std::string("schedule '") + text + "', " + p.describe();
      OnDevice a(p.a), b(p.b), y(p.y);
      hk::reset_transfer_counters();
      hk::quantized_linear_matmul(device_args(p, a, b), y.view(),
                                  text[0] ? hk::Schedule::parse(text) : hk::Schedule());
      // Only the quantization parameters and the wgmma kernel's tensor maps travel, each where no
      // kept copy holds it.
      const hk::TransferCounters c = hk::transfer_counters();
      EXPECT_LE(c.to_device_copies, 2) << where;
      EXPECT_EQ(c.to_host_copies, 0) << where;
      qmmt::expect_matches_oracle(p, e, y.download(), where);
    }
  }
}

// Per-tensor parameters are kept on the device, and so is the product's argument block once a call
// repeats it: the second of the same calls copies that block alone, the third nothing; one with a
// parameter changed copies them again; two calls taking turns each keep their own; every result
// exact.
TEST(DeviceQmm, RepeatedParametersAreNotCopiedAgain) {
  // The block holds the workspace's address: from an empty scratch pool, repeated calls lease the
  // same one. Blocks that earlier tests left cached (the staged copies of host tensors) could make
  // the first call's lease differ from the next ones', and the count one sighting late.
  hk::release_cached_device_memory();
  std::mt19937_64 rng(515);
  Problem p = random_problem(rng, 0);
  p.a_zero = qmmt::literal_q(DataType::uint8, {1}, {11}, rng);
  p.b_zero = qmmt::literal_q(p.b.dtype, {1}, {3}, rng);
  p.b_scale = qmmt::literal_f({1}, {0.0123f}, rng);
  p.y_scale = qmmt::literal_f({1}, {0.777f}, rng);
  OnDevice a(p.a), b(p.b), y(p.y);
  auto copies = [&](const char* when) {
    hk::reset_transfer_counters();
    hk::quantized_linear_matmul(device_args(p, a, b), y.view());
    qmmt::expect_matches_oracle(p, qmmt::oracle(p, true), y.download(), when);
    return hk::transfer_counters().to_device_copies;
  };
  EXPECT_GE(copies("first call"), 1);
  EXPECT_EQ(copies("the same call again"), 1);
  EXPECT_EQ(copies("a third time"), 0);
  p.y_scale = qmmt::literal_f({1}, {0.888f}, rng);
  EXPECT_GE(copies("another output scale"), 1);
  EXPECT_EQ(copies("that call again"), 1);
  EXPECT_EQ(copies("and a third time"), 0);
  // Two calls not seen before, taking turns: each block is kept at its second sighting, though
  // the other call's came between.
  const auto first_scale = qmmt::literal_f({1}, {0.555f}, rng), second_scale = qmmt::literal_f({1}, {0.999f}, rng);
  for (int turn = 0; turn < 3; ++turn) {
    p.y_scale = first_scale;
    const std::int64_t first = copies("the first of two calls taking turns");
    p.y_scale = second_scale;
    const std::int64_t second = copies("the second of two calls taking turns");
    if (turn == 0) {
      EXPECT_GE(first, 1);
      EXPECT_GE(second, 1);
    } else {
      EXPECT_EQ(first, turn == 1 ? 1 : 0) << "turn " << turn;
      EXPECT_EQ(second, turn == 1 ? 1 : 0) << "turn " << turn;
    }
  }
}

TEST(DeviceQmm, RefusesHostSchedulesShortBuffersAndBadParameters) {
  std::mt19937_64 rng(7);
  Problem p = random_problem(rng, 0);
  OnDevice a(p.a), b(p.b), y(p.y);
  EXPECT_EQ(code_of([&] { hk::quantized_linear_matmul(device_args(p, a, b), y.view(), hk::Schedule::parse("qmm.tiled")); }),
            hk::Errc::invalid_schedule);
  hk::DeviceQuantizedMatMulArgs no_buffer = device_args(p, a, b);
  no_buffer.b.buffer = nullptr;
  EXPECT_EQ(code_of([&] { hk::quantized_linear_matmul(no_buffer, y.view()); }), hk::Errc::invalid_parameter);
  hk::DeviceQuantizedMatMulArgs past_end = device_args(p, a, b);
  past_end.a.offset = a.memory.bytes() - 1;
  EXPECT_EQ(code_of([&] { hk::quantized_linear_matmul(past_end, y.view()); }), hk::Errc::invalid_shape);
  // A negative scale is refused on the host, before anything reaches the device.
  p.a_scale = qmmt::literal_f({1}, {-0.5f}, rng);
  const std::vector<unsigned char> before = p.y.bytes;
  hk::reset_transfer_counters();
  EXPECT_THROW(hk::quantized_linear_matmul(device_args(p, a, b), y.view()), hk::Error);
  EXPECT_EQ(hk::transfer_counters().to_device_copies, 0);
  std::vector<unsigned char> got(before.size());
  y.memory.download(got.data(), got.size());
  EXPECT_EQ(got, before);
}

// B packed once on the device (constant weights): the same results on every offload schedule as
// B itself, as B' (K a multiple of 128) and as B's own bytes (any other K), from a copy: B's buffer
// changed after pack_b changes nothing. A batched A broadcasts against the one packed matrix.
TEST(DeviceQmm, PackedBMatchesTheOracleOnEverySchedule) {
  std::mt19937_64 rng(4343);
  for (int variant = 0; variant < 8; ++variant) {
    Problem p = random_problem(rng, variant);
    p.K = variant % 2 ? i64(256) : i64(1 + rng() % 300);
    const std::vector<i64> sa = p.batch.empty() ? std::vector<i64>{p.M, p.K} : std::vector<i64>{p.batch[0], p.M, p.K};
    p.a = Buffer(p.a.dtype, sa, qmmt::make_strides(sa, Layout::random, rng), rng);
    p.b = Buffer(p.b.dtype, {p.K, p.N}, qmmt::make_strides({p.K, p.N}, variant % 3 ? Layout::transposed_padded : Layout::padded, rng), rng);
    const qmmt::Expected e = qmmt::oracle(p, true);
    OnDevice a(p.a), b(p.b);
    const hk::DevicePackedB packed = hk::pack_b(b.cview());
    ASSERT_FALSE(packed.empty());
    EXPECT_EQ(packed.desc().dtype(), p.b.dtype);
    EXPECT_GE(packed.packed_bytes(), p.K * p.N);
    const std::vector<unsigned char> zeros(b.memory.bytes(), 0);
    b.memory.upload(zeros.data(), zeros.size());
    for (const char* text : {"", "qmm.offload", "qmm.offload_mma", "qmm.devices", "qmm.devices(home_share=0)"}) {
      const std::string where = std::string("schedule '") + text + "', " + p.describe();
      OnDevice y(p.y);
      hk::DeviceQuantizedMatMulArgs args = device_args(p, a, b);
      args.b = {};
      args.packed_b = &packed;
      hk::reset_transfer_counters();
      hk::quantized_linear_matmul(args, y.view(), text[0] ? hk::Schedule::parse(text) : hk::Schedule());
      // Only the quantization parameters, where no kept copy holds them, and the product's
      // argument block where it repeats an earlier call's, to each GPU with a part (qmm.devices:
      // one per batch matrix here, on as many GPUs as there are).
      const std::int64_t copies = hk::transfer_counters().to_device_copies;
      EXPECT_LE(copies, 2 * (std::string(text).starts_with("qmm.devices") ? hk::offload_device_count() : 1)) << where;
      qmmt::expect_matches_oracle(p, e, y.download(), where);
    }
  }
}

TEST(DeviceQmm, PackBRefusesWhatItCannotPack) {
  std::mt19937_64 rng(9);
  hk::DeviceBuffer memory(4096);
  const auto tensor = [&](hk::DataType t, std::vector<i64> sizes) {
    return hk::DeviceConstTensor{hk::TensorDesc(t, sizes), &memory};
  };
  EXPECT_EQ(code_of([&] { hk::pack_b(tensor(DataType::float32, {8, 8})); }), hk::Errc::invalid_type);
  EXPECT_EQ(code_of([&] { hk::pack_b(tensor(DataType::int8, {2, 8, 8})); }), hk::Errc::invalid_shape);
  EXPECT_EQ(code_of([&] { hk::pack_b(tensor(DataType::int8, {64, 128})); }), hk::Errc::invalid_shape);  // past the buffer
  EXPECT_EQ(code_of([&] { hk::pack_b(hk::DeviceConstTensor{hk::TensorDesc(DataType::int8, {8, 8}), nullptr}); }),
            hk::Errc::invalid_parameter);
  // An empty packed B, given for B, is refused before anything reaches the device.
  Problem p = random_problem(rng, 0);
  OnDevice a(p.a), b(p.b), y(p.y);
  const hk::DevicePackedB empty;
  hk::DeviceQuantizedMatMulArgs args = device_args(p, a, b);
  args.packed_b = &empty;
  hk::reset_transfer_counters();
  EXPECT_EQ(code_of([&] { hk::quantized_linear_matmul(args, y.view()); }), hk::Errc::invalid_parameter);
  EXPECT_EQ(hk::transfer_counters().to_device_copies, 0);
  // A packed B whose sizes do not match A's is refused like B itself.
  const hk::DevicePackedB other = hk::pack_b(tensor(DataType::int8, {p.K + 1, 4}));
  args.packed_b = &other;
  EXPECT_EQ(code_of([&] { hk::quantized_linear_matmul(args, y.view()); }), hk::Errc::invalid_shape);
}

TEST(DeviceScratch, CachedBlocksAreReusedAndReleased) {
  // A freed lease's block waits in the cache for the next lease it fits, until released. (The
  // scans' host fallback leases none: it scans each line on one host thread.)
  hk::release_cached_device_memory();
  const int device = hk::offload_device();
  void* first;
  {
    const hk::detail::ScratchLease lease(device, 4096);
    first = lease.data();
  }
  {
    const hk::detail::ScratchLease lease(device, 1000);
    EXPECT_EQ(lease.data(), first);
  }
  EXPECT_GE(hk::release_cached_device_memory(), std::size_t(4096));
  EXPECT_EQ(hk::release_cached_device_memory(), std::size_t(0));
}

TEST(DeviceScratch, KeptBlocksStartZeroedAndAreReleased) {
  // A kept block (the chained scan's tile states, the dp4a tiles' sums) stays with its owner
  // across calls until released, zeroed when (re)allocated; its count of calls survives a release,
  // so that states written before it stay old.
  hk::release_cached_device_memory();
  const int device = hk::offload_device();
  hk::detail::KeptScratch& kept = hk::detail::kept_scratch(device, "test.kept");
  EXPECT_EQ(&kept, &hk::detail::kept_scratch(device, "test.kept"));
  EXPECT_NE(&kept, &hk::detail::kept_scratch(device, "test.other"));
  {
    const std::lock_guard<std::mutex> hold(kept.mutex);
    hk::detail::reserve_kept(kept, device, 5000);
    ASSERT_EQ(kept.bytes, std::size_t(8192));
    std::vector<unsigned char> bytes(kept.bytes, 1);
    hk::detail::copy_to_host(bytes.data(), kept.data, 0, bytes.size(), device);
    EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), std::ptrdiff_t(bytes.size()));
    const std::vector<unsigned char> ones(kept.bytes, 1);
    hk::detail::copy_to_device(kept.data, 0, ones.data(), ones.size(), device);
    void* const before = kept.data;
    hk::detail::reserve_kept(kept, device, 8192);  // fits: kept as it is
    EXPECT_EQ(kept.data, before);
    hk::detail::reserve_kept(kept, device, 8193);  // a new block, zeroed
    ASSERT_EQ(kept.bytes, std::size_t(16384));
    bytes.assign(kept.bytes, 1);
    hk::detail::copy_to_host(bytes.data(), kept.data, 0, bytes.size(), device);
    EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), std::ptrdiff_t(bytes.size()));
    hk::detail::trim_kept(kept, device, 16384);
    EXPECT_EQ(kept.bytes, std::size_t(16384));
    kept.calls = 5;
  }
  EXPECT_GE(hk::release_cached_device_memory(), std::size_t(16384));
  EXPECT_EQ(kept.data, nullptr);
  EXPECT_EQ(kept.bytes, std::size_t(0));
  EXPECT_EQ(kept.calls, 5u);
  EXPECT_EQ(hk::release_cached_device_memory(), std::size_t(0));
  const std::lock_guard<std::mutex> hold(kept.mutex);
  hk::detail::reserve_kept(kept, device, 100);
  hk::detail::trim_kept(kept, device, 64);  // larger than kept: freed
  EXPECT_EQ(kept.data, nullptr);
}

}  // namespace

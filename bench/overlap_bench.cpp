// hetkern-overlap-bench: how much of a core's streaming copy is left when the same loop also
// computes.
//
//   hetkern-overlap-bench [--mib N] [--threads T] [--min-time S] [--json]
//
// A scan runs its arithmetic in the loop that streams its input and output. This program times,
// interleaved with the plain streaming copy that the scans are measured against (bench/
// copy_baseline), loops that move the same bytes the same way but also execute K vector additions
// per 128 bytes read: additions on registers of their own, independent of the data and of each
// other's results apart from eight short chains, so that a core which overlaps arithmetic with its
// memory traffic would hide them completely. Variants:
//   copy + K additions             K = 16, 32, 48, 64, streaming stores
//   ..., L1 requests 8 KiB ahead   K = 0 to 64, each 128 bytes also requested into L1 8 KiB ahead
//   ..., L2 requests 16 KiB ahead  K = 0, 32, 64, requested into L2 16 KiB ahead (as the row scans do)
//   copy by ordinary stores + K    K = 0, 32, 64, the output read for ownership before it is written
//   reads + K additions            loads only, K = 0 and 32 (the loads feed the first chain)
// and prints each variant's median time over the copy's (time_interleaved's medians), and beside it
// what the variant's instructions cost alone: its loop, with ordinary stores, over 8 KiB each way
// in L1, in nanoseconds per 128 bytes (one thread). Where the ratios grow with K, the core's
// streams slow down by the work beside them: a scan whose loop costs as much in cache as a
// variant's (hetkern bench cumsum on a shape that fits L1 gives it) cannot come closer to the copy
// than that variant (docs/performance.md).
//
//   --mib N       input and output buffers of N MiB each (default 256: well past any cache)
//   --threads T   threads, each streaming its share of the buffers (default 1)
//   --min-time S  seconds the interleaved rounds take at least (default 3)
//   --json        one JSON object per variant instead of the table
#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "bench/buffer.hpp"
#include "bench/copy_baseline.hpp"
#include "bench/record.hpp"
#include "bench/timing.hpp"

namespace {

constexpr std::size_t step_bytes = 128;

// How a loop requests its input ahead of its loads: not at all, into L1 8 KiB ahead, or into L2
// 16 KiB ahead (as the row scans request theirs, schedules/scan_host.cpp).
enum class Request { none, l1, l2 };
constexpr std::size_t most_ahead_bytes = 16384;

enum class Stream { copy, stored, reads };

// Requests the 128 bytes that a loop at `at` reads next, ahead as R says.
template <Request R> inline void request_ahead(const std::byte* at) {
  if constexpr (R == Request::l1) {
    _mm_prefetch(reinterpret_cast<const char*>(at + 8192), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(at + 8192 + 64), _MM_HINT_T0);
  } else if constexpr (R == Request::l2) {
    _mm_prefetch(reinterpret_cast<const char*>(at + 16384), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(at + 16384 + 64), _MM_HINT_T1);
  }
}

// Each variant's loop at both widths (bench/overlap_loops.inc).
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
namespace loops_avx512 {
constexpr std::size_t vector_bytes = 64;
#include "bench/overlap_loops.inc"
}  // namespace loops_avx512
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
namespace loops_avx2 {
constexpr std::size_t vector_bytes = 32;
#include "bench/overlap_loops.inc"
}  // namespace loops_avx2
#pragma clang attribute pop

using Loop = std::int64_t (*)(std::byte*, const std::byte*, std::size_t);

// Where the loops' sums go, so that the compiler keeps every addition.
volatile std::int64_t sink;

struct Variant {
  std::string name;
  int additions;
  Request request;
  Stream mode;
  Loop loop;
  Loop in_cache;  // the same instructions, ordinary stores in place of streaming ones
};

template <int K, Request R, Stream Mode> Variant variant(const char* name, bool avx512) {
  constexpr Stream cached = Mode == Stream::copy ? Stream::stored : Mode;
  return {name, K, R, Mode, avx512 ? loops_avx512::run<K, R, Mode> : loops_avx2::run<K, R, Mode>,
          avx512 ? loops_avx512::run<K, R, cached> : loops_avx2::run<K, R, cached>};
}

// The cost of a loop's instructions alone: nanoseconds per 128 bytes over buffers that stay in
// L1 (8 KiB each way), the best of many short rounds on this thread.
double in_cache_ns_per_step(Loop loop, std::byte* y, const std::byte* x) {
  constexpr std::size_t bytes = 8192;
  constexpr int passes = 256, rounds = 30;
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t total = 0;
    for (int p = 0; p < passes; ++p) total += loop(y, x, bytes);
    sink = total;
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (r == 0 || ns < best) best = ns;
  }
  return best / (double(passes) * double(bytes / step_bytes));
}

std::vector<Variant> variants(bool avx512) {
  using enum Request;
  using enum Stream;
  return {variant<16, none, copy>("copy + 16 additions", avx512),
          variant<32, none, copy>("copy + 32 additions", avx512),
          variant<48, none, copy>("copy + 48 additions", avx512),
          variant<64, none, copy>("copy + 64 additions", avx512),
          variant<0, l1, copy>("copy, L1 requests 8 KiB ahead", avx512),
          variant<16, l1, copy>("copy + 16 additions, L1 requests 8 KiB ahead", avx512),
          variant<32, l1, copy>("copy + 32 additions, L1 requests 8 KiB ahead", avx512),
          variant<48, l1, copy>("copy + 48 additions, L1 requests 8 KiB ahead", avx512),
          variant<64, l1, copy>("copy + 64 additions, L1 requests 8 KiB ahead", avx512),
          variant<0, l2, copy>("copy, L2 requests 16 KiB ahead", avx512),
          variant<32, l2, copy>("copy + 32 additions, L2 requests 16 KiB ahead", avx512),
          variant<64, l2, copy>("copy + 64 additions, L2 requests 16 KiB ahead", avx512),
          variant<0, none, stored>("copy by ordinary stores", avx512),
          variant<32, none, stored>("copy by ordinary stores + 32 additions", avx512),
          variant<64, none, stored>("copy by ordinary stores + 64 additions", avx512),
          variant<0, none, reads>("reads", avx512),
          variant<32, none, reads>("reads + 32 additions", avx512)};
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "hetkern-overlap-bench: %s (usage: hetkern-overlap-bench [--mib N] [--threads T] [--min-time S] "
               "[--json])\n",
               why);
  std::exit(2);
}

long positive(const char* flag, const char* text, long most) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < 1 || v > most)
    usage((std::string(flag) + " takes a whole number from 1 to " + std::to_string(most)).c_str());
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  long mib = 256, threads = 1;
  double min_time = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--mib") {
      mib = positive("--mib", value(), 1 << 16);
    } else if (arg == "--threads") {
      threads = positive("--threads", value(), 4096);
    } else if (arg == "--min-time") {
      char* end = nullptr;
      const char* text = value();
      min_time = std::strtod(text, &end);
      if (*text == '\0' || *end != '\0' || !(min_time >= 0 && min_time <= 3600))
        usage("--min-time takes seconds from 0 to 3600");
    } else if (arg == "--json") {
      json = true;
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (!__builtin_cpu_supports("avx2")) {
    std::fprintf(stderr, "hetkern-overlap-bench: needs AVX2, which this CPU lacks\n");
    return 1;
  }
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int n = int(threads);
  // Each thread's share, whole steps of 128 bytes; the input reaches past the last share by the
  // farthest request ahead, so that no request leaves the buffer.
  const std::size_t share = (std::size_t(mib) << 20) / std::size_t(n) / step_bytes * step_bytes;
  if (share == 0) usage("--mib is too small for that many threads");
  // Refused up front where the machine cannot hold them: touching them would only end in the
  // out-of-memory killer.
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
  const double machine_mib = double(pages) * double(page_bytes) / double(1 << 20);
  if (pages > 0 && page_bytes > 0 && 2.0 * double(mib) > machine_mib) {
    std::fprintf(stderr,
                 "hetkern-overlap-bench: two buffers of %ld MiB need more than this machine's %lld MiB of memory; "
                 "try a smaller --mib\n",
                 mib, static_cast<long long>(machine_mib));
    return 1;
  }
  std::optional<hk::bench::Buffer> in, out;
  try {
    in.emplace(share * std::size_t(n) + most_ahead_bytes + step_bytes, n);
    out.emplace(share * std::size_t(n), n);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "hetkern-overlap-bench: cannot allocate two buffers of %ld MiB; try a smaller --mib\n",
                 mib);
    return 1;
  }
  std::memset(in->data(), 1, in->size());

  const std::vector<Variant> list = variants(avx512);
  std::vector<std::function<void()>> functions;
  const auto on_threads = [&, n](Loop loop) {
    return [&, n, loop] {
      std::int64_t total = 0;
#pragma omp parallel num_threads(n) reduction(+ : total)
      {
        const std::size_t from = std::size_t(omp_get_thread_num()) * share;
        total += loop(out->data() + from, in->data() + from, share);
      }
      sink = total;
    };
  };
  functions.push_back([&] { hk::bench::streaming_copy(out->data(), in->data(), share * std::size_t(n), n); });
  for (const Variant& v : list) functions.push_back(on_threads(v.loop));
  hk::bench::TimingOptions options;
  options.min_seconds = min_time;
  const std::vector<hk::bench::TimingStats> stats = hk::bench::time_interleaved(functions, options);

  std::vector<double> in_cache;
  for (const Variant& v : list) in_cache.push_back(in_cache_ns_per_step(v.in_cache, out->data(), in->data()));

  const double copy_ns = stats[0].median_ns, bytes = 2.0 * double(share) * n;
  if (!json) {
    std::printf("%d thread(s), %s, %ld MiB each way; the copy: %.1f GB/s (median of %lld)\n\n", n,
                avx512 ? "AVX-512" : "AVX2", mib, bytes / copy_ns, static_cast<long long>(stats[0].repetitions));
    std::printf("| variant | time over the copy's (median) | q1-q3 | in cache, ns per 128 bytes |\n|---|---|---|---|\n");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const hk::bench::TimingStats& s = stats[i + 1];
    if (json) {
      hk::bench::Record r;
      r.set("variant", list[i].name).set("additions_per_128_bytes", std::int64_t(list[i].additions));
      const Request request = list[i].request;
      const Stream mode = list[i].mode;
      r.set("request", std::string(request == Request::l1 ? "l1" : request == Request::l2 ? "l2" : "none"));
      r.set("stream", std::string(mode == Stream::copy ? "copy" : mode == Stream::stored ? "stored" : "reads"));
      r.set("threads", std::int64_t(n)).set("isa", std::string(avx512 ? "avx512" : "avx2"));
      r.set("median_ns", s.median_ns).set("copy_median_ns", copy_ns);
      r.set("copy_gbps", bytes / copy_ns).set("time_vs_copy", s.median_ns / copy_ns);
      r.set("q1_vs_copy", s.q1_ns / copy_ns).set("q3_vs_copy", s.q3_ns / copy_ns);
      r.set("in_cache_ns_per_128_bytes", in_cache[i]);
      std::printf("%s\n", r.to_json().c_str());
    } else {
      std::printf("| %s | %.3f | %.3f-%.3f | %.2f |\n", list[i].name.c_str(), s.median_ns / copy_ns,
                  s.q1_ns / copy_ns, s.q3_ns / copy_ns, in_cache[i]);
    }
  }
  return 0;
}

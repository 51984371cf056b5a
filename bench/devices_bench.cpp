// hetkern-devices-bench: one call spread over every GPU of the machine against one GPU (offload
// builds, on a machine with a GPU; with one GPU it measures the one-GPU side only).
//
//   hetkern-devices-bench [--n N] [--reps R] [--lines L] [--length X] [--line Y] [--only WHAT]
//
// WHAT: a comma-separated list of the sections below to run (links, matmul, host, scans); all
// of them without it.
//
// 1. The links: 256 MiB copied from GPU 0 to each other GPU and back (omp_target_memcpy between
//    device numbers, peer to peer where the runtime enables it); between GPU 0 and GPU 1 alone
//    and while GPU 0 multiplies N^3, and a 64-byte upload alone and during such a copy.
// 2. A u8 x s8 -> u8 matmul of N^3 (default 16384) with A, B and the output on GPU 0, B
//    row-major (packed once on GPU 0) and column-major (read in place, cuBLASLt's fastest layout):
//    qmm.offload_mma on GPU 0 alone, then qmm.devices over 2 to all GPUs at a few home shares
//    (with two, also 0 and 1000: each GPU alone through the spreading path).
//    Then B packed once on GPU 0 (hk::pack_b, constant weights), which each other GPU copies once.
//    Median of R calls (default 5) after a warm-up; every output is compared with GPU 0's alone.
// 3. The host's memory (1 GiB copied by every core) and its links: 256 MiB from page-locked host
//    memory to 1, 2, ... GPUs at once and back, a thread per GPU, then 128 MiB each way at once, a
//    thread per GPU and direction: the rate of all together. These bound the scans below on
//    page-locked tensors (which copy both ways at once).
// 4. A batch of L long scans (default 64 lines of 2^22 float32, 1 GiB each way) on host tensors,
//    pageable (std::vector, which each GPU stages through hetkern's page-locked buffers) and
//    page-locked (the GPUs read and write them directly): scan.split with every line on the GPUs
//    (gpu_share=1000) over one GPU, then over 2 to all of them, each GPU copying its lines over its
//    own link; every GPU and the host cores at once (the host scanning 10-50% of the lines in
//    place); the host cores alone (scan.blocked, their default for a few long lines); and the
//    call without a schedule
//    (HETKERN_LOG=dispatch names what the cost model chose).
// 5. One line of Y float32 (default 2^28, 1 GiB each way) on page-locked host tensors, the same
//    schedules: with fewer lines than GPUs, scan.split cuts the line into one part per GPU, each
//    continuing from the folds of the parts before it.
// The last lines are one table: case, schedule, time, speed-up against one GPU; each row also goes
// to stderr as it is measured.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/copy_baseline.hpp"
#include "bench/page_locked.hpp"
#include "bench/square_qmm.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/tuning/quantile.hpp"

namespace {

// A warm-up call first: it fills the scratch and staging caches that later calls reuse.
using hk::detail::median_after_warm_up;
using hk::detail::wall_seconds;

struct Row {
  std::string what, schedule;
  double seconds, speedup;
  bool exact;
};
std::vector<Row> rows;

// Each row is also printed to stderr as it is measured: a run stopped early keeps what it measured.
void add_row(Row row) {
  std::fprintf(stderr, "%s, %s: %.3f ms, %.2fx%s\n", row.what.c_str(), row.schedule.c_str(), 1e3 * row.seconds,
               row.speedup, row.exact ? "" : ", OUTPUT DIFFERS");
  rows.push_back(std::move(row));
}

void peer_links(int devices, int reps) {
  const std::size_t bytes = std::size_t(256) << 20;
  void* home = omp_target_alloc(bytes, 0);
  for (int d = 1; d < devices; ++d) {
    void* other = omp_target_alloc(bytes, d);
    if (!home || !other) {
      std::fprintf(stderr, "cannot allocate the link test's buffers\n");
      std::exit(1);
    }
    const double there = median_after_warm_up(reps, [&] { omp_target_memcpy(other, home, bytes, 0, 0, d, 0); });
    const double back = median_after_warm_up(reps, [&] { omp_target_memcpy(home, other, bytes, 0, 0, 0, d); });
    std::printf("GPU 0 -> GPU %d %.1f GB/s, back %.1f GB/s (256 MiB)\n", d, double(bytes) / there / 1e9,
                double(bytes) / back / 1e9);
    omp_target_free(other, d);
  }
  omp_target_free(home, 0);
}

// A 256 MiB copy between GPU 0 and GPU 1 alone, then while GPU 0 multiplies n^3 (started first,
// so that its kernel holds every SM while the copy runs): whether a copy between devices waits for
// the source's or the destination's kernels, which qmm.devices' streamed B' relies on not doing.
void links_under_load(std::int64_t n) {
  const std::size_t bytes = std::size_t(256) << 20;
  void* home = omp_target_alloc(bytes, 0);
  void* other = omp_target_alloc(bytes, 1);
  if (!home || !other) {
    std::fprintf(stderr, "cannot allocate the loaded link test's buffers\n");
    std::exit(1);
  }
  const hk::bench::SquareQmm q(n, 2.0f);
  hk::DeviceBuffer da(q.elements()), db(q.elements()), dy(q.elements());
  da.upload(q.a.data(), q.elements());
  db.upload(q.b.data(), q.elements());
  const auto args = q.args(hk::DeviceConstTensor{q.a_desc, &da}, hk::DeviceConstTensor{q.b_desc, &db});
  const auto multiply = [&] { hk::quantized_linear_matmul(args, {q.out_desc(), &dy}, hk::Schedule("qmm.offload_mma")); };
  multiply();
  for (const bool out : {true, false}) {
    const auto copy = [&] {
      if (out)
        omp_target_memcpy(other, home, bytes, 0, 0, 1, 0);
      else
        omp_target_memcpy(home, other, bytes, 0, 0, 0, 1);
    };
    copy();
    const double idle = wall_seconds(copy);
    double product = 0, loaded = 0;
    {
      std::thread busy([&] { product = wall_seconds(multiply); });
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      loaded = wall_seconds(copy);
      busy.join();
    }
    std::printf("GPU %d -> GPU %d 256 MiB: %.3f ms alone, %.3f ms while GPU 0 multiplies %lld^3 (%.3f ms)\n",
                out ? 0 : 1, out ? 1 : 0, 1e3 * idle, 1e3 * loaded, static_cast<long long>(n), 1e3 * product);
  }
  // A call's first step, its 64-byte parameter block to the device, while GPU 0 sends 256 MiB.
  std::vector<std::byte> small(64);
  for (const int device : {0, 1}) {
    void* target = omp_target_alloc(small.size(), device);
    if (!target) {
      std::fprintf(stderr, "cannot allocate 64 bytes on GPU %d\n", device);
      std::exit(1);
    }
    const auto upload = [&] { omp_target_memcpy(target, small.data(), small.size(), 0, 0, device, omp_get_initial_device()); };
    upload();
    const double idle = wall_seconds(upload);
    double sending = 0, loaded = 0;
    {
      std::thread copy([&] { sending = wall_seconds([&] { omp_target_memcpy(other, home, bytes, 0, 0, 1, 0); }); });
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      loaded = wall_seconds(upload);
      copy.join();
    }
    std::printf("64 B host -> GPU %d: %.3f ms alone, %.3f ms while GPU 0 sends 256 MiB to GPU 1 (%.3f ms)\n", device,
                1e3 * idle, 1e3 * loaded, 1e3 * sending);
    omp_target_free(target, device);
  }
  omp_target_free(home, 0);
  omp_target_free(other, 1);
}

void matmul(std::int64_t n, bool column_major_b, bool packed, int devices, int reps) {
  const hk::bench::SquareQmm q(n, 2.0f, column_major_b);
  const auto elements = q.elements();
  std::vector<std::uint8_t> want(elements), got(elements);
  hk::DeviceBuffer da(elements), db(elements), dy(elements);
  da.upload(q.a.data(), elements);
  db.upload(q.b.data(), elements);
  auto args = q.args(hk::DeviceConstTensor{q.a_desc, &da}, hk::DeviceConstTensor{q.b_desc, &db});
  // Constant weights: B packed once on GPU 0; each other GPU gets its copy on its first call (the
  // warm-up), and later calls move only A's rows and the outputs.
  hk::DevicePackedB b_packed;
  if (packed) {
    b_packed = hk::pack_b(args.b);
    args.b = {};
    args.packed_b = &b_packed;
  }
  const std::string what = "qmm " + std::to_string(n) + "^3 on GPU 0, B " +
                           (packed ? "packed once" : column_major_b ? "column-major" : "row-major");
  const auto time = [&](const hk::Schedule& s) {
    return median_after_warm_up(reps, [&] { hk::quantized_linear_matmul(args, {q.out_desc(), &dy}, s); });
  };
  const hk::Schedule one("qmm.offload_mma");
  const double base = time(one);
  dy.download(want.data(), elements);
  add_row({what, one.to_string(), base, 1.0, true});
  for (int d = 2; d <= devices; ++d) {
    const int even = (1000 + d / 2) / d;
    // Home shares around the even one, the home device starting first, in steps of 10 per mille (a
    // tile row of 16384 is 7.8); with B on each call, further up the more devices there are, since
    // the last device of B's relay gets it later. With two: also the home device alone and the
    // other alone, through the spreading path.
    std::vector<int> shares;
    const int highest = even + (packed ? 50 : 70 + 30 * (d - 2));
    for (int share = even - (packed ? 40 : 20); share <= highest; share += 10) shares.push_back(share);
    if (d == 2) shares.insert(shares.end(), {0, 1000});
    for (const int share : shares) {
      const hk::Schedule s = hk::Schedule("qmm.devices").set("devices", d).set("home_share", share);
      const double t = time(s);
      dy.download(got.data(), elements);
      add_row({what, s.to_string(), t, base / t, got == want});
    }
  }
}

// The host's memory: 1 GiB copied by every core with streaming stores (the bytes a scan of 1 GiB
// reads and writes), which bounds any host-tensor scan that the host's memory serves, whoever
// reads and writes it: the cores or the GPUs' copies.
void host_memory(int reps) {
  const std::size_t bytes = std::size_t(1) << 30;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  const int threads = omp_get_max_threads();
  const double t = median_after_warm_up(reps, [&] { hk::bench::streaming_copy(to.data(), from.data(), bytes, threads); });
  std::printf("host memory: 1 GiB copied by %d threads in %.3f ms, %.1f GB/s read and written\n", threads, 1e3 * t,
              2.0 * double(bytes) / t / 1e9);
}

void host_links(int devices, int reps) {
  const std::size_t bytes = std::size_t(256) << 20;
  const int host = omp_get_initial_device();
  std::vector<void*> on_host(static_cast<std::size_t>(devices)), on_gpu(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    on_host[std::size_t(d)] = llvm_omp_target_alloc_host(bytes, d);
    on_gpu[std::size_t(d)] = omp_target_alloc(bytes, d);
    if (!on_host[std::size_t(d)] || !on_gpu[std::size_t(d)]) {
      std::fprintf(stderr, "cannot allocate the host link test's buffers\n");
      std::exit(1);
    }
    std::memset(on_host[std::size_t(d)], 1, bytes);
  }
  const auto at_once = [&](int count, bool there) {
    return median_after_warm_up(reps, [&] {
      std::vector<std::thread> threads;
      for (int d = 0; d < count; ++d)
        threads.emplace_back([&, d] {
          void* const h = on_host[std::size_t(d)];
          void* const g = on_gpu[std::size_t(d)];
          if (there)
            omp_target_memcpy(g, h, bytes, 0, 0, d, host);
          else
            omp_target_memcpy(h, g, bytes, 0, 0, host, d);
        });
      for (std::thread& t : threads) t.join();
    });
  };
  // Both ways at once, as a chunked scan copies: a buffer to each GPU while another comes back.
  const auto both_ways = [&](int count) {
    return median_after_warm_up(reps, [&] {
      std::vector<std::thread> threads;
      for (int d = 0; d < count; ++d) {
        char* const h = static_cast<char*>(on_host[std::size_t(d)]);
        char* const g = static_cast<char*>(on_gpu[std::size_t(d)]);
        threads.emplace_back([=] { omp_target_memcpy(g, h, bytes / 2, 0, 0, d, host); });
        threads.emplace_back([=] { omp_target_memcpy(h + bytes / 2, g + bytes / 2, bytes / 2, 0, 0, host, d); });
      }
      for (std::thread& t : threads) t.join();
    });
  };
  for (int count = 1; count <= devices; ++count)
    std::printf("page-locked host -> %d GPU(s) at once %.1f GB/s, back %.1f GB/s (256 MiB each), both ways at once "
                "%.1f GB/s (128 MiB each way each)\n",
                count, double(count) * double(bytes) / at_once(count, true) / 1e9,
                double(count) * double(bytes) / at_once(count, false) / 1e9,
                double(count) * double(bytes) / both_ways(count) / 1e9);
  for (int d = 0; d < devices; ++d) {
    llvm_omp_target_free_host(on_host[std::size_t(d)], d);
    omp_target_free(on_gpu[std::size_t(d)], d);
  }
}

void scans(std::int64_t lines, std::int64_t length, int devices, int reps, bool page_locked) {
  const hk::TensorDesc desc(hk::DataType::float32, {lines, length});
  const auto elements = std::size_t(lines * length);
  std::vector<float> x_pageable, y_pageable;
  std::optional<hk::bench::PageLocked<float>> x_locked, y_locked;
  if (page_locked) {
    x_locked.emplace(elements);
    y_locked.emplace(elements);
  } else {
    x_pageable.resize(elements);
    y_pageable.resize(elements);
  }
  float* const x = page_locked ? x_locked->data() : x_pageable.data();
  float* const y = page_locked ? y_locked->data() : y_pageable.data();
  for (std::size_t i = 0; i < elements; ++i) x[i] = float(int(i % 7) - 3);
  const std::string what = "cumsum float32 {" + std::to_string(lines) + "," + std::to_string(length) + "} host" +
                           (page_locked ? " page-locked" : " pageable");
  const auto time = [&](const hk::Schedule& s) {
    return median_after_warm_up(reps, [&] { hk::cumulative_sum({desc, x}, {desc, y}, {.axis = 1}, s); });
  };
  const hk::Schedule one = hk::Schedule("scan.split").set("gpu_share", 1000).set("devices", 1);
  const double base = time(one);
  const std::vector<float> want(y, y + elements);
  const auto same = [&] { return std::equal(want.begin(), want.end(), y); };
  add_row({what, one.to_string(), base, 1.0, true});
  for (int d = 2; d <= devices; ++d) {
    const hk::Schedule s = hk::Schedule("scan.split").set("gpu_share", 1000).set("devices", d);
    const double t = time(s);
    add_row({what, s.to_string(), t, base / t, same()});
  }
  // Every GPU and the host cores at once: the host's part adds its memory's speed to the links'.
  for (const int share : {900, 800, 700, 600, 500}) {
    const hk::Schedule s = hk::Schedule("scan.split").set("gpu_share", share).set("devices", devices);
    const double t = time(s);
    add_row({what, s.to_string(), t, base / t, same()});
  }
  const hk::Schedule host("scan.blocked");
  const double t = time(host);
  add_row({what, host.to_string(), t, base / t, same()});
  const double untuned = time(hk::Schedule());
  add_row({what, "(untuned: the cost model's choice)", untuned, base / untuned, same()});
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 16384, lines = 64, length = std::int64_t(1) << 22, line = std::int64_t(1) << 28;
  int reps = 5;
  std::string only = "links,matmul,host,scans";
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: hetkern-devices-bench [--n N] [--reps R] [--lines L] [--length X] [--line Y] "
                 "[--only links,matmul,host,scans]\n");
    return 2;
  };
  for (int i = 1; i < argc; i += 2) {
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[i + 1];
      continue;
    }
    const long long value = i + 1 < argc ? std::atoll(argv[i + 1]) : 0;
    std::int64_t* target = std::strcmp(argv[i], "--n") == 0        ? &n
                           : std::strcmp(argv[i], "--lines") == 0  ? &lines
                           : std::strcmp(argv[i], "--length") == 0 ? &length
                           : std::strcmp(argv[i], "--line") == 0   ? &line
                                                                   : nullptr;
    if (value < 1 || (!target && std::strcmp(argv[i], "--reps") != 0)) return usage();
    if (target)
      *target = value;
    else
      reps = int(value);
  }
  const auto runs = [&](const char* section) {
    return ("," + only + ",").find("," + std::string(section) + ",") != std::string::npos;
  };
  for (std::size_t at = 0; at <= only.size();) {
    const std::size_t end = std::min(only.find(',', at), only.size());
    const std::string section = only.substr(at, end - at);
    if (section != "links" && section != "matmul" && section != "host" && section != "scans") return usage();
    at = end + 1;
  }
  // Line by line into a file too, so that a run stopped early keeps its lines.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (hk::offload_on_host()) {
    std::fprintf(stderr, "hetkern-devices-bench: no GPU\n");
    return 2;
  }
  hk::warm_up_offload();
  const int devices = hk::offload_device_count();
  std::printf("%d GPU(s) visible\n", devices);
  if (runs("links")) {
    peer_links(devices, reps);
    if (devices > 1) links_under_load(n);
  }
  if (runs("matmul")) {
    matmul(n, false, false, devices, reps);
    matmul(n, true, false, devices, reps);
    matmul(n, false, true, devices, reps);
  }
  if (runs("host")) {
    host_memory(reps);
    host_links(devices, reps);
  }
  if (runs("scans")) {
    scans(lines, length, devices, reps, false);
    scans(lines, length, devices, reps, true);
    scans(1, line, devices, reps, true);
  }
  std::printf("\n| case | schedule | time | speed-up | same output |\n|---|---|---|---|---|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %.3f ms | %.2f | %s |\n", r.what.c_str(), r.schedule.c_str(), 1e3 * r.seconds,
                r.speedup, r.exact ? "yes" : "NO");
  return 0;
}

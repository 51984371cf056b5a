// hetkern-host-transfer-bench: offload calls on host tensors against what the link allows
// (offload builds, on a machine with a GPU).
//
//   hetkern-host-transfer-bench [--reps N] [--rounds R] [--case NAME ...]
//
// --case (repeatable) runs only the named parts: copies (the host's and the library's copy rates),
// matmul4096, matmul8192, scan; default all. --rounds runs them R times in turn (default 1), for
// comparisons within one process. The link is always measured first: every ratio needs it.
//
// Measures the link first: host -> device and device -> host copies of 256 MiB from page-locked
// memory (no staging, the DMA alone). Then, for a u8 x s8 -> u8 matmul at 4096^3 and 8192^3
// (qmm.offload_mma) and a {16384,16384} float32 cumulative sum along the last axis
// (scan.offload_rows): the median time of the call on device tensors, of the same call on host
// tensors (the library's transfers included), the bound bytes in / h2d + bytes out / d2h + device
// time, and the host call's ratio to that bound (goal: at most 1.25), with the host tensors in
// pageable memory (staged) and in page-locked memory (copied by the link directly). Also the host's own copy
// rate with every thread, which bounds staged copies too, the library's staged copies of 16 and 256
// MiB of pageable memory each way, and the rate of page-locking the caller's memory instead
// (cuMemHostRegister), the alternative to staging.
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "bench/page_locked.hpp"
#include "bench/square_qmm.hpp"
#include "hetkern/device.hpp"
#include "hetkern/hetkern.hpp"
#include "runtime/tuning/quantile.hpp"


namespace {

// A warm-up call first: it fills the scratch and staging caches that later calls reuse.
using hk::detail::median_after_warm_up;

struct Link {
  double h2d, d2h;  // bytes per second
};

Link measure_link(int dev, int reps) {
  const std::size_t bytes = std::size_t(256) << 20;
  void* pinned = llvm_omp_target_alloc_host(bytes, dev);
  void* device = omp_target_alloc(bytes, dev);
  if (!pinned || !device) {
    std::fprintf(stderr, "cannot allocate the link test's buffers\n");
    std::exit(1);
  }
  std::memset(pinned, 1, bytes);
  const int host = omp_get_initial_device();
  const double up = median_after_warm_up(reps, [&] { omp_target_memcpy(device, pinned, bytes, 0, 0, dev, host); });
  const double down = median_after_warm_up(reps, [&] { omp_target_memcpy(pinned, device, bytes, 0, 0, host, dev); });
  omp_target_free(device, dev);
  llvm_omp_target_free_host(pinned, dev);
  return {double(bytes) / up, double(bytes) / down};
}

// A staged copy reads and writes each byte on the host and the link reads it again: the host's
// copy rate with every thread bounds it as much as the link does.
double host_copy_rate(int reps) {
  const std::size_t bytes = std::size_t(256) << 20;
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes);
  const double s = median_after_warm_up(reps, [&] {
#pragma omp parallel
    {
      const auto threads = std::size_t(omp_get_num_threads()), t = std::size_t(omp_get_thread_num());
      const std::size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
      std::memcpy(b.data() + begin, a.data() + begin, end - begin);
    }
  });
  return double(bytes) / s;
}

// A case's line: device tensors, then host tensors in pageable and in page-locked memory, each
// with its ratio to the bound.
void report(const char* name, double bytes_in, double bytes_out, double device_s, double pageable_s,
            double locked_s, const Link& link) {
  const double bound = bytes_in / link.h2d + bytes_out / link.d2h + device_s;
  std::printf("%-34s device %8.3f ms  bound %8.3f ms  pageable %8.3f ms (ratio %5.2f)  page-locked %8.3f ms (ratio %5.2f)\n",
              name, 1e3 * device_s, 1e3 * bound, 1e3 * pageable_s, pageable_s / bound, 1e3 * locked_s,
              locked_s / bound);
}

// `host` copied into page-locked memory.
template <class T> void fill(const hk::bench::PageLocked<T>& to, const std::vector<T>& host) {
  std::copy(host.begin(), host.end(), to.data());
}

void matmul(std::int64_t n, int reps, const Link& link) {
  const hk::bench::SquareQmm q(n, 64.0f);
  const auto elements = q.elements();
  std::vector<std::uint8_t> y(elements);
  const hk::Schedule mma("qmm.offload_mma");
  const auto host = q.args(hk::ConstTensor{q.a_desc, q.a.data()}, hk::ConstTensor{q.b_desc, q.b.data()});
  const double host_s = median_after_warm_up(reps, [&] {
    hk::quantized_linear_matmul(host, {q.out_desc(), y.data()}, mma);
  });
  const hk::bench::PageLocked<std::uint8_t> la(elements), ly(elements);
  const hk::bench::PageLocked<std::int8_t> lb(elements);
  fill(la, q.a);
  fill(lb, q.b);
  const auto locked = q.args(hk::ConstTensor{q.a_desc, la.data()}, hk::ConstTensor{q.b_desc, lb.data()});
  const double locked_s = median_after_warm_up(reps, [&] {
    hk::quantized_linear_matmul(locked, {q.out_desc(), ly.data()}, mma);
  });
  hk::DeviceBuffer da(elements), db(elements), dy(elements);
  da.upload(q.a.data(), elements);
  db.upload(q.b.data(), elements);
  const auto dev = q.args(hk::DeviceConstTensor{q.a_desc, &da}, hk::DeviceConstTensor{q.b_desc, &db});
  const double device_s = median_after_warm_up(reps, [&] {
    hk::quantized_linear_matmul(dev, {q.out_desc(), &dy}, mma);
  });
  const std::string name = "qlinear-matmul " + std::to_string(n) + "^3 u8 x s8";
  report(name.c_str(), 2.0 * double(elements), double(elements), device_s, host_s, locked_s, link);
}

void scan(int reps, const Link& link) {
  const std::int64_t n = 16384;
  const hk::TensorDesc desc(hk::DataType::float32, {n, n});
  const auto elements = std::size_t(n * n), bytes = elements * sizeof(float);
  std::vector<float> x(elements, 0.5f), y(elements);
  const hk::Schedule rows("scan.offload_rows");
  const double host_s = median_after_warm_up(reps, [&] {
    hk::cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = -1}, rows);
  });
  const hk::bench::PageLocked<float> lx(elements), ly(elements);
  fill(lx, x);
  const double locked_s = median_after_warm_up(reps, [&] {
    hk::cumulative_sum({desc, lx.data()}, {desc, ly.data()}, {.axis = -1}, rows);
  });
  hk::DeviceBuffer dx(bytes), dy(bytes);
  dx.upload(x.data(), bytes);
  const double device_s = median_after_warm_up(reps, [&] {
    hk::cumulative_sum(hk::DeviceConstTensor{desc, &dx}, hk::DeviceTensor{desc, &dy}, {.axis = -1}, rows);
  });
  report("cumsum {16384,16384} float32 axis -1", double(bytes), double(bytes), device_s, host_s, locked_s, link);
}

// The library's own copies of pageable memory (DeviceBuffer's upload and download, staged through
// its page-locked buffers): bytes per second each way.
Link staged_rates(std::size_t bytes, int reps) {
  std::vector<std::byte> host(bytes, std::byte{1}), back(bytes);
  hk::DeviceBuffer buffer(bytes);
  const double up = median_after_warm_up(reps, [&] { buffer.upload(host.data(), bytes); });
  const double down = median_after_warm_up(reps, [&] { buffer.download(back.data(), bytes); });
  return {double(bytes) / up, double(bytes) / down};
}

// The alternative to staging: page-locking the caller's memory for the call (cuMemHostRegister
// and cuMemHostUnregister through the driver the offload runtime loaded); bytes per second, 0
// when the driver does not offer it.
double register_rate(int reps) {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return 0;
  auto reg = reinterpret_cast<int (*)(void*, std::size_t, unsigned)>(dlsym(cuda, "cuMemHostRegister_v2"));
  auto unreg = reinterpret_cast<int (*)(void*)>(dlsym(cuda, "cuMemHostUnregister"));
  if (!reg || !unreg) return 0;
  const std::size_t bytes = std::size_t(256) << 20;
  std::vector<std::byte> a(bytes, std::byte{1});
  bool ok = true;
  const double s = median_after_warm_up(reps, [&] {
    ok = ok && reg(a.data(), bytes, 0) == 0 && unreg(a.data()) == 0;
  });
  return ok ? double(bytes) / s : 0;
}

const char* const case_names[] = {"copies", "matmul4096", "matmul8192", "scan"};

}  // namespace

int main(int argc, char** argv) {
  int reps = 10, rounds = 1;
  std::vector<std::string> cases;
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: hetkern-host-transfer-bench [--reps N] [--rounds R] [--case copies|matmul4096|matmul8192|scan ...]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
      const std::string name = argv[++i];
      if (std::find(std::begin(case_names), std::end(case_names), name) == std::end(case_names)) return usage();
      cases.push_back(name);
    } else {
      return usage();
    }
  }
  if (cases.empty()) cases.assign(std::begin(case_names), std::end(case_names));
  const auto chosen = [&](const char* name) { return std::find(cases.begin(), cases.end(), name) != cases.end(); };
  if (hk::offload_on_host()) {
    std::fprintf(stderr, "hetkern-host-transfer-bench: no GPU: host tensors are not copied anywhere\n");
    return 2;
  }
  const int dev = hk::offload_device();
  const Link link = measure_link(dev, reps);
  std::printf("link: host -> device %.1f GB/s, device -> host %.1f GB/s (256 MiB, page-locked)\n",
              link.h2d / 1e9, link.d2h / 1e9);
  for (int round = 0; round < rounds; ++round) {
    if (chosen("copies")) {
      std::printf("host memcpy with %d threads: %.1f GB/s copied (256 MiB)\n", omp_get_max_threads(),
                  host_copy_rate(reps) / 1e9);
      for (const int mib : {16, 256}) {
        const Link staged = staged_rates(std::size_t(mib) << 20, reps);
        std::printf("staged copies of pageable memory: host -> device %.1f GB/s, device -> host %.1f GB/s (%d MiB)\n",
                    staged.h2d / 1e9, staged.d2h / 1e9, mib);
      }
      std::printf("page-locking the caller's memory and releasing it: %.1f GB/s (256 MiB)\n", register_rate(reps) / 1e9);
    }
    if (chosen("matmul4096")) matmul(4096, reps, link);
    if (chosen("matmul8192")) matmul(8192, reps, link);
    if (chosen("scan")) scan(reps, link);
  }
  return 0;
}

// hetkern-offload-bench: the offload scan schedules on device-resident tensors next to the
// OpenMP copy canary built the same way, plus the per-call latency of a small shape on the device
// and on the host. Prints one JSON record per line (read by bench/offload_report.py):
//   {"group", "case", "impl", "role": ours|copy|host, "ms", "rate", "unit", "check"}
// rate is GB/s of input read plus output written. Every timed schedule's output is checked against
// the host's result first.
//
// usage: hetkern-offload-bench [--quick] [--sweep]
//   --quick  small shapes, for a smoke test
//   --sweep  every case also with a sweep of teams, threads and items (for columns: threads
//            and width in one pass, and a chunked run)
//   --case chained|rows|columns  only the long line(s) (one, and eight of an eighth the length), the
//            lines along the contiguous axis, or the scanned axis outside it (repeatable:
//            --case rows --case columns)
//   --schedule TEXT  also time this schedule in the one-line chained case (repeatable)
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "hetkern/hetkern.hpp"

namespace {

using namespace hk;
using float16_t = _Float16;

// Median milliseconds of fn over repetitions lasting at least min_seconds (after two warm-ups:
// the first target region of a kernel JIT-compiles it).
double median_ms(const std::function<void()>& fn, double min_seconds = 0.15, int min_reps = 5) {
  fn();
  fn();
  std::vector<double> t;
  const double start = omp_get_wtime();
  while (int(t.size()) < min_reps || omp_get_wtime() - start < min_seconds) {
    const double t0 = omp_get_wtime();
    fn();
    t.push_back((omp_get_wtime() - t0) * 1e3);
    if (t.size() >= 200) break;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void emit(const std::string& group, const std::string& case_name, const std::string& impl,
          const char* role, double ms, double rate, const char* unit, const std::string& check) {
  std::printf(
      "{\"group\": \"%s\", \"case\": \"%s\", \"impl\": \"%s\", \"role\": \"%s\", \"ms\": %.6f, "
      "\"rate\": %.3f, \"unit\": \"%s\", \"check\": \"%s\"}\n",
      group.c_str(), case_name.c_str(), impl.c_str(), role, ms, rate, unit, check.c_str());
  std::fflush(stdout);
}

template <class T> void fill(std::vector<T>& v, std::mt19937_64& rng) {
  for (auto& e : v) {
    if constexpr (std::is_integral_v<T>)
      e = T(rng());
    else if constexpr (std::is_same_v<T, float>)
      e = float(int(rng() % 2001) - 1000) / 1024.0f;
    else
      e = float16_t(float(int(rng() % 33) - 16) / 16.0f);
  }
}

// Worst error of got against the host's result, in units of the spec's bound: float32 within
// 2^-24 |y| plus 2^-45 of the line's absolute sum (float64 accumulation in any order, a generous
// 2^-40 here since the host orders differently too); float16 within one float16 ulp of the
// float32 accumulation each side; integers exactly.
template <class T>
std::string check(const std::vector<T>& got, const std::vector<T>& want, double abs_scale) {
  if constexpr (std::is_integral_v<T>) {
    return std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0 ? "exact" : "MISMATCH";
  } else {
    double worst = 0;
#pragma omp parallel for reduction(max : worst)
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double g = double(got[i]), w = double(want[i]);
      const double bound = std::is_same_v<T, float>
                               ? 0x1p-23 * std::fabs(w) + 0x1p-40 * abs_scale
                               : std::ldexp(2.0, std::max(std::ilogb(std::fabs(w) + 0x1p-24), -14) - 10);
      worst = std::max(worst, std::fabs(g - w) / bound);
    }
    return worst <= 1 ? "ok" : "MISMATCH (" + std::to_string(worst) + " x bound)";
  }
}

struct ScanCase {
  DataType type;
  std::vector<std::int64_t> sizes;
  int axis;
  std::vector<std::string> schedules;  // "" is the default offload schedule
};

std::string shape_text(const std::vector<std::int64_t>& sizes) {
  std::string s = "{";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "}";
}

template <class T> void run_scan_case(const ScanCase& c, std::mt19937_64& rng) {
  const TensorDesc desc(c.type, c.sizes);
  const std::size_t n = std::size_t(desc.element_count()), bytes = n * sizeof(T);
  const std::string name = "cumsum " + std::string(name_of(c.type)) + " " + shape_text(c.sizes) +
                           " axis " + std::to_string(c.axis);
  std::vector<T> x(n), want(n), got(n);
  fill(x, rng);
  cumulative_sum({desc, x.data()}, {desc, want.data()}, {.axis = c.axis});
  const double abs_scale = double(c.sizes[std::size_t(c.axis)]);  // |x| <= 1
  DeviceBuffer dx(bytes), dy(bytes);
  dx.upload(x.data(), bytes);
  const double gb = 2.0 * double(bytes) / 1e9;
  for (const std::string& text : c.schedules) {
    const Schedule schedule = text.empty() ? Schedule() : Schedule::parse(text);
    auto run = [&] { cumulative_sum(DeviceConstTensor{desc, &dx}, DeviceTensor{desc, &dy}, {.axis = c.axis}, schedule); };
    try {
      run();
    } catch (const Error& e) {
      emit("scan", name, "hetkern " + text, "ours", 0, 0, "GB/s", std::string("refused: ") + e.what());
      continue;
    }
    dy.download(got.data(), bytes);
    const std::string verdict = check(got, want, abs_scale);
    const double ms = median_ms(run);
    emit("scan", name, "hetkern " + (text.empty() ? std::string("(default)") : text), "ours", ms,
         gb / (ms * 1e-3), "GB/s", verdict);
  }
  // The copy canary over the same bytes, at the teams x threads that matter.
  const int configs[][2] = {{65536, 256}, {32768, 512}, {131072, 128}, {16384, 256}, {2112, 256}, {1056, 256}};
  for (const auto& tc : configs) {
    const double ms = median_ms([&] { device_copy(dx.data(), dy.data(), bytes, tc[0], tc[1]); });
    emit("scan", name,
         "omp copy canary " + std::to_string(tc[0]) + "x" + std::to_string(tc[1]), "copy", ms,
         gb / (ms * 1e-3), "GB/s", "");
  }
}

void small_latency() {
  const TensorDesc desc(DataType::float32, {1, 1, 3, 4});
  std::vector<float> x = {2, 1, 3, 5, 3, 8, 7, 3, 9, 6, 2, 4}, y(12);
  DeviceBuffer dx(48), dy(48);
  dx.upload(x.data(), 48);
  const std::string name = "cumsum float32 {1,1,3,4} axis 3 (per call)";
  const double dev = median_ms([&] { cumulative_sum(DeviceConstTensor{desc, &dx}, DeviceTensor{desc, &dy}, {.axis = 3}); });
  emit("latency", name, "device tensors, default offload schedule", "ours", dev, 0, "-", "");
  const double host_offload = median_ms([&] {
    cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 3}, Schedule::parse("scan.offload_rows"));
  });
  emit("latency", name, "host tensors, scan.offload_rows (transfers included)", "ours", host_offload, 0, "-", "");
  const double host = median_ms([&] { cumulative_sum({desc, x.data()}, {desc, y.data()}, {.axis = 3}); });
  emit("latency", name, "host tensors, host default schedule", "host", host, 0, "-", "");
}

}  // namespace

int main(int argc, char** argv) {
  auto has = [&](std::string_view flag) {
    return std::find_if(argv + 1, argv + argc, [&](const char* a) { return flag == a; }) != argv + argc;
  };
  const bool quick = has("--quick"), sweep = has("--sweep");
  // Every "--case NAME" given (none: all cases).
  std::vector<std::string_view> only_cases;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--case") only_cases.push_back(argv[i + 1]);
  std::vector<std::string> extra_chained;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--schedule") extra_chained.push_back(argv[i + 1]);
  std::fprintf(stderr, "offload device %d (%s), %d OpenMP devices\n", offload_device(),
               offload_on_host() ? "host fallback" : "GPU", omp_get_num_devices());
  const std::int64_t long_line = quick ? std::int64_t(1) << 20 : std::int64_t(1) << 28;
  const std::int64_t side = quick ? 1024 : 16384;
  // Items as bytes per thread, so that one list serves every element size.
  auto items = [](DataType t, int bytes) { return std::to_string(bytes / int(size_of(t))); };
  auto chain = [&](DataType t) {
    std::vector<std::string> v = {""};
    if (sweep) {
      for (int threads : {64, 128, 256})
        for (int bytes : {64, 128})
          v.push_back("scan.offload_chained(threads=" + std::to_string(threads) + ", items=" + items(t, bytes) + ")");
      v.push_back("scan.offload_chained(threads=128, items=" + items(t, 96) + ")");
      for (int teams : {528, 792}) v.push_back("scan.offload_chained(teams=" + std::to_string(teams) + ")");
    }
    v.insert(v.end(), extra_chained.begin(), extra_chained.end());
    return v;
  };
  auto rows = [&](DataType t) {
    std::vector<std::string> v = {""};
    if (sweep) {
      for (int threads : {64, 128})
        for (int ahead : {0, 1, 2})
          v.push_back("scan.offload_rows(threads=" + std::to_string(threads) + ", items=" + items(t, 64) +
                      ", ahead=" + std::to_string(ahead) + ")");
      v.push_back("scan.offload_rows(teams=2112)");
      for (int threads : {64, 128, 256})
        for (int vectors : {1, 2, 4})
          v.push_back("scan.offload_warp_rows(threads=" + std::to_string(threads) +
                      ", vectors=" + std::to_string(vectors) + ")");
    }
    return v;
  };
  auto cols = [&](DataType t) {
    std::vector<std::string> v = {""};
    if (sweep) {
      // Width as bytes of neighbouring lines per team, like items above.
      // 512-thread teams only for 4-byte integers; other types' teams get 256.
      for (int threads : {128, 256, 512})
        for (int bytes : {128, 256, 512})
          v.push_back("scan.offload_columns(threads=" + std::to_string(threads) + ", chunks=1, width=" +
                      items(t, bytes) + ")");
      // Runs of 8 rows at the default threads and width (2-byte types default to 16).
      v.push_back("scan.offload_columns(chunks=1, items=8)");
      v.push_back("scan.offload_columns(threads=256, chunks=4)");
      // The next tile in registers, against tiles in flight through team memory by rows a thread.
      v.push_back("scan.offload_columns(chunks=1, stages=1)");
      for (int rows : {8, 12, 16})
        for (int stages : {2, 3})
          v.push_back("scan.offload_columns(chunks=1, items=" + std::to_string(rows) +
                      ", stages=" + std::to_string(stages) + ")");
    }
    return v;
  };
  std::mt19937_64 rng(1);
  const double start = omp_get_wtime();
  try {
    // Case by case, each for every type: a case that fails leaves the others' records.
    // "chained" names both the one long line and 8 long lines.
    const char* const case_names[] = {"rows", "columns", "chained", "chained"};
    for (int i = 0; i < 4; ++i) {
      if (!only_cases.empty() && std::find(only_cases.begin(), only_cases.end(), case_names[i]) == only_cases.end())
        continue;
      for (DataType t : {DataType::float32, DataType::int32, DataType::float16}) {
        const ScanCase cases[] = {{t, {side, side}, 1, rows(t)}, {t, {side, side}, 0, cols(t)}, {t, {long_line}, 0, chain(t)},
                                  {t, {8, long_line / 8}, 1, {""}}};
        std::fprintf(stderr, "%.1f s: %s %s\n", omp_get_wtime() - start, case_names[i], std::string(name_of(t)).c_str());
        switch (t) {
          case DataType::float32: run_scan_case<float>(cases[i], rng); break;
          case DataType::int32: run_scan_case<std::int32_t>(cases[i], rng); break;
          default: run_scan_case<float16_t>(cases[i], rng); break;
        }
      }
    }
    small_latency();
  } catch (const Error& e) {
    std::fprintf(stderr, "hetkern-offload-bench: %s\n", e.what());
    return 2;
  }
  return 0;
}

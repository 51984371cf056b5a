// `hetkern info`: what this build is, what the CPU offers, which schedules exist.
#include <iostream>

#include "hetkern/hetkern.hpp"
#include "tools/cli.hpp"

namespace hk::cli {
namespace {

void print_strategies(const char* title, Operator op) {
  std::cout << "\n" << title << "\n";
  for (const auto& s : strategies(op)) {
    std::cout << "  " << s.name << "\n      " << s.meaning << "\n";
    for (const auto& p : s.params)
      std::cout << "      " << p.key << " = " << p.min << ".." << p.max << "  " << p.meaning << "\n";
  }
}

void print_info() {
  const BuildInfo b = build_info();
  std::cout << "hetkern " << b.version << "\n";
  std::cout << "build:    " << b.compiler << ", host OpenMP " << (b.openmp ? "on" : "off")
            << ", offload " << (b.offload ? "on" : "off") << "\n";
  std::cout << "cpu:      ";
  const auto features = cpu_features();
  if (features.empty()) std::cout << "(no x86 SIMD extensions detected)";
  for (const auto& f : features) std::cout << f << " ";
  std::cout << "\nisa:      " << name_of(active_isa()) << " (detected " << name_of(detected_isa())
            << "; cap it with HETKERN_MAX_ISA=portable|avx2|avx512|avx512_vnni|amx)\n";
  for (const auto& k : kernel_paths(active_isa()))
    std::cout << "  " << k.op << ": " << k.kernels << "\n";
  std::cout << "threads:  " << default_threads() << " (OpenMP default; set OMP_NUM_THREADS)\n";
  print_strategies("schedules of cumsum and cumprod:", Operator::cumulative_sum);
  print_strategies("schedules of qlinear-matmul:", Operator::quantized_linear_matmul);
  std::cout << "\nWithout --schedule, hetkern picks one from the shape and the thread count.\n";
}

}  // namespace

void add_info(CLI::App& app) {
  app.add_subcommand("info", "show the build, CPU features and available schedules")
      ->callback(print_info);
}

}  // namespace hk::cli

// `hetkern info`: what this build is, what the CPU offers, the topology and binding plan, which
// schedules exist.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string>

#include "hetkern/hetkern.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif
#include "runtime/tuning/json_text.hpp"
#include "tools/cli.hpp"

namespace hk::cli {
namespace {

struct InfoArgs {
  bool json = false;
  bool devices = false;
  int threads = 0;
  std::string pin;
};

void print_strategies(const char* title, Operator op) {
  std::cout << "\n" << title << "\n";
  for (const auto& s : strategies(op)) {
    std::cout << "  " << s.name << "\n      " << s.meaning << "\n";
    if (!s.unavailable.empty()) std::cout << "      not available here: " << s.unavailable << "\n";
    for (const auto& p : s.params) {
      std::cout << "      " << p.key << " = ";
      if (p.choices.empty()) std::cout << p.min << ".." << p.max;
      for (std::size_t c = 0; c < p.choices.size(); ++c) std::cout << (c ? "|" : "") << p.choices[c];
      std::cout << "  " << p.meaning << "\n";
    }
  }
}

std::string size_text(std::int64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string int_list(const std::vector<int>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

void print_topology(const TopologyInfo& t, const BindingPlan& plan) {
  std::cout << "topology: ";
  if (!t.available) {
    std::cout << "unavailable (" << t.reason << ")\n";
  } else {
    std::cout << t.packages << " packages, " << t.numa_nodes << " NUMA nodes, " << t.cores << " cores, "
              << t.pus << " PUs (" << t.source << ", " << t.digest << ")\n  caches:";
    for (const auto& c : t.caches) std::cout << " " << c.count << " x L" << c.level << " " << size_text(c.size_bytes) << ",";
    std::cout << "\n";
  }
  std::cout << "binding:  " << plan.threads << " threads, pin=" << name_of(plan.policy) << ":";
  for (std::size_t i = 0; i < plan.pus.size(); ++i) std::cout << (i % 16 ? " " : "\n  ") << plan.pus[i];
  if (!plan.note.empty()) std::cout << "\n  (" << plan.note << ")";
  std::cout << "\n";
}

void print_json(const TopologyInfo& t, const BindingPlan& plan) {
  std::string caches = "[";
  for (std::size_t i = 0; i < t.caches.size(); ++i)
    caches += std::string(i ? ", " : "") + "{\"level\": " + std::to_string(t.caches[i].level) +
              ", \"size_bytes\": " + std::to_string(t.caches[i].size_bytes) +
              ", \"count\": " + std::to_string(t.caches[i].count) + "}";
  caches += "]";
  std::cout << "{\"version\": " << detail::json_quoted(build_info().version) << ", \"isa\": " << detail::json_quoted(name_of(active_isa()))
            << ", \"topology_available\": " << (t.available ? "true" : "false")
            << ", \"source\": " << detail::json_quoted(t.source) << ", \"reason\": " << detail::json_quoted(t.reason)
            << ", \"digest\": " << detail::json_quoted(t.digest) << ", \"packages\": " << t.packages
            << ", \"numa_nodes\": " << t.numa_nodes << ", \"cores\": " << t.cores << ", \"pus\": " << t.pus
            << ", \"caches\": " << caches << ", \"threads\": " << plan.threads
            << ", \"pin\": " << detail::json_quoted(name_of(plan.policy)) << ", \"binding\": " << int_list(plan.pus)
            << ", \"binding_numa_nodes\": " << int_list(plan.numa_nodes)
            << ", \"binding_applied\": " << (plan.applied ? "true" : "false") << ", \"note\": " << detail::json_quoted(plan.note)
            << "}\n";
}

#ifdef HETKERN_OFFLOAD
// The GPU plugin is opened only with --devices: without it, info starts as fast as a CPU-only
// build and says whether the plugin's file is there.
void print_offload(bool devices) {
  const GpuPluginStatus s = devices ? load_gpu_plugin() : gpu_plugin_status();
  std::cout << "offload:  ";
  if (!s.error.empty())
    std::cout << "unavailable (" << s.error << "); the offload schedules fail with this reason\n";
  else if (!s.loaded)
    std::cout << "available, not loaded (" << s.path << "; --devices loads it and lists the device)\n";
  else if (offload_on_host())
    std::cout << "loaded (" << s.path << "); no GPU: the offload schedules run on the host\n";
  else {
    std::cout << "loaded (" << s.path << "); GPU: OpenMP device " << offload_device() << "\n";
    // The first target region compiles the GPU kernels (tens of seconds on a machine that has
    // not cached them yet): --devices is the command to run once after installing.
    std::cout << "kernels:  " << std::flush;
    const auto start = std::chrono::steady_clock::now();
    warm_up_offload();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::cout << "ready in " << std::fixed << std::setprecision(2) << took.count() << std::defaultfloat
              << " s (compiled once per machine, then read from the GPU kernel cache)\n";
    const int team_memory = gpu_team_memory_bytes();
    std::cout << "team memory: " << team_memory / 1024 << " KB a kernel team"
              << (team_memory > 48 * 1024 ? " (past 48 KB through hetkern's launch shim)\n"
                                          : " (without hetkern's launch shim as the CUDA driver, or on a GPU that "
                                            "allows no more: kernels that want more run fewer pipeline stages; "
                                            "docs/gpu.md)\n");
  }
}
#endif

void print_info(const InfoArgs& args) {
  const int threads = args.threads > 0 ? args.threads : default_threads();
  const PinPolicy pin = args.pin.empty() ? default_pin_policy() : parse_pin_policy(args.pin);
  const TopologyInfo topology = topology_info();
  const BindingPlan plan = binding_plan(threads, pin);
  if (args.json) {
    print_json(topology, plan);
    return;
  }
  const BuildInfo b = build_info();
  std::cout << "hetkern " << b.version << "\n";
  std::cout << "build:    " << b.compiler << ", host OpenMP " << (b.openmp ? "on" : "off")
            << ", offload " << (b.offload ? "on" : "off") << "\n";
#ifdef HETKERN_OFFLOAD
  print_offload(args.devices);
#endif
  std::cout << "cpu:      ";
  const auto features = cpu_features();
  if (features.empty()) std::cout << "(no x86 SIMD extensions detected)";
  for (const auto& f : features) std::cout << f << " ";
  std::cout << "\nisa:      " << name_of(active_isa()) << " (detected " << name_of(detected_isa())
            << "; cap it with HETKERN_MAX_ISA=portable|avx2|avx512|avx512_vnni|amx)\n";
  for (const auto& k : kernel_paths(active_isa()))
    std::cout << "  " << k.op << ": " << k.kernels << "\n";
  std::cout << "threads:  " << default_threads() << " (OpenMP default; set OMP_NUM_THREADS)\n";
  print_topology(topology, plan);
  print_strategies("schedules of cumsum and cumprod:", Operator::cumulative_sum);
  print_strategies("schedules of qlinear-matmul:", Operator::quantized_linear_matmul);
  std::cout << "\nWithout --schedule, a call runs the first that applies of: HETKERN_SCHEDULE, the tuning database's\n"
               "record (hetkern tune) or its nearest tuned shape, the cost model (on a machine with a GPU), the\n"
               "heuristic from the shape and the thread count (docs/tuning.md).\n";
}

}  // namespace

void add_info(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand(
      "info", "show the build, CPU features, topology and binding plan, and available schedules");
  cmd->add_flag("--json", args->json,
                "print the topology and the binding plan as one JSON object (packages, numa_nodes, "
                "cores, pus, caches, binding, ...)");
#ifdef HETKERN_OFFLOAD
  cmd->add_flag("--devices", args->devices,
                "load the GPU plugin, show the offload device and get its kernels ready (compiled "
                "once per machine; without it, info only says whether the plugin is there); not with --json")
      ->excludes("--json");
#endif
  cmd->add_option("--threads", args->threads, "threads of the binding plan; default: OpenMP's default")
      ->check(whole_number_within(1, max_threads));
  cmd->add_option("--pin", args->pin,
                  "pinning policy of the binding plan: compact, scatter, numa or none; default: the "
                  "library's default policy");
  cmd->callback([args] { print_info(*args); });
}

}  // namespace hk::cli

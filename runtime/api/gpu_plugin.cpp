// libhetkern's side of the GPU plugin: finds libhetkern_gpu next to libhetkern (or at
// HETKERN_GPU_PLUGIN), opens it on the first call that needs it, and defines every function of
// HETKERN_GPU_FUNCTIONS as a forwarder to the plugin's definition.

// This file defines every member of ScratchLease, as forwarders: the fields it never names are
// set by the plugin's constructor.
#pragma clang diagnostic ignored "-Wunused-private-field"
#include "runtime/api/gpu_plugin.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "hetkern/error.hpp"
#include "runtime/platform/gpu_jit_cache.hpp"

namespace hk {
namespace detail {
namespace {

constexpr const char* plugin_file = "libhetkern_gpu.so";

// HETKERN_GPU_PLUGIN, else libhetkern_gpu.so in the folder libhetkern was loaded from (the build
// tree's lib/ and the installed libdir alike).
std::string plugin_path() {
  if (const char* p = std::getenv("HETKERN_GPU_PLUGIN"); p && *p) return p;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_path), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    const auto slash = self.rfind('/');
    if (slash != std::string::npos) return self.substr(0, slash + 1) + plugin_file;
  }
  return plugin_file;
}

struct Plugin {
  std::mutex mutex;
  bool tried = false;
  std::string path = plugin_path();
  std::string error;
  std::atomic<const GpuPluginTable*> table{nullptr};
};
// Never destroyed: forwarders may run from other libraries' exit handlers.
Plugin& plugin() {
  static Plugin* p = new Plugin;
  return *p;
}

bool gpu_driver_present();

// Opens the launch shim (runtime/platform/cuda_launch_shim.cpp), which must be loaded before the
// offload runtime opens its CUDA driver, unless HETKERN_CUDA_SHIM=off. Where it cannot be opened
// (no libcuda.so.1), the runtime finds no GPU either; kernels stay within 48 KB of team memory
// wherever it is not the runtime's driver (gpu_arch.hpp).
void open_launch_shim(const std::string& plugin_path) {
  if (const char* v = std::getenv("HETKERN_CUDA_SHIM"); v && *v) {
    if (std::strcmp(v, "off") == 0) return;
    std::fprintf(stderr, "hetkern: warning: HETKERN_CUDA_SHIM=%s ignored: expected off (or nothing)\n", v);
  }
  const auto slash = plugin_path.rfind('/');
  const std::string folder = slash == std::string::npos ? std::string() : plugin_path.substr(0, slash + 1);
  dlopen((folder + "libhetkern_cuda.so").c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process
}

// Opens the plugin and checks its table; the reason in words when that fails.
std::string open_plugin(Plugin& p) {
  // The kernel cache's variables must be set before the offload runtime starts with the plugin. A
  // missing plugin is left to dlopen, whose reason names it.
  if (gpu_driver_present() && access(p.path.c_str(), F_OK) == 0) {
    if (std::string refusal = prepare_gpu_jit_cache(p.path); !refusal.empty()) return refusal;
    open_launch_shim(p.path);
  }
  void* handle = dlopen(p.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return dlerror();
  auto* entry = reinterpret_cast<HetkernGpuPluginEntry*>(dlsym(handle, HETKERN_GPU_PLUGIN_ENTRY));
  if (!entry) return p.path + ": not a hetkern GPU plugin (no " HETKERN_GPU_PLUGIN_ENTRY ")";
  const GpuPluginTable* table = entry();
  if (table->abi != gpu_plugin_abi || table->size != sizeof(GpuPluginTable) ||
      std::strcmp(table->version, HETKERN_VERSION) != 0)
    return p.path + ": built for hetkern " + table->version + ", this is " + HETKERN_VERSION;
  // Kept open for the process: its device memory and runtime live until exit.
  p.table = table;
  return {};
}

const GpuPluginTable* try_load() {
  Plugin& p = plugin();
  if (const GpuPluginTable* t = p.table.load()) return t;
  const std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.tried) {
    p.tried = true;
    p.error = open_plugin(p);
  }
  return p.table.load();
}

// The kernels are NVPTX images (HETKERN_OFFLOAD_ARCHS): a device needs the NVIDIA driver, whose
// control node exists wherever CUDA can reach a GPU, containers included. Without it the plugin
// would only report the host, after starting the offload runtime for nothing.
bool gpu_driver_present() {
  static const bool present = access("/dev/nvidiactl", F_OK) == 0;
  return present;
}

const GpuPluginTable* gpu_plugin_gpu_only() {
  return gpu_driver_present() ? try_load() : plugin().table.load();
}

const GpuPluginTable* gpu_plugin_loaded() { return plugin().table.load(); }

const GpuPluginTable& gpu_plugin_required() {
  if (const GpuPluginTable* t = try_load()) return *t;
  throw Error(Errc::unavailable, "offload", "libhetkern_gpu", plugin().error);
}

}  // namespace
}  // namespace detail

GpuPluginStatus gpu_plugin_status() {
  detail::Plugin& p = detail::plugin();
  const std::lock_guard<std::mutex> lock(p.mutex);
  GpuPluginStatus s{p.path, p.table.load() != nullptr, p.error};
  struct stat st{};
  if (!p.tried && stat(p.path.c_str(), &st) != 0)
    s.error = p.path + ": " + std::strerror(errno);
  else if (!p.tried && detail::gpu_driver_present())
    s.error = detail::gpu_jit_cache_refusal(p.path);
  return s;
}

GpuPluginStatus load_gpu_plugin() {
  detail::try_load();
  return gpu_plugin_status();
}

}  // namespace hk

// The forwarders, as listed in gpu_plugin.hpp.
#define HETKERN_GPU_CALL_required(t, call, ...) \
  {                                             \
    const auto* t = &hk::detail::gpu_plugin_required(); \
    return call;                                \
  }
#define HETKERN_GPU_CALL_gpu_only(t, call, ...)                      \
  {                                                                  \
    if (const auto* t = hk::detail::gpu_plugin_gpu_only()) return call; \
    return __VA_ARGS__;                                              \
  }
#define HETKERN_GPU_CALL_loaded(t, call, ...)                      \
  {                                                                \
    if (const auto* t = hk::detail::gpu_plugin_loaded()) return call; \
    return __VA_ARGS__;                                            \
  }
#define HETKERN_GPU_TABLE_required() (&hk::detail::gpu_plugin_required())
#define HETKERN_GPU_TABLE_loaded() hk::detail::gpu_plugin_loaded()

#define HETKERN_GPU_FORWARD_F(field, R, name, params, args, need, ...) \
  R name params HETKERN_GPU_CALL_##need(t, t->field args, __VA_ARGS__)
#define HETKERN_GPU_FORWARD_M(field, Class, R, name, params, args, quals, need, ...) \
  R Class::name params quals HETKERN_GPU_CALL_##need(t, (this->*t->field) args, __VA_ARGS__)
#define HETKERN_GPU_FORWARD_C(field, Class, Name, params, args, quals, need) \
  Class::Name params quals {                                                \
    if (const auto* t = HETKERN_GPU_TABLE_##need()) t->field HETKERN_GPU_WITH_SELF(this, args); \
  }
#define HETKERN_GPU_FORWARD_D(field, Class, Name) \
  Class::~Name() {                                \
    if (const auto* t = HETKERN_GPU_TABLE_loaded()) t->field(this); \
  }

HETKERN_GPU_FUNCTIONS(HETKERN_GPU_FORWARD_F, HETKERN_GPU_FORWARD_M, HETKERN_GPU_FORWARD_C,
                      HETKERN_GPU_FORWARD_D)

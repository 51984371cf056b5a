// The GPU kernel cache's set-up (see gpu_jit_cache.hpp): where the cache lives, whether the
// runtime's LLVM stage can be replaced, and what the caching ptxas needs to know.
#include "runtime/platform/gpu_jit_cache.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/platform/gpu_arch.hpp"

namespace hk::detail {
namespace {

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// mkdir -p; the reason in words when it fails.
std::string make_directories(const std::string& dir) {
  for (std::size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return part + ": " + std::strerror(errno);
  }
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + ": not a folder";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return dir + ": " + std::strerror(errno);
  return {};
}

std::string cache_directory(const JitCacheInputs& in) {
  if (!in.cache_setting.empty()) return in.cache_setting;
  if (!in.xdg_cache_home.empty() && in.xdg_cache_home[0] == '/') return in.xdg_cache_home + "/hetkern/gpu";
  if (!in.home.empty()) return in.home + "/.cache/hetkern/gpu";
  return {};
}

// The architecture every visible GPU shares. Empty when the GPUs differ or one does not answer: the
// runtime then compiles per architecture, and only cubins are cached.
std::string visible_gpu_arch() {
  std::string arch;
  for (int ordinal = 0; ordinal < cuda_device_count(); ++ordinal) {
    const int capability = cuda_compute_capability(ordinal);
    if (capability == 0) return {};
    const std::string this_arch = "sm_" + std::to_string(capability);
    if (!arch.empty() && arch != this_arch) return {};
    arch = this_arch;
  }
  return arch;
}

}  // namespace

std::string plugin_image_key(const std::string& plugin_path, const std::string& gpu_arch) {
  std::ifstream file(plugin_path, std::ios::binary);
  if (!file) return {};
  std::uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a: a content key, not a defence
  for (std::istreambuf_iterator<char> it(file), end; it != end; ++it)
    hash = (hash ^ static_cast<unsigned char>(*it)) * 0x100000001b3u;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(text) + "-" + gpu_arch;
}

JitCacheSetup plan_jit_cache(const JitCacheInputs& in) {
  JitCacheSetup setup;
  // First on PATH even without a cache: the script also builds kernels that use Hopper's
  // warpgroup MMA for sm_90a, which the runtime's own ptxas call (sm_90) rejects.
  setup.environment.emplace_back("PATH", in.path.empty() ? in.wrapper_dir : in.wrapper_dir + ":" + in.path);
  if (in.cache_setting == "off") return setup;
  const std::string dir = cache_directory(in);
  if (dir.empty()) {
    setup.warning = "no GPU kernel cache (neither HETKERN_GPU_CACHE, XDG_CACHE_HOME nor HOME is set)";
    return setup;
  }
  if (const std::string why = make_directories(dir); !why.empty()) {
    setup.warning = "the GPU kernel cache cannot be written (" + why + ")";
    return setup;
  }
  setup.directory = dir;
  setup.environment.emplace_back("HETKERN_GPU_CACHE_DIR", dir);
  if (in.gpu_arch.empty()) return setup;
  const std::string key = plugin_image_key(in.plugin_path, in.gpu_arch);
  if (key.empty()) return setup;
  const std::string ptx = dir + "/" + key + ".ptx";
  struct stat st{};
  const bool kept = stat(ptx.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  if (!kept) {
    setup.environment.emplace_back("HETKERN_GPU_CACHE_PTX", ptx);
  } else if (!in.runtime_loaded && !in.user_replacement) {
    // Replaces every JIT image the runtime compiles: only while hetkern's is the one it knows,
    // i.e. the runtime was not already loaded by the program itself or another library.
    setup.environment.emplace_back("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", ptx);
  }
  return setup;
}

void prepare_gpu_jit_cache(const std::string& plugin_path) {
  JitCacheInputs in;
  in.plugin_path = plugin_path;
  const auto slash = plugin_path.rfind('/');
  in.wrapper_dir = (slash == std::string::npos ? std::string(".") : plugin_path.substr(0, slash)) + "/hetkern";
  if (access((in.wrapper_dir + "/ptxas").c_str(), X_OK) != 0) return;  // a build without the script
  in.cache_setting = environment("HETKERN_GPU_CACHE");
  in.xdg_cache_home = environment("XDG_CACHE_HOME");
  in.home = environment("HOME");
  in.path = environment("PATH");
  if (void* runtime = dlopen("libomptarget.so.19.1", RTLD_LAZY | RTLD_NOLOAD)) {
    in.runtime_loaded = true;
    dlclose(runtime);
  }
  in.user_replacement = !environment("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT").empty() ||
                        !environment("LIBOMPTARGET_JIT_REPLACEMENT_MODULE").empty();
  in.gpu_arch = visible_gpu_arch();
  const JitCacheSetup setup = plan_jit_cache(in);
  if (!setup.warning.empty())
    std::fprintf(stderr, "hetkern: warning: %s: each process compiles the GPU kernels again\n",
                 setup.warning.c_str());
  for (const auto& [name, value] : setup.environment) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace hk::detail

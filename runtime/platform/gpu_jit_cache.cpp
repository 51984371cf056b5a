// The GPU kernel cache's set-up (see gpu_jit_cache.hpp): where the cache lives, whether the
// runtime's LLVM stage can be replaced, what the caching ptxas needs to know, and whether the
// kernels can be built at all.
#include "runtime/platform/gpu_jit_cache.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/platform/gpu_arch.hpp"

namespace hk::detail {
namespace {

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A folder this process can write in; the reason in words when `dir` is not one.
std::string writable_folder(const std::string& dir) {
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + ": not a folder";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return dir + ": " + std::strerror(errno);
  return {};
}

// mkdir -p; the reason in words when it fails.
std::string make_directories(const std::string& dir) {
  for (std::size_t at = 1; at <= dir.size(); ++at) {
    if (at < dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return part + ": " + std::strerror(errno);
  }
  return writable_folder(dir);
}

// The preview's check of the folder that make_directories would create: a missing one would be
// created empty, so only one that is there and cannot be written says why.
std::string writable_if_present(const std::string& dir) {
  return access(dir.c_str(), F_OK) != 0 ? std::string() : writable_folder(dir);
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

// CUDA's ptxas, which the caching one runs for every PTX it has no cubin of: the first ptxas on
// `path` outside wrapper_dir; empty when there is none.
std::string cuda_ptxas_on(const std::string& path, const std::string& wrapper_dir) {
  std::error_code error;
  const std::filesystem::path wrapper = std::filesystem::weakly_canonical(wrapper_dir, error);
  for (std::size_t begin = 0; begin <= path.size();) {
    std::size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const std::string dir = path.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty() || std::filesystem::weakly_canonical(dir, error) == wrapper) continue;
    const std::string file = dir + "/ptxas";
    struct stat st{};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0) return file;
  }
  return {};
}

// The CUDA release of a ptxas as major * 100 + minor, from `ptxas --version` ("... release 12.4,
// V12.4.131"); 0 when it cannot be told.
int ptxas_release(const std::string& ptxas) {
  FILE* pipe = popen(("'" + ptxas + "' --version 2>/dev/null").c_str(), "r");
  if (!pipe) return 0;
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) text += buffer;
  pclose(pipe);
  const std::size_t at = text.find("release ");
  int major = 0, minor = 0;
  if (at == std::string::npos || std::sscanf(text.c_str() + at, "release %d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
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
  const std::string wrapper = in.wrapper_dir + "/ptxas";
  if (access(wrapper.c_str(), X_OK) != 0) {
    setup.refusal = wrapper + " is missing: the GPU kernels are built through it (it is installed beside " +
                    in.plugin_path + ")";
    return setup;
  }
  // First on PATH even without a cache: the script also builds kernels that use Hopper's
  // warpgroup MMA for sm_90a, which the runtime's own ptxas call (sm_90) rejects.
  setup.environment.emplace_back("PATH", in.path.empty() ? in.wrapper_dir : in.wrapper_dir + ":" + in.path);
  // Without CUDA's ptxas only a build kept in the cache, handed to the runtime in place of its own
  // compilation, can serve. Hopper's kernels use wgmma of mixed signedness, PTX ISA 8.4
  // (ptxas_cache.sh): CUDA 12.4 or newer.
  const std::string cuda_ptxas = cuda_ptxas_on(in.path, in.wrapper_dir);
  const auto needs_cuda_ptxas = [&](const std::string& because) {
    if (cuda_ptxas.empty()) {
      setup.refusal = "CUDA's ptxas is not on PATH (it compiles the GPU kernels; put CUDA's bin folder on PATH) and " +
                      because;
      return;
    }
    constexpr int wgmma_release = 1204;
    const int release = in.gpu_arch == "sm_90" ? ptxas_release(cuda_ptxas) : 0;
    if (release > 0 && release < wgmma_release)
      setup.refusal = cuda_ptxas + " is CUDA " + std::to_string(release / 100) + "." + std::to_string(release % 100) +
                      ", and the GPU kernels for sm_90 (Hopper's wgmma) need CUDA 12.4 or newer; " + because;
  };
  if (in.cache_setting == "off") {
    needs_cuda_ptxas("HETKERN_GPU_CACHE=off keeps no build of them");
    if (setup.refusal.empty())
      setup.notice = "compiling the GPU kernels (up to a minute, in every process: HETKERN_GPU_CACHE=off keeps none)";
    return setup;
  }
  const std::string dir = cache_directory(in);
  if (dir.empty()) {
    setup.warning = "no GPU kernel cache (neither HETKERN_GPU_CACHE, XDG_CACHE_HOME nor HOME is set)";
    needs_cuda_ptxas("there is no GPU kernel cache");
    return setup;
  }
  if (const std::string why = in.create_folder ? make_directories(dir) : writable_if_present(dir); !why.empty()) {
    setup.warning = "the GPU kernel cache cannot be written (" + why + ")";
    needs_cuda_ptxas(setup.warning);
    return setup;
  }
  setup.directory = dir;
  setup.environment.emplace_back("HETKERN_GPU_CACHE_DIR", dir);
  const std::string key = in.gpu_arch.empty() ? std::string() : plugin_image_key(in.plugin_path, in.gpu_arch);
  if (key.empty()) {
    needs_cuda_ptxas("the GPU kernel cache keeps only cubins where the GPUs' architectures differ");
    return setup;
  }
  const std::string ptx = dir + "/" + key + ".ptx";
  struct stat st{};
  const bool kept = stat(ptx.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  if (!kept) {
    setup.environment.emplace_back("HETKERN_GPU_CACHE_PTX", ptx);
    needs_cuda_ptxas("the GPU kernel cache (" + dir + ") holds no build of this plugin's kernels yet");
    if (setup.refusal.empty())
      setup.notice = "compiling the GPU kernels for " + in.gpu_arch + " (up to a minute, once: they are kept in " + dir +
                     " for later processes)";
  } else if (!in.runtime_loaded && !in.user_replacement) {
    // Replaces every JIT image the runtime compiles: only while hetkern's is the one it knows,
    // i.e. the runtime was not already loaded by the program itself or another library.
    setup.environment.emplace_back("LIBOMPTARGET_JIT_REPLACEMENT_OBJECT", ptx);
  } else {
    needs_cuda_ptxas("the runtime compiles this process's GPU kernels itself (it was loaded before hetkern, or "
                     "LIBOMPTARGET_JIT_REPLACEMENT_* is set)");
  }
  return setup;
}

namespace {

JitCacheInputs inputs_of_this_process(const std::string& plugin_path) {
  JitCacheInputs in;
  in.plugin_path = plugin_path;
  const auto slash = plugin_path.rfind('/');
  in.wrapper_dir = (slash == std::string::npos ? std::string(".") : plugin_path.substr(0, slash)) + "/hetkern";
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
  return in;
}

}  // namespace

std::string prepare_gpu_jit_cache(const std::string& plugin_path) {
  const JitCacheSetup setup = plan_jit_cache(inputs_of_this_process(plugin_path));
  if (!setup.refusal.empty()) return setup.refusal;
  if (!setup.warning.empty())
    std::fprintf(stderr, "hetkern: warning: %s: each process compiles the GPU kernels again\n",
                 setup.warning.c_str());
  if (!setup.notice.empty()) std::fprintf(stderr, "hetkern: %s\n", setup.notice.c_str());
  for (const auto& [name, value] : setup.environment) setenv(name.c_str(), value.c_str(), 1);
  return {};
}

std::string gpu_jit_cache_refusal(const std::string& plugin_path) {
  JitCacheInputs in = inputs_of_this_process(plugin_path);
  in.create_folder = false;
  return plan_jit_cache(in).refusal;
}

}  // namespace hk::detail

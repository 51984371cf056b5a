// The GPU kernel cache: what the plugin loader sets in the environment before LLVM's offload
// runtime starts, so that a process compiles hetkern's kernels only when no earlier process on the
// machine did. Two stages of the runtime's JIT are cached (docs/gpu.md#the-gpu-kernel-cache):
// - ptxas: lib/hetkern/ptxas (runtime/platform/ptxas_cache.sh) goes first on PATH and keeps each
//   cubin under the hash of its PTX and options;
// - LLVM: hetkern's PTX, kept by that script, is handed back to the runtime as
//   LIBOMPTARGET_JIT_REPLACEMENT_OBJECT, which skips the IR optimization and code generation.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hk::detail {

/// What the cache decision reads: files and the environment, gathered by the caller.
struct JitCacheInputs {
  std::string plugin_path;          ///< libhetkern_gpu.so: its bytes key the PTX
  std::string wrapper_dir;          ///< the folder holding the caching `ptxas`
  std::string cache_setting;        ///< HETKERN_GPU_CACHE: a folder, "off", or empty (default)
  std::string xdg_cache_home;       ///< XDG_CACHE_HOME
  std::string home;                 ///< HOME
  std::string path;                 ///< PATH
  std::string gpu_arch;             ///< e.g. "sm_90" when every visible GPU has it, else empty
  bool runtime_loaded = false;      ///< libomptarget already in the process: too late to replace
  bool user_replacement = false;    ///< the user set a LIBOMPTARGET_JIT_REPLACEMENT_* variable
  bool create_folder = true;        ///< false: a preview that creates nothing (a missing folder is empty)
};

/// The decision: variables to set, and at most one warning for stderr.
struct JitCacheSetup {
  std::string directory;  ///< the cache folder; empty when the cache is off or unusable
  std::vector<std::pair<std::string, std::string>> environment;
  std::string warning;
  /// A line for stderr where this process compiles the kernels from LLVM's stage on, which takes
  /// up to a minute: the cache holds no PTX of this plugin yet, or is off. Empty otherwise, and on
  /// GPUs of different architectures, where every process runs LLVM's stage and keeps only cubins.
  std::string notice;
  /// Why the kernels could not be built in this process (then the plugin is not loaded: LLVM 19's
  /// offload runtime crashes the process when a JIT compilation fails); empty when they can be.
  std::string refusal;
};

/// Decides from `in` and the files it names (the caching ptxas, a CUDA ptxas on in.path, the
/// kept PTX), creating the cache folder when it is missing (unless in.create_folder is false).
JitCacheSetup plan_jit_cache(const JitCacheInputs& in);

/// The 16-hex-digit key of the plugin's bytes with the architecture, e.g. "1f2e...-sm_90"; empty
/// when the file cannot be read.
std::string plugin_image_key(const std::string& plugin_path, const std::string& gpu_arch);

/// Reads the inputs from this process, plans and applies the result (setenv), and prints the
/// warning and the notice. Call before the plugin (and with it the offload runtime) is loaded;
/// returns the refusal, and a plugin refused must not be loaded.
std::string prepare_gpu_jit_cache(const std::string& plugin_path);

/// What prepare_gpu_jit_cache would refuse in this process, changing nothing (no folder created,
/// no variable set): `hetkern info` tells a plugin that would be refused without loading it.
std::string gpu_jit_cache_refusal(const std::string& plugin_path);

}  // namespace hk::detail

// The GPU kernel cache's decision (runtime/platform/gpu_jit_cache.hpp): which folder, which
// variables, when the runtime's LLVM stage is replaced by a kept PTX and when it must not be, and
// when the kernels cannot be built at all (the plugin is then refused).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "runtime/platform/gpu_jit_cache.hpp"

namespace {

namespace fs = std::filesystem;
using hk::detail::JitCacheInputs;
using hk::detail::JitCacheSetup;
using hk::detail::plan_jit_cache;
using hk::detail::plugin_image_key;

std::optional<std::string> variable(const JitCacheSetup& s, const std::string& name) {
  const auto it = std::find_if(s.environment.begin(), s.environment.end(),
                               [&](const auto& kv) { return kv.first == name; });
  if (it == s.environment.end()) return std::nullopt;
  return it->second;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void write_program(const fs::path& path, const std::string& body = "") {
  fs::create_directories(path.parent_path());
  write(path, "#!/bin/sh\n" + body);
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class GpuJitCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::path(::testing::TempDir()) /
           ("hetkern-jit-cache-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root);
    fs::create_directories(root);
    write(root / "libhetkern_gpu.so", "an image");
    in.plugin_path = (root / "libhetkern_gpu.so").string();
    in.wrapper_dir = (root / "hetkern").string();
    write_program(root / "hetkern" / "ptxas");
    write_program(root / "cuda" / "bin" / "ptxas");
    in.cache_setting = (root / "cache" / "gpu").string();
    in.path = (root / "cuda" / "bin").string() + ":/nonexistent";
    in.gpu_arch = "sm_90";
  }
  void TearDown() override { fs::remove_all(root); }
  std::string kept_ptx() const { return in.cache_setting + "/" + plugin_image_key(in.plugin_path, "sm_90") + ".ptx"; }

  fs::path root;
  JitCacheInputs in;
};

TEST_F(GpuJitCache, FirstProcessAsksForThePtxAndPutsTheCachingPtxasFirst) {
  const JitCacheSetup s = plan_jit_cache(in);
  EXPECT_EQ(s.warning, "");
  EXPECT_EQ(s.directory, in.cache_setting);
  EXPECT_TRUE(fs::is_directory(in.cache_setting));  // created, parents included
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_DIR"), in.cache_setting);
  EXPECT_EQ(variable(s, "PATH"), in.wrapper_dir + ":" + in.path);
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_PTX"), kept_ptx());
  EXPECT_EQ(variable(s, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), std::nullopt);
  EXPECT_EQ(s.refusal, "");
  // The minute-long compilation this process is about to start is announced, with where it goes.
  EXPECT_TRUE(contains(s.notice, "compiling the GPU kernels for sm_90")) << s.notice;
  EXPECT_TRUE(contains(s.notice, "kept in " + in.cache_setting)) << s.notice;
}

TEST_F(GpuJitCache, KeptPtxReplacesTheLlvmStage) {
  fs::create_directories(in.cache_setting);
  write(kept_ptx(), ".version 8.5\n");
  const JitCacheSetup s = plan_jit_cache(in);
  EXPECT_EQ(variable(s, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), kept_ptx());
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_PTX"), std::nullopt);
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_DIR"), in.cache_setting);
  EXPECT_EQ(s.notice, "");
}

TEST_F(GpuJitCache, EmptyKeptPtxIsNoPtx) {
  fs::create_directories(in.cache_setting);
  write(kept_ptx(), "");
  const JitCacheSetup s = plan_jit_cache(in);
  EXPECT_EQ(variable(s, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), std::nullopt);
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_PTX"), kept_ptx());
  EXPECT_TRUE(contains(s.notice, "compiling the GPU kernels")) << s.notice;
}

TEST_F(GpuJitCache, NoReplacementOnceTheRuntimeIsLoadedOrTheUserReplaces) {
  fs::create_directories(in.cache_setting);
  write(kept_ptx(), ".version 8.5\n");
  for (int which = 0; which < 2; ++which) {
    JitCacheInputs other = in;
    (which == 0 ? other.runtime_loaded : other.user_replacement) = true;
    const JitCacheSetup s = plan_jit_cache(other);
    EXPECT_EQ(variable(s, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), std::nullopt) << which;
    EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_DIR"), in.cache_setting) << which;  // cubins still kept
    EXPECT_EQ(s.notice, "") << which;  // LLVM's stage alone, the cubin from the cache
  }
}

TEST_F(GpuJitCache, MixedOrUnknownArchitecturesKeepOnlyCubins) {
  in.gpu_arch = "";
  const JitCacheSetup s = plan_jit_cache(in);
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_DIR"), in.cache_setting);
  EXPECT_EQ(variable(s, "HETKERN_GPU_CACHE_PTX"), std::nullopt);
  EXPECT_EQ(variable(s, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), std::nullopt);
  EXPECT_EQ(s.notice, "");  // every process runs LLVM's stage here; a line in each would be noise
}

TEST_F(GpuJitCache, KeyFollowsThePluginsBytesAndTheArchitecture) {
  const std::string key = plugin_image_key(in.plugin_path, "sm_90");
  EXPECT_EQ(key.size(), 16u + 6u);
  EXPECT_EQ(key.substr(16), "-sm_90");
  EXPECT_EQ(plugin_image_key(in.plugin_path, "sm_90"), key);
  EXPECT_NE(plugin_image_key(in.plugin_path, "sm_80"), plugin_image_key(in.plugin_path, "sm_90"));
  write(in.plugin_path, "an image, rebuilt");
  EXPECT_NE(plugin_image_key(in.plugin_path, "sm_90"), key);
  EXPECT_EQ(plugin_image_key((root / "missing.so").string(), "sm_90"), "");
}

// Only the script first on PATH, which still builds wgmma kernels for sm_90a (and caches nothing).
TEST_F(GpuJitCache, OffSetsOnlyThePath) {
  in.cache_setting = "off";
  const JitCacheSetup s = plan_jit_cache(in);
  ASSERT_EQ(s.environment.size(), 1u);
  EXPECT_EQ(variable(s, "PATH"), in.wrapper_dir + ":" + in.path);
  EXPECT_EQ(s.directory, "");
  EXPECT_EQ(s.warning, "");
  EXPECT_TRUE(contains(s.notice, "in every process")) << s.notice;
  in.path = "/nonexistent";  // refused: nothing is compiled, so nothing is announced
  const JitCacheSetup refused = plan_jit_cache(in);
  EXPECT_NE(refused.refusal, "");
  EXPECT_EQ(refused.notice, "");
}

TEST_F(GpuJitCache, DefaultFolderFromXdgThenHome) {
  in.cache_setting = "";
  in.xdg_cache_home = (root / "xdg").string();
  in.home = (root / "home").string();
  EXPECT_EQ(plan_jit_cache(in).directory, in.xdg_cache_home + "/hetkern/gpu");
  in.xdg_cache_home = "relative/ignored";  // the XDG rule: only absolute paths count
  EXPECT_EQ(plan_jit_cache(in).directory, in.home + "/.cache/hetkern/gpu");
  in.home = "";
  const JitCacheSetup s = plan_jit_cache(in);
  ASSERT_EQ(s.environment.size(), 1u);
  EXPECT_EQ(variable(s, "PATH"), in.wrapper_dir + ":" + in.path);
  EXPECT_NE(s.warning.find("HOME"), std::string::npos);
}

TEST_F(GpuJitCache, UnwritableFolderWarnsOnceAndSetsOnlyThePath) {
  write(root / "a-file", "");
  in.cache_setting = (root / "a-file" / "gpu").string();
  const JitCacheSetup s = plan_jit_cache(in);
  ASSERT_EQ(s.environment.size(), 1u);
  EXPECT_EQ(variable(s, "PATH"), in.wrapper_dir + ":" + in.path);
  EXPECT_EQ(s.directory, "");
  EXPECT_NE(s.warning.find("cannot be written"), std::string::npos) << s.warning;
  EXPECT_NE(s.warning.find(in.cache_setting.substr(0, in.cache_setting.size() - 4)), std::string::npos) << s.warning;
}

// LLVM 19's runtime crashes the process when its JIT compilation fails, so a plugin whose kernels
// cannot be built is refused: without the caching ptxas beside it (it builds wgmma for sm_90a).
TEST_F(GpuJitCache, MissingCachingPtxasRefuses) {
  fs::remove_all(root / "hetkern");
  const JitCacheSetup s = plan_jit_cache(in);
  EXPECT_TRUE(contains(s.refusal, in.wrapper_dir + "/ptxas is missing")) << s.refusal;
  EXPECT_TRUE(s.environment.empty());
}

// Without CUDA's ptxas (the caching one does not count) only a kept build serves, and only where
// the runtime takes it in place of its own compilation.
TEST_F(GpuJitCache, WithoutCudaPtxasOnlyAKeptBuildServes) {
  for (const std::string& path : {std::string("/nonexistent"), in.wrapper_dir, std::string()}) {
    in.path = path;
    const JitCacheSetup first = plan_jit_cache(in);
    EXPECT_TRUE(contains(first.refusal, "CUDA's ptxas is not on PATH")) << path;
    EXPECT_TRUE(contains(first.refusal, "holds no build")) << first.refusal;
    EXPECT_EQ(first.notice, "") << path;
  }
  write(kept_ptx(), ".version 8.5\n");
  const JitCacheSetup kept = plan_jit_cache(in);
  EXPECT_EQ(kept.refusal, "");
  EXPECT_EQ(variable(kept, "LIBOMPTARGET_JIT_REPLACEMENT_OBJECT"), kept_ptx());
  for (int which = 0; which < 2; ++which) {
    JitCacheInputs other = in;
    (which == 0 ? other.runtime_loaded : other.user_replacement) = true;
    EXPECT_TRUE(contains(plan_jit_cache(other).refusal, "compiles this process's GPU kernels itself")) << which;
  }
}

// `hetkern info` previews the decision: it creates no folder, and refuses where the plugin would.
TEST_F(GpuJitCache, PreviewCreatesNothingAndRefusesAlike) {
  in.create_folder = false;
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
  EXPECT_FALSE(fs::exists(in.cache_setting));
  in.path = "/nonexistent";
  const JitCacheSetup preview = plan_jit_cache(in);
  EXPECT_FALSE(fs::exists(in.cache_setting));
  in.create_folder = true;
  const JitCacheSetup real = plan_jit_cache(in);
  EXPECT_TRUE(fs::is_directory(in.cache_setting));
  EXPECT_TRUE(contains(preview.refusal, "holds no build")) << preview.refusal;
  EXPECT_EQ(preview.refusal, real.refusal);
  // A kept build serves the preview as it serves the plugin; a folder there but unwritable does not.
  write(kept_ptx(), ".version 8.5\n");
  in.create_folder = false;
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
  write(root / "a-file", "");
  in.cache_setting = (root / "a-file").string();
  EXPECT_TRUE(contains(plan_jit_cache(in).refusal, "not a folder")) << plan_jit_cache(in).refusal;
}

TEST_F(GpuJitCache, WithoutCudaPtxasNoCacheRefuses) {
  in.path = "/nonexistent";
  in.cache_setting = "off";
  EXPECT_TRUE(contains(plan_jit_cache(in).refusal, "HETKERN_GPU_CACHE=off")) << plan_jit_cache(in).refusal;
  write(root / "a-file", "");
  in.cache_setting = (root / "a-file" / "gpu").string();
  EXPECT_TRUE(contains(plan_jit_cache(in).refusal, "cannot be written"));
  in.cache_setting = (root / "cache" / "gpu").string();
  in.gpu_arch = "";
  EXPECT_TRUE(contains(plan_jit_cache(in).refusal, "architectures differ"));
  // Each of these is fine where CUDA's ptxas is on PATH.
  in.path = (root / "cuda" / "bin").string();
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
  in.cache_setting = "off";
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
}

// A CUDA ptxas too old for the wgmma of Hopper's kernels (PTX ISA 8.4, CUDA 12.4) would fail the
// same way; one whose release cannot be read is tried.
TEST_F(GpuJitCache, CudaPtxasOlderThanHoppersKernelsNeedRefuses) {
  const auto release = [&](const std::string& text) {
    write_program(root / "cuda" / "bin" / "ptxas", "echo 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho '" + text + "'\n");
  };
  release("Cuda compilation tools, release 12.3, V12.3.107");
  const JitCacheSetup old = plan_jit_cache(in);
  EXPECT_TRUE(contains(old.refusal, "/cuda/bin/ptxas is CUDA 12.3")) << old.refusal;
  EXPECT_TRUE(contains(old.refusal, "need CUDA 12.4 or newer")) << old.refusal;
  in.gpu_arch = "sm_80";
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
  in.gpu_arch = "sm_90";
  for (const char* text : {"Cuda compilation tools, release 12.4, V12.4.131", "Cuda compilation tools, release 13.0, V13.0.48",
                           "no release here"}) {
    release(text);
    EXPECT_EQ(plan_jit_cache(in).refusal, "") << text;
  }
  // A kept build needs no CUDA ptxas, however old.
  release("Cuda compilation tools, release 11.8, V11.8.89");
  write(kept_ptx(), ".version 8.5\n");
  EXPECT_EQ(plan_jit_cache(in).refusal, "");
}

}  // namespace

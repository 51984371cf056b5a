// The oneDNN baseline (onednn_baseline.hpp) through libhetkern_onednn, opened on first use from
// the folder libhetkern was loaded from (bench/onednn_module.hpp).
#include "bench/onednn_baseline.hpp"

#include <dlfcn.h>

#include "bench/onednn_module.hpp"

namespace hk::bench {
namespace {

struct Module {
  const OnednnTable* table = nullptr;
  std::string error;  // why there is no table
};

#ifdef HETKERN_ONEDNN_MODULE
std::string module_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&hk::active_isa), &info) && info.dli_fname) {
    const std::string library = info.dli_fname;
    const auto slash = library.rfind('/');
    if (slash != std::string::npos) return library.substr(0, slash + 1) + hetkern_onednn_module;
  }
  return hetkern_onednn_module;
}
#endif

// Opened once and never closed: kernels and oneDNN's threads outlive any caller.
const Module& module() {
  static const Module m = [] {
    Module opened;
#ifndef HETKERN_ONEDNN_MODULE
    opened.error = "built without oneDNN: libdnnl-dev was not found when hetkern was configured";
#else
    const std::string path = module_path();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const auto entry = handle ? reinterpret_cast<const OnednnTable* (*)()>(dlsym(handle, "hetkern_onednn_table")) : nullptr;
    if (entry)
      opened.table = entry();
    else
      opened.error = "the oneDNN baseline cannot be opened: " + std::string(handle ? "no entry point in " + path : dlerror());
#endif
    return opened;
  }();
  return m;
}

}  // namespace

struct OnednnMatmul::Impl {
  std::unique_ptr<OnednnKernel> kernel;
};

OnednnMatmul::OnednnMatmul(const OnednnQmmProblem& problem) {
  const Module& m = module();
  if (!m.table) {
    reason_ = m.error;
    return;
  }
  if (auto kernel = m.table->make(problem, reason_)) impl_ = std::make_unique<Impl>(Impl{std::move(kernel)});
}

OnednnMatmul::~OnednnMatmul() = default;

std::string OnednnMatmul::implementation() const { return impl_ ? impl_->kernel->implementation() : std::string(); }

void OnednnMatmul::pack_weights() { impl_->kernel->pack_weights(); }

void OnednnMatmul::run() { impl_->kernel->run(); }

std::string cap_onednn_isa(Isa level) { return module().table ? module().table->cap_isa(level) : std::string(); }

std::string onednn_version() { return module().table ? module().table->version() : std::string(); }

}  // namespace hk::bench

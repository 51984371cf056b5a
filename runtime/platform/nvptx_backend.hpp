// Registers LLVM's NVPTX backend with the libLLVM that the offload runtime loaded.
#pragma once

#include <dlfcn.h>

namespace hk::detail {

// Debian's LLVM 19 offload runtime JIT-compiles the kernels' IR for the GPU it finds, but does
// not register the NVPTX backend first ("Unable to find target for this triple"). Register it
// before the first target region of every image: from the global scope, else from the libLLVM
// already loaded beside a runtime opened privately (the GPU plugin). Absent symbols (no offload
// runtime, another LLVM) leave nothing to do.
inline void register_nvptx_backend() {
  void* llvm = dlopen("libLLVM.so.19.1", RTLD_LAZY | RTLD_NOLOAD);
  for (const char* name : {"LLVMInitializeNVPTXTargetInfo", "LLVMInitializeNVPTXTarget",
                           "LLVMInitializeNVPTXTargetMC", "LLVMInitializeNVPTXAsmPrinter"}) {
    void* f = dlsym(RTLD_DEFAULT, name);
    if (!f && llvm) f = dlsym(llvm, name);
    if (f) reinterpret_cast<void (*)()>(f)();
  }
  if (llvm) dlclose(llvm);
}

}  // namespace hk::detail

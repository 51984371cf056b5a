// Registers LLVM's NVPTX backend before the first target region (offload builds only).
//
// The device images are LLVM IR compiled at the first launch (-fopenmp-target-jit), and Debian's
// LLVM 19 offload runtime does not register the NVPTX target before it compiles them ("Unable to
// find target for this triple"). The runtime has already loaded libLLVM (libomptarget depends on
// it), so its initializers are looked up there; without a libLLVM nothing can be registered, and
// the runtime then reports the failure itself when a GPU is present.
#include <dlfcn.h>

#include <initializer_list>

namespace hk::detail {
namespace {

struct NvptxRegistration {
  NvptxRegistration() {
    for (const char* name : {"LLVMInitializeNVPTXTargetInfo", "LLVMInitializeNVPTXTarget",
                             "LLVMInitializeNVPTXTargetMC", "LLVMInitializeNVPTXAsmPrinter"})
      if (void* fn = dlsym(RTLD_DEFAULT, name)) reinterpret_cast<void (*)()>(fn)();
  }
};

const NvptxRegistration registration;

}  // namespace
}  // namespace hk::detail

// Which kernel set of the cumulative operators each instruction-set level runs.
#include "schedules/scan_kernels.hpp"

namespace hk::detail {

const ScanKernelSet& scan_kernels(Isa isa) {
#if defined(__x86_64__)
  if (isa >= Isa::avx512) return scan_kernels_avx512();
  if (isa >= Isa::avx2) return scan_kernels_avx2();
#endif
  (void)isa;
  return scan_kernels_portable();
}

const char* scan_kernel_path(Isa isa) {
#if defined(__x86_64__)
  if (isa >= Isa::avx512)
    return "avx512: 8 x f64 lanes for f32, 16 x f32 for f16 (vcvtph2ps) and bf16, 8 x "
           "double-double for f64, 16 x u32 / 8 x u64 integer lanes, float sums on the FMA pipes, "
           "streaming stores";
  if (isa >= Isa::avx2)
    return "avx2: 4 x f64 lanes for f32, 8 x f32 for f16 (vcvtph2ps) and bf16, 4 x double-double "
           "for f64, 8 x u32 / 4 x u64 integer lanes (u64 products emulated), float sums on the FMA "
           "pipes, streaming stores";
#endif
  (void)isa;
  return "portable: 2 x f64 lanes for f32, 4 x f32 for f16 (software conversion) and bf16, 2 x "
         "double-double for f64 (software fma for products), 4 x u32 / 2 x u64 integer lanes, "
         "streaming stores";
}

}  // namespace hk::detail

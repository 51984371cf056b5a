// Which QuantizedLinearMatMul kernel runs at each instruction-set level.
#include "schedules/qmm_kernels.hpp"

namespace hk::detail {

QmmKernelChoice select_qmm_kernel(Isa isa, bool pairs_fit_int16) {
  switch (isa) {
    case Isa::amx: return {qmm_kernel_amx, "amx tdpbusd 32x32"};
    case Isa::avx512_vnni: return {qmm_kernel_avx512_vnni, "avx512_vnni vpdpbusd 6x64"};
    case Isa::avx512:
    case Isa::avx2:
      // vpmaddubsw saturates a pair of products to int16; it is exact only when packing proved
      // every |B'| <= 64, otherwise products are widened first (vpmaddwd).
      return pairs_fit_int16 ? QmmKernelChoice{qmm_kernel_avx2_maddubs, "avx2 vpmaddubsw 4x16"}
                             : QmmKernelChoice{qmm_kernel_avx2_exact, "avx2 vpmaddwd 6x8 (exact widening)"};
    case Isa::portable: break;
  }
  return {qmm_kernel_portable, "portable"};
}

QmmDotsKernel select_qmm_dots(Isa isa) {
  switch (isa) {
    case Isa::amx:
    case Isa::avx512_vnni: return qmm_dots_avx512_vnni;
    case Isa::avx512:
    case Isa::avx2: return qmm_dots_avx2;
    case Isa::portable: break;
  }
  return qmm_dots_portable;
}

QmmRowsKernel select_qmm_rows(Isa isa) {
  return isa >= Isa::avx512_vnni ? qmm_rows_avx512_vnni : isa >= Isa::avx2 ? qmm_rows_avx2 : nullptr;
}

}  // namespace hk::detail

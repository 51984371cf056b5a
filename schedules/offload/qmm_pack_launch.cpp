// The launches of the offload QuantizedLinearMatMul's packing kernels.
#include <omp.h>

#include <initializer_list>

#include "runtime/platform/launch_shape.hpp"
#include "schedules/offload/qmm_launch.hpp"
#include "schedules/offload/qmm_pack_kernel.hpp"

namespace hk::detail::offload::qmm {
namespace {

constexpr int pack_threads = 256;

// The packing kernel's work: the operands that copy or transpose (transposing ones first, their
// units being the longest), and the sums of the gathering ones to zero for pack_gather, which adds
// to them atomically.
struct PackJob {
  Operand operands[2];
  bool transposed[2] = {false, false};
  i64 units[2] = {0, 0};
  i64* zero[2] = {nullptr, nullptr};
  i64 zero_count[2] = {0, 0};
};

// Transposes: whether an operand transposes; without, the kernel holds no transposing code and
// asks for no team memory.
template <bool Transposes>
void pack_lines(const PackJob job, i64 K, i64 kp, i64 batch1, int device) {
  const i64 units = job.units[0] + job.units[1];
  const i64 zeros = job.zero_count[0] + job.zero_count[1];
  const i64 wanted = units > 0 ? units : (zeros + pack_threads - 1) / pack_threads;
  const LaunchShape shape = launch_shape(device, std::clamp<i64>(wanted, 1, 65536), pack_threads);
  const int teams = shape.teams, threads = shape.threads;
#pragma omp target teams num_teams(teams) thread_limit(threads) device(device) firstprivate(job) \
    ompx_dyn_cgroup_mem(Transposes ? pack_memory_bytes : 0) ompx_attribute(__attribute__((launch_bounds(pack_threads))))
#pragma omp parallel
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    const i64 team = omp_get_team_num(), team_count = omp_get_num_teams();
    for (int z = 0; z < 2; ++z)
      for (i64 i = team * nth + tid; i < job.zero_count[z]; i += team_count * nth) job.zero[z][i] = 0;
    for (i64 u = team; u < units; u += team_count) {
      const int which = u < job.units[0] ? 0 : 1;
      const i64 unit = which == 0 ? u : u - job.units[0];
      if constexpr (Transposes) {
        if (job.transposed[which]) {
#ifdef __NVPTX__
          void* memory = llvm_omp_target_dynamic_shared_alloc();
#else
          void* memory = nullptr;
#endif
          transpose_lines_unit(job.operands[which], unit, K, kp, batch1, memory, tid, nth);
          continue;
        }
      }
      copy_lines(job.operands[which], unit, K, kp, batch1, tid, nth);
    }
  }
}

// Any other layout: a thread per 64-deep chunk, bytes gathered through the strides. Neighbouring
// threads take neighbouring chunks when the source's k stride is the smaller one, neighbouring
// lines otherwise, so that they read neighbouring bytes.
void pack_gather(const Operand o, i64 K, i64 kp, i64 batch1, int device) {
  const i64 chunks = kp / depth_step, count = o.batches * o.padded_lines * chunks;
  const bool chunk_inner = o.k_stride <= o.line_stride;
#pragma omp target teams distribute parallel for device(device) firstprivate(o)
  for (i64 i = 0; i < count; ++i) {
    const i64 t = i / (o.padded_lines * chunks), rest = i % (o.padded_lines * chunks);
    const i64 r = chunk_inner ? rest / chunks : rest % o.padded_lines;
    const i64 c = chunk_inner ? rest % chunks : rest / o.padded_lines;
    const u8* src = o.src + (t / batch1) * o.bs[0] + (t % batch1) * o.bs[1] + r * o.line_stride;
    u8* dst = o.dst + (t * o.padded_lines + r) * kp + c * depth_step;
    const i64 sum = pack_chunk(src, o.k_stride, c * depth_step, K, r < o.lines, o.flip, o.is_a, dst);
    if (r < o.lines && o.sums) {
#pragma omp atomic update
      o.sums[t * o.lines + r] += sum;
    }
  }
}

// A' and B' into the workspace with the sums stored there: one launch copies or transposes every
// operand whose layout allows it, sums those read in place whose sums it stores (and zeroes the
// others' sums), then each other operand is gathered. Nothing to pack or store launches nothing.
}  // namespace

void launch_pack(const Kernel k, int device) {
  const Operand a = operand_of(k, true), b = operand_of(k, false);
  PackJob job;
  int count = 0, gathered = 0;
  Operand gather[2];
  for (int pass = 0; pass < 2; ++pass)  // transposing operands first
    for (const Operand& o : {a, b}) {
      if (!o.dst && !o.sums) continue;  // read in place, its sums not stored
      const bool copy = !o.dst || copy_packable(o, k.K), transpose = !copy && transpose_packable(o);
      if (pass == 0 && transpose) {
        job.operands[count] = o, job.transposed[count] = true;
        job.units[count++] = o.batches * (o.padded_lines / transpose_lines);
      } else if (pass == 1 && copy) {
        job.operands[count] = o;
        job.units[count++] = o.batches * (o.padded_lines / copy_unit_lines);
      } else if (pass == 1 && !transpose) {
        if (o.sums) job.zero[gathered] = o.sums, job.zero_count[gathered] = o.batches * o.lines;
        gather[gathered++] = o;
      }
    }
  if (count == 0 && gathered == 0) return;
  if (job.transposed[0])
    pack_lines<true>(job, k.K, k.kp, k.batch1, device);
  else
    pack_lines<false>(job, k.K, k.kp, k.batch1, device);
  for (int g = 0; g < gathered; ++g) pack_gather(gather[g], k.K, k.kp, k.batch1, device);
}

}  // namespace hk::detail::offload::qmm

// Device helpers of the offload kernels: team-memory limits, warp lanes and shuffles, barriers,
// team (shared) memory addresses and loads, asynchronous copies into team memory, L2 prefetch.
// The PTX helpers exist in device code only (__NVPTX__); call them from SPMD kernels (`target
// teams` with a directly nested `parallel`), where every lane of a warp executes them.
#pragma once

#include <omp.h>

#include <bit>
#include <cstdint>

namespace hk::detail::offload {

/// Team memory an offload kernel asks for at most: under the 48 KB a team gets without opting in,
/// leaving room for the runtime's own.
inline constexpr std::int64_t max_team_memory_bytes = 47 * 1024;
/// Team memory the runtime keeps for itself out of a team's share (cuda_team_memory_limit).
inline constexpr int runtime_team_memory_bytes = 1024;

using u32 = std::uint32_t;
using u32x4 = u32 __attribute__((ext_vector_type(4)));

#ifdef __NVPTX__
inline u32 lane_id() { return u32(omp_get_thread_num()) & 31u; }

// The lanes of the calling thread's warp that exist: all 32 but in a last, partial warp.
inline u32 warp_mask(int threads) {
  const int rest = threads - (omp_get_thread_num() & ~31);
  return rest >= 32 ? ~0u : (1u << rest) - 1u;
}

inline u32 shfl_up_b32(u32 v, u32 delta, u32 mask) {
  u32 r;
  asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, %3;" : "=r"(r) : "r"(v), "r"(delta), "r"(mask));
  return r;
}

inline u32 shfl_idx_b32(u32 v, u32 src, u32 mask) {
  u32 r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 31, %3;" : "=r"(r) : "r"(v), "r"(src), "r"(mask));
  return r;
}

// Across all 32 lanes of the warp.
inline u32 shfl_bfly_b32(u32 v, u32 lane_mask) {
  u32 r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, -1;" : "=r"(r) : "r"(v), "r"(lane_mask));
  return r;
}

inline u32 ballot(bool p, u32 mask) {
  u32 r;
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; vote.sync.ballot.b32 %0, q, %2; }"
               : "=r"(r) : "r"(u32(p)), "r"(mask));
  return r;
}

// A 4- or 8-byte value through a 32-bit shuffle op (8-byte values as two halves).
template <class A, class Shfl> A shfl(A v, u32 arg, u32 mask, Shfl op) {
  if constexpr (sizeof(A) == 4) {
    return std::bit_cast<A>(op(std::bit_cast<u32>(v), arg, mask));
  } else {
    const auto w = std::bit_cast<unsigned long long>(v);
    const u32 lo = op(u32(w), arg, mask), hi = op(u32(w >> 32), arg, mask);
    return std::bit_cast<A>((static_cast<unsigned long long>(hi) << 32) | lo);
  }
}
template <class A> A shfl_up(A v, u32 d, u32 mask) { return shfl(v, d, mask, shfl_up_b32); }
template <class A> A shfl_idx(A v, u32 src, u32 mask) { return shfl(v, src, mask, shfl_idx_b32); }

// The sum over the calling warp (all 32 lanes call it).
inline std::int64_t warp_sum(std::int64_t v) {
  for (int d = 16; d > 0; d /= 2) {
    const u32 lo = shfl_bfly_b32(u32(v), u32(d));
    const u32 hi = shfl_bfly_b32(u32(std::uint64_t(v) >> 32), u32(d));
    v += std::int64_t(std::uint64_t(hi) << 32 | lo);
  }
  return v;
}

// Barrier 0 of the team (as `omp barrier` in an SPMD kernel, without the runtime call).
inline void team_barrier() { asm volatile("bar.sync 0;" ::: "memory"); }
inline void warp_sync() { asm volatile("bar.warp.sync -1;" ::: "memory"); }
// The lanes of `mask` only (a last, partial warp).
inline void warp_sync(u32 mask) { asm volatile("bar.warp.sync %0;" ::"r"(mask) : "memory"); }

// The address in team memory (the shared window) of a generic pointer to it.
inline u32 team_address(const void* p) {
  u32 r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

inline u32x4 load_team16(u32 address) {
  u32x4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}

inline void store_team16(u32 address, u32x4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(address), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Four 8 x 8 matrices of 16-bit elements from team memory, lane l addressing a row of matrix l / 8:
// each lane gets its words of the four as mma.sync's fragments hold them.
inline void ldmatrix_x4(u32 (&d)[4], u32 address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(address));
}

// Hands registers between a team's warpgroups (sm_90a): every warp of a warpgroup lowers or raises
// its own count to Count (a multiple of 8, 24 to 256) together; raising waits for registers freed.
template <int Count> inline void registers_lower_to() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Count));
}
template <int Count> inline void registers_raise_to() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Count));
}

// Makes this thread's earlier writes to team memory (stores and completed cp.async copies) visible
// to the async proxy, through which wgmma reads its operands.
inline void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Asynchronous 16-byte copies from global to team memory (sm_80 and newer; team_dst a team
// address): no registers held while they are in flight. The zero-filling form copies `bytes`
// (0 or 16) and fills the rest of the 16 with zeros.
inline void copy_async_16(u32 team_dst, const void* global_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(team_dst), "l"(global_src) : "memory");
}
inline void copy_async_16_fill(u32 team_dst, const void* global_src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(team_dst), "l"(global_src), "r"(bytes)
               : "memory");
}
// Closes the copies issued since the last commit into one group.
inline void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most Pending of this thread's committed groups are still in flight.
template <int Pending> inline void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

// A 16-byte store that the L2 evicts first (st.global.cs): outputs written once are not kept
// dirty in the L2 for the next kernel to write back before its own traffic.
inline void store_global16_streaming(void* p, u32x4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Transaction barriers (mbarrier, 8 bytes of team memory at a team address): a phase completes
// once `count` arrivals and every byte a bulk copy announced (expect_tx) have come; waiters name
// the parity of the phase they wait for. A fresh barrier counts its phase before the first as
// complete, so waiting for parity 1 passes at once.
inline void mbarrier_init(u32 barrier, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier), "r"(count) : "memory");
}
// Makes barriers initialized by this thread visible to the bulk copies (the async proxy).
inline void fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
inline void mbarrier_arrive(u32 barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(barrier) : "memory");
}
// One arrival where `arrive` holds, as a predicated instruction rather than a branch (ptxas
// serializes wgmma across divergent branches).
inline void mbarrier_arrive_if(u32 barrier, bool arrive) {
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; @p mbarrier.arrive.shared::cta.b64 _, [%0]; }" ::"r"(barrier),
               "r"(u32(arrive))
               : "memory");
}
// One arrival, announcing `bytes` that bulk copies will deliver to this phase.
inline void mbarrier_arrive_expect_tx(u32 barrier, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier), "r"(bytes) : "memory");
}
// The wait loop stays inside one asm block: ptxas serializes wgmma across branches it cannot see
// through.
inline void mbarrier_wait(u32 barrier, u32 parity) {
  asm volatile(
      "{ .reg .pred done;\n"
      "retry: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra retry; }" ::"r"(barrier),
      "r"(parity)
      : "memory");
}

// The tensor memory accelerator (sm_90): the box at (x, y) of the 2-D tensor that `map` (a
// CUtensorMap in global memory) describes, into team memory at `team_dst`, laid out and swizzled as
// the map says; its bytes complete `barrier`'s phase.
inline void tensor_load_2d(u32 team_dst, const void* map, u32 barrier, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          team_dst),
      "l"(map), "r"(x), "r"(y), "r"(barrier)
      : "memory");
}

// Before the tensor memory accelerator reads a map in global memory that the host wrote: the
// accelerator caches maps by address, and a later call may write a new one where an earlier was.
inline void fence_tensor_map(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
}

// Barrier `id` (1 to 15) of `threads` of the team, a multiple of 32: part of a team synchronizing
// without the rest (barrier 0 is the whole team's, team_barrier).
inline void named_barrier(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Asks the L2 to fetch the line holding p (no register, no wait): reading ahead of the loads.
inline void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
#endif

// Orders this thread's memory accesses before and after it for every thread of the GPU (on the
// host the atomics' own ordering does).
inline void fence_device() {
#ifdef __NVPTX__
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
#endif
}

// A word other teams write while this one reads it (relaxed, GPU scope on a GPU).
inline std::uint64_t load_relaxed(const std::uint64_t* word) {
#ifdef __NVPTX__
  std::uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
  return v;
#else
  return __atomic_load_n(word, __ATOMIC_RELAXED);
#endif
}
inline void store_relaxed(std::uint64_t* word, std::uint64_t v) {
#ifdef __NVPTX__
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
#else
  __atomic_store_n(word, v, __ATOMIC_RELAXED);
#endif
}

// The same for every thread of the system: the host's and the copy engines' too.
inline void fence_system() {
#ifdef __NVPTX__
  asm volatile("fence.acq_rel.sys;" ::: "memory");
#endif
}

}  // namespace hk::detail::offload

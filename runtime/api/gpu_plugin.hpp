// The GPU plugin's interface. libhetkern_gpu holds the offload strategies, device memory and the
// device-tensor operators; libhetkern opens it on first use (runtime/api/gpu_plugin.cpp) and defines
// each function below as a forwarder to the plugin's definition, so callers never know where it
// lives. The list is the one place to name a function the plugin defines and the rest calls:
// those that libhetkern, the tests, the benchmarks or the command line call (nm: undefined there,
// defined in the plugin's objects).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/kept_scratch.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/scan_offload.hpp"

// F(field, result, function, (parameters), (arguments), need, result without the plugin)
// M(field, class, result, member, (parameters), (arguments), qualifiers, need, result without it)
// C(field, class, constructor, (parameters), (arguments), qualifiers, need)
// D(field, class, destructor)
// need: required  loads the plugin; without it, hk::Error(Errc::unavailable) with the reason
//       gpu_only  loads the plugin on a machine with a GPU driver; without either, the result
//                 given (what the host fallback answers): CPU-only runs never load it for these
//       loaded    only if already loaded: before that nothing can own device memory or counts
#define HETKERN_GPU_FUNCTIONS(F, M, C, D)                                                                   \
  F(offload_device, int, hk::offload_device, (), (), required, )                                          \
  F(offload_on_host, bool, hk::offload_on_host, (), (), gpu_only, true)                                   \
  F(offload_device_count, int, hk::offload_device_count, (), (), gpu_only, 1)                             \
  F(warm_up_offload, void, hk::warm_up_offload, (), (), gpu_only, )                                       \
  F(transfer_counters, hk::TransferCounters, hk::transfer_counters, (), (), loaded, {})                     \
  F(reset_transfer_counters, void, hk::reset_transfer_counters, (), (), loaded, )                         \
  F(release_cached_device_memory, std::size_t, hk::release_cached_device_memory, (), (), loaded, 0)       \
  F(buffer_borrow, hk::DeviceBuffer, hk::DeviceBuffer::borrow, (void* data, std::size_t bytes), (data, bytes), \
    required, )                                                                                            \
  F(qmm_parameter_block, std::vector<std::byte>, hk::detail::qmm_parameter_block,                          \
    (const hk::detail::QuantParams& q), (q), required, )                                                   \
  F(device_copy, void, hk::device_copy,                                                                    \
    (const void* src, void* dst, std::size_t bytes, int teams, int threads),                               \
    (src, dst, bytes, teams, threads), required, )                                                         \
  F(device_cumulative_sum, void, hk::cumulative_sum,                                                       \
    (hk::DeviceConstTensor input, hk::DeviceTensor output, const hk::CumulativeOptions& options,          \
     const hk::Schedule& schedule),                                                                        \
    (input, output, options, schedule), required, )                                                        \
  F(device_cumulative_product, void, hk::cumulative_product,                                               \
    (hk::DeviceConstTensor input, hk::DeviceTensor output, const hk::CumulativeOptions& options,          \
     const hk::Schedule& schedule),                                                                        \
    (input, output, options, schedule), required, )                                                        \
  F(device_quantized_linear_matmul, void, hk::quantized_linear_matmul,                                     \
    (const hk::DeviceQuantizedMatMulArgs& args, hk::DeviceTensor output, const hk::Schedule& schedule),   \
    (args, output, schedule), required, )                                                                  \
  F(device_pack_b, hk::DevicePackedB, hk::pack_b, (hk::DeviceConstTensor b), (b), required, )           \
  C(buffer_new, hk::DeviceBuffer, DeviceBuffer, (std::size_t bytes), (bytes), , required)                 \
  C(buffer_move_new, hk::DeviceBuffer, DeviceBuffer, (hk::DeviceBuffer && other), (std::move(other)),      \
    noexcept, loaded)                                                                                      \
  D(buffer_delete, hk::DeviceBuffer, DeviceBuffer)                                                         \
  M(buffer_move_assign, hk::DeviceBuffer, hk::DeviceBuffer&, operator=, (hk::DeviceBuffer && other),      \
    (std::move(other)), noexcept, loaded, *this)                                                           \
  M(buffer_upload, hk::DeviceBuffer, void, upload,                                                         \
    (const void* host, std::size_t bytes, std::size_t offset), (host, bytes, offset), , required, )        \
  M(buffer_download, hk::DeviceBuffer, void, download, (void* host, std::size_t bytes, std::size_t offset), \
    (host, bytes, offset), const, required, )                                                              \
  F(run_scan_offload, void, hk::detail::run_scan_offload,                                                  \
    (const hk::detail::CumulativeCall& call, const hk::detail::ScanPlan& plan, int device, const void* carry), \
    (call, plan, device, carry), required, )                                                               \
  F(run_scan_offload_host, void, hk::detail::run_scan_offload_host,                                        \
    (const hk::detail::CumulativeCall& call, const hk::detail::ScanPlan& plan, int device),               \
    (call, plan, device), required, )                                                                      \
  F(run_scan_line_part_host, void, hk::detail::run_scan_line_part_host,                                    \
    (const hk::detail::CumulativeCall& call, int device, bool fold_wanted,                                 \
     const hk::detail::ScanCarryFor& carry_for),                                                           \
    (call, device, fold_wanted, carry_for), required, )                                                    \
  F(offload_scan_defaults, hk::detail::ScanPlan, hk::detail::offload_scan_defaults,                        \
    (const hk::detail::CumulativeCall& call, hk::detail::ScanPlan::Kind kind), (call, kind), required, )   \
  F(default_offload_scan_plan, hk::detail::ScanPlan, hk::detail::default_offload_scan_plan,                \
    (const hk::detail::CumulativeCall& call), (call), required, )                                          \
  F(qmm_sums_needed, hk::detail::OffloadQmmSums, hk::detail::qmm_sums_needed,                             \
    (const hk::detail::QmmProblem& problem), (problem), required, )                                        \
  F(qmm_offload_a_centred, bool, hk::detail::qmm_offload_a_centred,                                      \
    (const hk::detail::QmmProblem& problem, hk::detail::OffloadQmmKernel kernel, int device),              \
    (problem, kernel, device), required, )                                                                 \
  F(qmm_offload_workspace_bytes, std::int64_t, hk::detail::qmm_offload_workspace_bytes,                    \
    (const hk::detail::QmmProblem& problem, hk::detail::OffloadQmmKernel kernel, int device),              \
    (problem, kernel, device), required, )                                                                 \
  F(qmm_offload, void, hk::detail::qmm_offload,                                                            \
    (const hk::detail::QmmProblem& problem, const hk::detail::OffloadQmmLaunch& launch), (problem, launch), \
    required, )                                                                                            \
  F(qmm_offload_pack, void, hk::detail::qmm_offload_pack,                                                  \
    (const hk::detail::QmmProblem& problem, const hk::detail::OffloadQmmLaunch& launch), (problem, launch), \
    required, )                                                                                            \
  F(qmm_offload_product, void, hk::detail::qmm_offload_product,                                            \
    (const hk::detail::QmmProblem& problem, const hk::detail::OffloadQmmLaunch& launch), (problem, launch), \
    required, )                                                                                            \
  F(run_qmm_offload, void, hk::detail::run_qmm_offload,                                                    \
    (const hk::detail::QmmProblem& problem, const hk::detail::QmmPlan& plan, int device),                 \
    (problem, plan, device), required, )                                                                   \
  F(copy_to_device, void, hk::detail::copy_to_device,                                                      \
    (void* device_dst, std::size_t dst_offset, const void* host_src, std::size_t bytes, int device),      \
    (device_dst, dst_offset, host_src, bytes, device), required, )                                         \
  F(copy_to_host, void, hk::detail::copy_to_host,                                                          \
    (void* host_dst, const void* device_src, std::size_t src_offset, std::size_t bytes, int device),      \
    (host_dst, device_src, src_offset, bytes, device), required, )                                         \
  F(copy_segments_to_device, void, hk::detail::copy_segments_to_device,                                    \
    (const std::vector<hk::detail::CopySegment>& segments, int device,                                     \
     const std::function<void(std::size_t)>& landed),                                                      \
    (segments, device, landed), required, )                                                                \
  F(copy_segments_to_host, void, hk::detail::copy_segments_to_host,                                        \
    (const std::vector<hk::detail::CopySegment>& segments, int device,                                     \
     const std::function<bool(std::size_t)>& ready),                                                       \
    (segments, device, ready), required, )                                                                 \
  F(copy_between_devices, void, hk::detail::copy_between_devices,                                          \
    (void* dst, int dst_device, const void* src, int src_device, std::size_t bytes),                       \
    (dst, dst_device, src, src_device, bytes), required, )                                                 \
  F(run_qmm_offload_on_device, void, hk::detail::run_qmm_offload_on_device,                                \
    (const hk::detail::QmmProblem& problem, const hk::detail::QmmPlan& plan, int device),                 \
    (problem, plan, device), required, )                                                                   \
  F(run_qmm_offload_arriving, void, hk::detail::run_qmm_offload_arriving,                                  \
    (const hk::detail::QmmProblem& problem, const hk::detail::QmmPlan& plan, int device,                  \
     const hk::detail::OffloadQmmArrivals& arrivals),                                                      \
    (problem, plan, device, arrivals), required, )                                                         \
  F(qmm_offload_streamable, hk::detail::OffloadQmmStreamable, hk::detail::qmm_offload_streamable,          \
    (const hk::detail::QmmProblem& problem, hk::detail::OffloadQmmKernel kernel, int device),              \
    (problem, kernel, device), required, )                                                                 \
  F(qmm_b_columns_fit, bool, hk::detail::qmm_b_columns_fit, (const hk::detail::QmmProblem& problem),      \
    (problem), required, )                                                                                 \
  F(qmm_b_columns_bytes, std::size_t, hk::detail::qmm_b_columns_bytes,                                     \
    (const hk::detail::QmmProblem& problem), (problem), required, )                                        \
  F(qmm_offload_pack_b_columns, void, hk::detail::qmm_offload_pack_b_columns,                              \
    (const hk::detail::QmmProblem& problem, void* dst, int device, std::int64_t* column_sums),            \
    (problem, dst, device, column_sums), required, )                                                       \
  F(qmm_offload_column_sums, void, hk::detail::qmm_offload_column_sums,                                    \
    (const hk::detail::QmmProblem& problem, std::int64_t* sums, int device), (problem, sums, device),      \
    required, )                                                                                            \
  C(lease_new, hk::detail::ScratchLease, ScratchLease, (int device, std::size_t bytes), (device, bytes), , \
    required)                                                                                              \
  D(lease_delete, hk::detail::ScratchLease, ScratchLease)                                                  \
  F(kept_scratch, hk::detail::KeptScratch&, hk::detail::kept_scratch, (int device, const char* owner),     \
    (device, owner), required, )                                                                           \
  F(reserve_kept, void, hk::detail::reserve_kept,                                                          \
    (hk::detail::KeptScratch & scratch, int device, std::size_t bytes), (scratch, device, bytes),          \
    required, )                                                                                            \
  F(trim_kept, void, hk::detail::trim_kept, (hk::detail::KeptScratch & scratch, int device, std::size_t keep), \
    (scratch, device, keep), required, )

// A constructor's or destructor's table entry takes the object as its first parameter.
#define HETKERN_GPU_UNWRAP(...) __VA_ARGS__
#define HETKERN_GPU_WITH_SELF(first, list) HETKERN_GPU_WITH_SELF_(first, HETKERN_GPU_UNWRAP list)
#define HETKERN_GPU_WITH_SELF_(first, ...) (first, __VA_ARGS__)

namespace hk::detail {

/// Changes whenever the list above or a type it passes changes; with the version and the table's
/// size, it keeps a plugin of another build from being used.
inline constexpr std::uint32_t gpu_plugin_abi = 12;

struct GpuPluginTable {
  std::uint32_t abi;
  std::uint32_t size;
  const char* version;
#define HETKERN_GPU_FIELD_F(field, R, name, params, args, need, ...) R(*field) params;
#define HETKERN_GPU_FIELD_M(field, Class, R, name, params, args, quals, need, ...) R(Class::*field) params quals;
#define HETKERN_GPU_FIELD_C(field, Class, Name, params, args, quals, need) \
  void(*field) HETKERN_GPU_WITH_SELF(Class* self, params);
#define HETKERN_GPU_FIELD_D(field, Class, Name) void (*field)(Class * self);
  HETKERN_GPU_FUNCTIONS(HETKERN_GPU_FIELD_F, HETKERN_GPU_FIELD_M, HETKERN_GPU_FIELD_C, HETKERN_GPU_FIELD_D)
#undef HETKERN_GPU_FIELD_F
#undef HETKERN_GPU_FIELD_M
#undef HETKERN_GPU_FIELD_C
#undef HETKERN_GPU_FIELD_D
};

}  // namespace hk::detail

/// The plugin's one exported function: its table, the same at every call.
extern "C" using HetkernGpuPluginEntry = const hk::detail::GpuPluginTable*();
#define HETKERN_GPU_PLUGIN_ENTRY "hetkern_gpu_plugin"

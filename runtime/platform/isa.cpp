// Instruction-set detection and the process-wide cap on the level the kernels use.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <iterator>
#include <string>

#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "runtime/platform/environment.hpp"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace hk {
namespace {

constexpr const char* isa_names[] = {"portable", "avx2", "avx512", "avx512_vnni", "amx"};

// Linux keeps AMX tile data off until a process asks for it (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA); the permission then holds for every thread of the process.
bool request_amx_permission() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long arch_req_xcomp_perm = 0x1023;
  constexpr long xfeature_xtiledata = 18;
  return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
#else
  return false;
#endif
}

Isa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")))
    return Isa::portable;
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")))
    return Isa::avx2;
  if (!__builtin_cpu_supports("avx512vnni")) return Isa::avx512;
  if (!(__builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8")) ||
      !request_amx_permission())
    return Isa::avx512_vnni;
  return Isa::amx;
#else
  return Isa::portable;
#endif
}

Isa cap_from_environment() {
  return detail::setting_from_environment("HETKERN_MAX_ISA", parse_isa).value_or(Isa::amx);
}

std::atomic<Isa>& cap() {
  static std::atomic<Isa> value{cap_from_environment()};
  return value;
}

}  // namespace

const char* name_of(Isa isa) {
  const auto i = static_cast<std::size_t>(isa);
  return i < std::size(isa_names) ? isa_names[i] : "?";
}

Isa parse_isa(std::string_view text) {
  for (int i = 0; i <= static_cast<int>(Isa::amx); ++i)
    if (text == isa_names[i]) return static_cast<Isa>(i);
  throw Error(Errc::invalid_parameter, "isa", std::string(text),
              "is not one of portable, avx2, avx512, avx512_vnni, amx");
}

Isa detected_isa() {
  static const Isa detected = detect();
  return detected;
}

Isa active_isa() { return std::min(detected_isa(), cap().load(std::memory_order_relaxed)); }

Isa set_max_isa(Isa level) {
  if (level < Isa::portable || level > Isa::amx)
    throw Error(Errc::invalid_parameter, "set_max_isa", "cap", std::to_string(int(level)) + " is not an Isa");
  cap().store(level, std::memory_order_relaxed);
  return active_isa();
}

}  // namespace hk

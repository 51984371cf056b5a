// Streaming-store copies (streaming_copy.hpp).
#include "runtime/platform/streaming_copy.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace hk::detail {
namespace {

constexpr std::size_t line = 64;

using LineCopy = void (*)(std::byte* dst, const std::byte* src, std::size_t lines);

__attribute__((target("avx512f"))) void stream_lines_avx512(std::byte* dst, const std::byte* src,
                                                             std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i * line),
                        _mm512_loadu_si512(src + i * line));
}

__attribute__((target("avx"))) void stream_lines_avx(std::byte* dst, const std::byte* src,
                                                     std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i)
    for (std::size_t h = 0; h < line; h += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i * line + h),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * line + h)));
}

void stream_lines_sse2(std::byte* dst, const std::byte* src, std::size_t lines) {
  for (std::size_t i = 0; i < lines; ++i)
    for (std::size_t h = 0; h < line; h += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i * line + h),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * line + h)));
}

LineCopy widest_stream_lines() {
  if (__builtin_cpu_supports("avx512f")) return stream_lines_avx512;
  if (__builtin_cpu_supports("avx")) return stream_lines_avx;
  return stream_lines_sse2;
}

}  // namespace

void streaming_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;  // the pointers may then be null, which memcpy may not be given
  static const LineCopy stream_lines = widest_stream_lines();
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::size_t head = std::min(bytes, (line - reinterpret_cast<std::uintptr_t>(d) % line) % line);
  const std::size_t lines = (bytes - head) / line;
  std::memcpy(d, s, head);
  stream_lines(d + head, s + head, lines);
  std::memcpy(d + head + lines * line, s + head + lines * line, bytes - head - lines * line);
  _mm_sfence();  // streaming stores are weakly ordered: publish them before anyone else reads
}

}  // namespace hk::detail

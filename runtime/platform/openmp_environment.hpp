// OMP_NUM_THREADS values that the LLVM OpenMP runtime aborts on, removed before it reads them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hk::detail {

/// The most threads an OMP_NUM_THREADS entry may ask for here: libomp 19 fails an assertion
/// somewhere between 2^24 (a hetkern call ran) and 2^30 (it aborted); no machine has that many.
inline constexpr long long omp_num_threads_most = 1 << 20;

/// Why libomp would abort on `value` of OMP_NUM_THREADS (empty or blank, a character other than
/// digits, commas and blanks, or an entry above omp_num_threads_most), or nullopt where it takes it.
/// Other OpenMP runtimes warn and ignore such values.
std::optional<std::string> omp_num_threads_fault(std::string_view value);

/// Removes OMP_NUM_THREADS from the environment, with a warning unless it is blank, when
/// omp_num_threads_fault finds it faulty. Runs as libhetkern is loaded, before the OpenMP runtime
/// reads its environment (on the first OpenMP call).
void remove_faulty_omp_num_threads();

}  // namespace hk::detail

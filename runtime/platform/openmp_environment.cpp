// OMP_NUM_THREADS checked as libhetkern loads (openmp_environment.hpp).
#include "runtime/platform/openmp_environment.hpp"

#include <cstdio>
#include <cstdlib>

namespace hk::detail {

std::optional<std::string> omp_num_threads_fault(std::string_view value) {
  bool any_digit = false;
  long long entry = 0;
  for (const char c : value) {
    if (c >= '0' && c <= '9') {
      any_digit = true;
      entry = entry * 10 + (c - '0');
      if (entry > omp_num_threads_most)
        return "an entry asks for more than " + std::to_string(omp_num_threads_most) + " threads";
    } else if (c == ',') {
      entry = 0;
    } else if (c != ' ' && c != '\t') {
      return std::string("'") + c + "' is not a digit, a comma or a blank";
    }
  }
  if (!any_digit && value.find(',') == std::string_view::npos) return std::string("it names no thread count");
  return std::nullopt;
}

void remove_faulty_omp_num_threads() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (!value) return;
  const auto fault = omp_num_threads_fault(value);
  if (!fault) return;
  if (std::string_view(value).find_first_not_of(" \t") != std::string_view::npos)
    std::fprintf(stderr,
                 "hetkern: warning: OMP_NUM_THREADS=\"%s\" ignored: %s (the OpenMP runtime would abort on it); "
                 "expected thread counts separated by commas, such as 8 or 8,2\n",
                 value, fault->c_str());
  unsetenv("OMP_NUM_THREADS");
}

namespace {
// Before any OpenMP call of the library or of the program that loads it.
[[maybe_unused]] __attribute__((constructor)) void remove_faulty_omp_num_threads_at_load() {
  remove_faulty_omp_num_threads();
}
}  // namespace

}  // namespace hk::detail

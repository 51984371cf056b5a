// The thread count of a benchmark, shared by hetkern, the copies and oneDNN (threads.hpp).
#include "bench/threads.hpp"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace hk::bench {

int allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

int use_threads(int requested) {
  const int threads = requested > 0 ? requested : allowed_cpu_count();
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace hk::bench

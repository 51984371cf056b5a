// The thread count of a benchmark, shared by hetkern, the copies and oneDNN.
#pragma once

namespace hk::bench {

/// CPUs this process may run on (its affinity mask, which containers and taskset narrow).
int allowed_cpu_count();

/// `requested` threads, or allowed_cpu_count() when it is 0, made OpenMP's default for later
/// parallel regions (hetkern's default schedules and oneDNN read it). Returns the count.
int use_threads(int requested);

}  // namespace hk::bench

// Ctrl-C as a request to stop long work (a sweep, a tuning run) after the step under way, so that
// what finished is still reported and written.
#pragma once

#include <csignal>

namespace hk::bench {

/// While alive, the first SIGINT only sets a flag (interrupt_requested); the handler then resets
/// itself, so a second Ctrl-C ends the process at once. Restores the previous handler on exit. A
/// SIGINT ignored on entry stays ignored.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction previous_ {};
};

/// True once Ctrl-C was pressed under the current InterruptGuard.
bool interrupt_requested() noexcept;

/// Thrown by stop_if_interrupted(), from a long step's progress callback (a tuner's), to abandon
/// the step under way.
struct Abandoned {};
inline void stop_if_interrupted() {
  if (interrupt_requested()) throw Abandoned();
}

}  // namespace hk::bench

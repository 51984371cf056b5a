// Ctrl-C as a request to stop after the step under way (interrupt.hpp).
#include "bench/interrupt.hpp"

namespace hk::bench {
namespace {

volatile std::sig_atomic_t requested = 0;

void on_interrupt(int) { requested = 1; }

}  // namespace

InterruptGuard::InterruptGuard() {
  requested = 0;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  // SA_RESTART: a system call under way (a database write, waiting for a helper) carries on.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_);
  // Ignored on entry (nohup, a script's background job): the caller meant the run to be immune.
  if (previous_.sa_handler == SIG_IGN) sigaction(SIGINT, &previous_, nullptr);
}

InterruptGuard::~InterruptGuard() { sigaction(SIGINT, &previous_, nullptr); }

bool interrupt_requested() noexcept { return requested != 0; }

}  // namespace hk::bench

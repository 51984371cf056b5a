// Pinning policies: the public topology queries and the once-per-team binding.
#include "runtime/platform/pinning.hpp"

#include <omp.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

#include "hetkern/error.hpp"
#include "runtime/platform/environment.hpp"
#include "runtime/platform/topology.hpp"

namespace hk {
namespace {

// The user bound OpenMP's threads (OMP_PROC_BIND other than false, or OMP_PLACES, which makes
// libomp bind): their binding wins and hetkern binds nothing.
bool openmp_binds() { return omp_get_proc_bind() != omp_proc_bind_false; }

// Why threads are not bound as planned, or empty when they are.
std::string not_applied_because(const detail::Topology* t, PinPolicy policy) {
  if (policy == PinPolicy::none) return "threads are not bound; each may run on any allowed PU";
  if (!t) return "no hwloc topology (" + detail::host_topology_failure() + "): threads run unpinned";
  if (!t->this_system())
    return "the topology is " + t->info().source + ", not this machine: the plan is shown, threads are not bound";
  if (openmp_binds()) return "OMP_PROC_BIND/OMP_PLACES bind OpenMP's threads: hetkern leaves them where OpenMP put them";
  return {};
}

}  // namespace

const char* name_of(PinPolicy policy) {
  switch (policy) {
    case PinPolicy::none: return "none";
    case PinPolicy::compact: return "compact";
    case PinPolicy::scatter: return "scatter";
    case PinPolicy::numa: return "numa";
  }
  return "?";
}

PinPolicy parse_pin_policy(std::string_view text) {
  for (PinPolicy p : {PinPolicy::none, PinPolicy::compact, PinPolicy::scatter, PinPolicy::numa})
    if (text == name_of(p)) return p;
  throw Error(Errc::invalid_parameter, "pin", std::string(text),
              "unknown pinning policy (use none, compact, scatter or numa)");
}

TopologyInfo topology_info() {
  const detail::Topology* t = detail::host_topology();
  if (t) return t->info();
  TopologyInfo info;
  info.source = "unavailable";
  info.reason = detail::host_topology_failure();
  info.digest = topology_digest();
  return info;
}

std::string topology_digest() {
  const detail::Topology* t = detail::host_topology();
  return t ? t->digest() : "no-hwloc";
}

BindingPlan binding_plan(int threads, PinPolicy policy) {
  if (threads < 1)
    throw Error(Errc::invalid_parameter, "binding_plan", "threads", std::to_string(threads) + " is not positive");
  if (policy < PinPolicy::none || policy > PinPolicy::numa)
    throw Error(Errc::invalid_parameter, "binding_plan", "policy", std::to_string(int(policy)) + " is not a PinPolicy");
  const detail::Topology* t = detail::host_topology();
  BindingPlan plan;
  if (t) plan = t->plan(threads, policy);
  plan.policy = policy;
  plan.threads = threads;
  plan.note = not_applied_because(t, policy);
  plan.applied = plan.note.empty() || (policy == PinPolicy::none && t && t->this_system() && !openmp_binds());
  return plan;
}

namespace {

// HETKERN_PIN, when set to a policy name.
std::optional<PinPolicy> pin_from_environment() {
  return detail::setting_from_environment("HETKERN_PIN", parse_pin_policy);
}

}  // namespace

// compact where the layout gives pinning something to keep: several packages or NUMA nodes, or
// cores with several PUs. Under OpenMP's static schedules neighbouring threads take neighbouring
// data, and compact keeps neighbours on one cache and NUMA domain (so the numa split holds
// without asking for it) with one thread per core before any hyperthread. On a flat layout (one
// NUMA node, one PU per core) the scheduler already gives each thread a core, and there pinning
// did not change medians but widened the run-to-run spread (a pinned thread cannot move away from
// a CPU the host is busy with; docs/performance.md): none there, and none where
// nothing can be bound. HETKERN_PIN overrides the choice.
PinPolicy default_pin_policy() {
  static const PinPolicy chosen = [] {
    if (const auto p = pin_from_environment()) return *p;
    const detail::Topology* t = detail::host_topology();
    if (!t || !t->this_system() || openmp_binds()) return PinPolicy::none;
    const TopologyInfo info = t->info();
    const bool layered = info.packages > 1 || info.numa_nodes > 1 || info.pus > info.cores;
    return layered ? PinPolicy::compact : PinPolicy::none;
  }();
  return chosen;
}

namespace detail {
namespace {

struct TeamBinding {
  int threads = 0;
  PinPolicy policy = PinPolicy::none;
  bool bound = false;  // some thread of the team is bound to less than the allowed cpuset
  int first_pu = -1;   // the calling thread's PU while a call runs (bound teams)
};

// Per calling thread: each thread that starts parallel regions has a team of its own.
thread_local TeamBinding current;

void tell_once(std::atomic<bool>& told, const std::string& message) {
  if (!told.exchange(true)) std::fprintf(stderr, "hetkern: %s\n", message.c_str());
}

}  // namespace

void bind_team(int threads, PinPolicy policy) {
  // Called from inside the user's own parallel region, the call runs on that region's threads
  // (nested regions are serial by default): they are the user's to place, and binding each to
  // the plan's first PU would stack them on one core.
  if (omp_in_parallel()) return;
  if (threads == current.threads && policy == current.policy) return;
  const Topology* t = host_topology();
  const std::string reason = not_applied_because(t, policy);
  const bool unbind = policy == PinPolicy::none && current.bound;
  if (!reason.empty() && !unbind) {
    // Without hwloc the discovery already warned; a synthetic topology deserves one notice.
    static std::atomic<bool> told{false};
    if (t && policy != PinPolicy::none && !t->this_system()) tell_once(told, "notice: " + reason);
    current = {threads, policy, false, -1};
    return;
  }
  const BindingPlan plan = t->plan(threads, policy);
  std::atomic<bool> refused{false};
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    const int pu = plan.pus.empty() ? -1 : plan.pus[std::size_t(me) % plan.pus.size()];
    if (!t->bind_this_thread(pu)) refused.store(true, std::memory_order_relaxed);
  }
  if (refused.load()) {
    static std::atomic<bool> told{false};
    tell_once(told, "warning: the operating system refused to bind threads; they run unpinned");
  }
  current = {threads, policy, policy != PinPolicy::none, plan.pus.empty() ? -1 : plan.pus[0]};
}

PinnedCall::PinnedCall(int threads, PinPolicy policy) {
  if (omp_in_parallel()) return;
  const bool was_bound = current.bound;
  if (!was_bound && policy == PinPolicy::none) return;  // unpinned and staying so: nothing to do
  CPU_ZERO(&callers_);
  if (sched_getaffinity(0, sizeof callers_, &callers_) != 0) return;
  bind_team(threads, policy);
  // bind_team placed the calling thread only when it (re)bound or unbound the team.
  restore_ = was_bound || current.bound;
  if (current.first_pu >= 0) host_topology()->bind_this_thread(current.first_pu);
}

PinnedCall::~PinnedCall() {
  if (restore_) sched_setaffinity(0, sizeof callers_, &callers_);
}

}  // namespace detail
}  // namespace hk

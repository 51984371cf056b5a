// Topology discovery and binding plans on synthetic and XML topologies (machines we do not have),
// and pinning on this machine: the plans' properties are checked against the layout the
// synthetic description implies (hwloc numbers synthetic PUs in order, so PU p of a layout with
// `per_core` PUs per core sits on core p / per_core).
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <omp.h>

#include "hetkern/hetkern.hpp"
#ifdef HETKERN_OFFLOAD
#include "hetkern/device.hpp"
#endif
#include "runtime/platform/topology.hpp"

namespace {

using hk::BindingPlan;
using hk::PinPolicy;
using hk::detail::Topology;

constexpr PinPolicy all_policies[] = {PinPolicy::none, PinPolicy::compact, PinPolicy::scatter, PinPolicy::numa};

// 2 packages x 2 NUMA nodes x 8 cores x 2 PUs: PU p is on core p/2, NUMA node p/16, package p/32.
constexpr const char* two_by_two = "pack:2 numa:2 core:8 pu:2";

// Properties every plan has: one PU per thread, only allowed PUs, no PU twice while there are
// enough, no core twice while there are enough cores, NUMA nodes that hold the PU.
void expect_sound(const BindingPlan& plan, const std::set<int>& allowed,
                  int per_core, int cores, int pus_per_node) {
  if (plan.policy == PinPolicy::none) {
    EXPECT_TRUE(plan.pus.empty());
    return;
  }
  ASSERT_EQ(plan.pus.size(), std::size_t(plan.threads));
  ASSERT_EQ(plan.numa_nodes.size(), plan.pus.size());
  std::set<int> seen, seen_cores;
  for (std::size_t i = 0; i < plan.pus.size(); ++i) {
    const int pu = plan.pus[i];
    EXPECT_TRUE(allowed.count(pu)) << "PU " << pu << " is not allowed";
    EXPECT_EQ(plan.numa_nodes[i], pu / pus_per_node) << "thread " << i;
    seen.insert(pu);
    seen_cores.insert(pu / per_core);
  }
  EXPECT_EQ(seen.size(), std::min<std::size_t>(plan.pus.size(), allowed.size()))
      << hk::name_of(plan.policy) << " with " << plan.threads << " threads uses a PU twice";
  if (plan.policy != PinPolicy::numa)
    EXPECT_EQ(seen_cores.size(), std::min<std::size_t>(plan.pus.size(), std::size_t(cores)))
        << hk::name_of(plan.policy) << " with " << plan.threads << " threads uses a core twice";
}

std::set<int> range_set(int first, int last) {
  std::set<int> s;
  for (int i = first; i <= last; ++i) s.insert(i);
  return s;
}

TEST(Topology, TwoPackagesTwoNumaNodesCounts) {
  const auto t = Topology::synthetic(two_by_two);
  const hk::TopologyInfo info = t->info();
  EXPECT_TRUE(info.available);
  EXPECT_FALSE(info.this_system);
  EXPECT_EQ(info.source, "synthetic");
  EXPECT_EQ(info.packages, 2);
  EXPECT_EQ(info.numa_nodes, 2 * 2);
  EXPECT_EQ(info.cores, 2 * 2 * 8);
  EXPECT_EQ(info.pus, 2 * 2 * 8 * 2);
  for (PinPolicy policy : all_policies)
    for (int threads = 1; threads <= 70; ++threads)
      expect_sound(t->plan(threads, policy), range_set(0, 63), 2, 32, 16);
}

TEST(Topology, CompactFillsOneDomainFirst) {
  const auto t = Topology::synthetic(two_by_two);
  const BindingPlan plan = t->plan(24, PinPolicy::compact);
  // The first 8 threads fill the 8 cores of one NUMA node, the next 8 the next node, ...
  for (int i = 0; i < 24; ++i) EXPECT_EQ(plan.numa_nodes[std::size_t(i)], i / 8) << "thread " << i;
  // ... and hyperthreads come only after every core has a thread.
  const BindingPlan all = t->plan(64, PinPolicy::compact);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(all.pus[std::size_t(i)] % 2, 0) << "thread " << i;
  for (int i = 32; i < 64; ++i) EXPECT_EQ(all.pus[std::size_t(i)] % 2, 1) << "thread " << i;
}

TEST(Topology, ScatterAlternatesDomains) {
  const auto t = Topology::synthetic(two_by_two);
  const BindingPlan plan = t->plan(32, PinPolicy::scatter);
  for (std::size_t i = 0; i + 1 < plan.pus.size(); ++i)
    EXPECT_NE(plan.pus[i] / 32, plan.pus[i + 1] / 32) << "threads " << i << " and " << i + 1 << " share a package";
  for (std::size_t i = 0; i + 4 <= plan.pus.size(); i += 4) {
    const std::set<int> nodes(plan.numa_nodes.begin() + std::ptrdiff_t(i), plan.numa_nodes.begin() + std::ptrdiff_t(i + 4));
    EXPECT_EQ(nodes.size(), 4u) << "threads " << i << ".." << i + 3 << " are not on four NUMA nodes";
  }
}

TEST(Topology, NumaGivesEachNodeAContiguousTeam) {
  const auto t = Topology::synthetic(two_by_two);
  for (int threads : {1, 3, 4, 10, 32, 64}) {
    const BindingPlan plan = t->plan(threads, PinPolicy::numa);
    std::vector<int> per_node(4, 0);
    for (std::size_t i = 0; i < plan.pus.size(); ++i) {
      ++per_node[std::size_t(plan.numa_nodes[i])];
      if (i > 0) EXPECT_LE(plan.numa_nodes[i - 1], plan.numa_nodes[i]) << threads << " threads: groups not contiguous";
    }
    for (int n : per_node) {
      EXPECT_GE(n, threads / 4) << threads << " threads";
      EXPECT_LE(n, (threads + 3) / 4) << threads << " threads";
    }
  }
}

TEST(Topology, RestrictedCpusetUsesOnlyAllowedPus) {
  // PUs 0-5 (3 cores of node 0) and 40-47 (4 cores of node 2, in package 1).
  const auto t = Topology::synthetic(two_by_two, "0-5,40-47");
  const hk::TopologyInfo info = t->info();
  EXPECT_EQ(info.packages, 2);
  EXPECT_EQ(info.numa_nodes, 2);
  EXPECT_EQ(info.cores, 7);
  EXPECT_EQ(info.pus, 14);
  std::set<int> allowed = range_set(0, 5);
  for (int p = 40; p <= 47; ++p) allowed.insert(p);
  for (PinPolicy policy : all_policies)
    for (int threads = 1; threads <= 20; ++threads)
      expect_sound(t->plan(threads, policy), allowed, 2, 7, 16);
  // numa: threads in proportion to the nodes' cores (3 and 4).
  EXPECT_EQ(t->plan(7, PinPolicy::numa).numa_nodes, (std::vector<int>{0, 0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(t->plan(14, PinPolicy::numa).numa_nodes, (std::vector<int>{0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2}));
}

TEST(Topology, HybridLikeLayout) {
  // Two "performance" cores with two PUs and an L2 each, sixteen "efficiency" cores with one PU
  // sharing an L2 by four: a 6 x L2 x 4 cores x 2 PUs machine cut down. PU p is under L2 p/8.
  std::string efficiency;
  for (int p = 16; p <= 46; p += 2) efficiency += "," + std::to_string(p);
  const auto t = Topology::synthetic("pack:1 l2:6 core:4 pu:2", "0-1,8-9" + efficiency);
  const hk::TopologyInfo info = t->info();
  EXPECT_EQ(info.cores, 2 + 16);
  EXPECT_EQ(info.pus, 4 + 16);
  int l2_count = 0;
  for (const auto& c : info.caches)
    if (c.level == 2) l2_count += c.count;
  EXPECT_EQ(l2_count, 6);
  std::set<int> allowed = {0, 1, 8, 9};
  for (int p = 16; p <= 46; p += 2) allowed.insert(p);
  for (PinPolicy policy : all_policies)
    for (int threads = 1; threads <= 24; ++threads) {
      const BindingPlan plan = t->plan(threads, policy);
      if (policy == PinPolicy::none) continue;
      std::set<int> pus(plan.pus.begin(), plan.pus.end()), cores;
      for (int pu : plan.pus) {
        EXPECT_TRUE(allowed.count(pu)) << pu;
        cores.insert(pu / 2);
      }
      EXPECT_EQ(pus.size(), std::min<std::size_t>(std::size_t(threads), 20));
      EXPECT_EQ(cores.size(), std::min<std::size_t>(std::size_t(threads), 18));
    }
  // Scatter puts its first six threads under six different L2 caches.
  const BindingPlan scatter = t->plan(6, PinPolicy::scatter);
  std::set<int> l2s;
  for (int pu : scatter.pus) l2s.insert(pu / 8);
  EXPECT_EQ(l2s.size(), 6u);
}

TEST(Topology, CacheSizesFromTheTopology) {
  const auto t = Topology::synthetic("pack:1 l3:1(size=33554432) l2:4(size=2097152) l1d:1(size=49152) core:1 pu:2");
  EXPECT_EQ(t->data_cache_bytes(1), 49152);
  EXPECT_EQ(t->data_cache_bytes(2), 2097152);
  EXPECT_EQ(t->data_cache_bytes(3), 33554432);
  EXPECT_EQ(t->data_cache_bytes(4), 0);
  EXPECT_EQ(t->total_data_cache_bytes(2), 4 * 2097152);
  EXPECT_EQ(t->total_data_cache_bytes(3), 33554432);
  EXPECT_EQ(t->total_data_cache_bytes(4), 0);
  // Two packages of two L3s, the cores of one package's second L3 not allowed.
  const auto two = Topology::synthetic("pack:2 l3:2(size=1048576) core:2 pu:1", "0-5");
  EXPECT_EQ(two->total_data_cache_bytes(3), 3 * 1048576);
  const hk::TopologyInfo info = t->info();
  ASSERT_EQ(info.caches.size(), 3u);
  EXPECT_EQ(info.caches[0].level, 1);
  EXPECT_EQ(info.caches[0].count, 4);
  EXPECT_EQ(info.caches[1].size_bytes, 2097152);
  EXPECT_EQ(info.caches[2].count, 1);
}

TEST(Topology, DigestIsStableAndTellsLayoutsApart) {
  EXPECT_EQ(Topology::synthetic(two_by_two)->digest(), Topology::synthetic(two_by_two)->digest());
  EXPECT_NE(Topology::synthetic(two_by_two)->digest(), Topology::synthetic("pack:2 numa:2 core:8 pu:1")->digest());
  EXPECT_NE(Topology::synthetic(two_by_two)->digest(), Topology::synthetic(two_by_two, "0-31")->digest());
  EXPECT_EQ(Topology::synthetic(two_by_two)->digest().rfind("hwloc-", 0), 0u);
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    path = (std::filesystem::temp_directory_path() / ("hetkern-topology-" + std::to_string(::getpid()) + ".xml")).string();
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

TEST(Topology, XmlRoundTripPlansTheSame) {
  const auto synthetic = Topology::synthetic(two_by_two, "0-23");
  const TempFile xml(synthetic->to_xml());
  const auto t = Topology::from_xml(xml.path);
  EXPECT_EQ(t->info().source, "xml");
  EXPECT_FALSE(t->this_system());
  EXPECT_EQ(t->digest(), synthetic->digest());
  EXPECT_EQ(t->info().cores, synthetic->info().cores);
  for (PinPolicy policy : all_policies)
    for (int threads : {1, 5, 12, 24, 30}) {
      EXPECT_EQ(t->plan(threads, policy).pus, synthetic->plan(threads, policy).pus);
      EXPECT_EQ(t->plan(threads, policy).numa_nodes, synthetic->plan(threads, policy).numa_nodes);
    }
}

// The environment variables the library honours: a good file is used, a bad one is a failure
// (so that the library falls back to unpinned threads), never a silent switch to this machine.
TEST(Topology, DiscoverHonoursHwlocEnvironment) {
  const TempFile xml(Topology::synthetic(two_by_two)->to_xml());
  std::string failure;
  ::setenv("HWLOC_XMLFILE", xml.path.c_str(), 1);
  auto t = Topology::discover(failure);
  ASSERT_TRUE(t) << failure;
  EXPECT_EQ(t->info().source, "xml");
  EXPECT_EQ(t->info().pus, 64);
  ::setenv("HWLOC_XMLFILE", (xml.path + ".missing").c_str(), 1);
  t = Topology::discover(failure);
  EXPECT_FALSE(t);
  EXPECT_NE(failure.find("HWLOC_XMLFILE"), std::string::npos) << failure;
  ::unsetenv("HWLOC_XMLFILE");
  ::setenv("HWLOC_SYNTHETIC", "pack:3 core:2 pu:1", 1);
  t = Topology::discover(failure);
  ASSERT_TRUE(t) << failure;
  EXPECT_EQ(t->info().packages, 3);
  EXPECT_EQ(t->info().source, "synthetic");
  ::setenv("HWLOC_SYNTHETIC", "sockets of cheese", 1);
  EXPECT_FALSE(Topology::discover(failure));
  EXPECT_NE(failure.find("HWLOC_SYNTHETIC"), std::string::npos) << failure;
  ::unsetenv("HWLOC_SYNTHETIC");
}

TEST(Topology, BadDescriptionsAreErrors) {
  try {
    Topology::synthetic("pack:two");
    FAIL() << "no error";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_parameter);
  }
  EXPECT_THROW(Topology::synthetic(two_by_two, "100-200"), hk::Error);
  EXPECT_THROW(Topology::synthetic(two_by_two, "banana"), hk::Error);
  try {
    Topology::from_xml("/nonexistent/topology.xml");
    FAIL() << "no error";
  } catch (const hk::Error& e) {
    EXPECT_EQ(e.code(), hk::Errc::invalid_file);
  }
  EXPECT_THROW(hk::parse_pin_policy("tight"), hk::Error);
  EXPECT_THROW(hk::binding_plan(0, PinPolicy::compact), hk::Error);
  for (PinPolicy p : all_policies) EXPECT_EQ(hk::parse_pin_policy(hk::name_of(p)), p);
}

// ---------------------------------------------------------------------------------------------
// This machine: the binding really happens, once per team, and pin=none undoes it.

std::set<int> affinity_of_this_thread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::set<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.insert(c);
  return out;
}

void cumsum_with(std::vector<std::int32_t>& x, std::vector<std::int32_t>& y, const std::string& schedule) {
  const std::int64_t n = std::int64_t(x.size());
  const hk::TensorDesc d(hk::DataType::int32, std::span<const std::int64_t>(&n, 1));
  hk::cumulative_sum({d, x.data()}, {d, y.data()}, {}, hk::Schedule::parse(schedule));
}

// The affinity of OpenMP thread `t` of the calling thread's team of `threads` (libomp reuses the
// team hetkern bound: the same threads in the same order).
std::set<int> affinity_of_team_thread(int threads, int t) {
  std::set<int> out;
#pragma omp parallel num_threads(threads)
  if (omp_get_thread_num() == t) out = affinity_of_this_thread();
  return out;
}

TEST(Pinning, BindsTheTeamOnceAndGivesTheCallerItsAffinityBack) {
  const hk::TopologyInfo info = hk::topology_info();
  if (!hk::binding_plan(1, PinPolicy::compact).applied)
    GTEST_SKIP() << "threads are not bound here: " << hk::binding_plan(1, PinPolicy::compact).note;
  std::vector<std::int32_t> x(1 << 16), y(x.size()), expected(x.size());
  std::iota(x.begin(), x.end(), -1000);
  std::partial_sum(x.begin(), x.end(), expected.begin());
  // Unbound (whatever ran before in this process): threads may run on every PU hwloc allows.
  cumsum_with(x, y, "scan.blocked(block=1024, threads=2, pin=none)");
  const std::set<int> callers = affinity_of_this_thread();
  const BindingPlan every = hk::binding_plan(info.pus, PinPolicy::compact);
  const std::set<int> allowed(every.pus.begin(), every.pus.end());
  EXPECT_EQ(affinity_of_team_thread(2, 1), allowed);
  for (PinPolicy policy : {PinPolicy::compact, PinPolicy::scatter, PinPolicy::numa}) {
    const BindingPlan plan = hk::binding_plan(2, policy);
    EXPECT_TRUE(plan.applied) << plan.note;
    ASSERT_EQ(plan.pus.size(), 2u);
    cumsum_with(x, y, std::string("scan.blocked(block=1024, threads=2, pin=") + hk::name_of(policy) + ")");
    EXPECT_EQ(y, expected);
    EXPECT_EQ(affinity_of_this_thread(), callers) << "the caller keeps its affinity after pin=" << hk::name_of(policy);
    EXPECT_EQ(affinity_of_team_thread(2, 1), std::set<int>{plan.pus[1]}) << hk::name_of(policy);
    cumsum_with(x, y, "scan.blocked(block=1024, threads=2, pin=none)");
    EXPECT_EQ(y, expected);
    EXPECT_EQ(affinity_of_team_thread(2, 1), allowed) << "pin=none after pin=" << hk::name_of(policy);
    EXPECT_EQ(affinity_of_this_thread(), callers);
  }
}

TEST(Pinning, CallsInsideTheUsersParallelRegionBindNothing) {
  std::vector<std::int32_t> x(4096, 1), expected(x.size());
  std::partial_sum(x.begin(), x.end(), expected.begin());
  std::vector<std::int32_t> unbound(x.size());
  cumsum_with(x, unbound, "scan.blocked(block=1024, threads=1, pin=none)");
  const std::set<int> before = affinity_of_this_thread();
  bool all_unchanged = true, all_right = true;
#pragma omp parallel num_threads(2) reduction(&& : all_unchanged, all_right)
  {
    std::vector<std::int32_t> y(x.size());
    std::vector<std::int32_t> mine = x;
    const std::set<int> mine_before = affinity_of_this_thread();
    cumsum_with(mine, y, "scan.blocked(block=1024, threads=2, pin=compact)");
    all_right = y == expected;
    all_unchanged = affinity_of_this_thread() == mine_before;
  }
  EXPECT_TRUE(all_right);
  EXPECT_TRUE(all_unchanged);
  EXPECT_EQ(affinity_of_this_thread(), before);
}

TEST(Pinning, EveryPolicyGivesTheSameResult) {
  std::vector<std::int32_t> x(100003), y(x.size()), expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(i * 2654435761u >> 7);
  std::partial_sum(x.begin(), x.end(), expected.begin(),
                   [](std::int32_t a, std::int32_t b) { return std::int32_t(std::uint32_t(a) + std::uint32_t(b)); });
  for (int threads : {1, 2, 3})
    for (PinPolicy policy : all_policies) {
      const std::string pin = std::string(", pin=") + hk::name_of(policy) + ")";
      for (const std::string& s : {"scan.blocked(block=4096, threads=" + std::to_string(threads) + pin,
                                  "scan.parallel(threads=" + std::to_string(threads) + pin}) {
        std::fill(y.begin(), y.end(), 0);
        cumsum_with(x, y, s);
        EXPECT_EQ(y, expected) << s;
      }
    }
}

bool no_gpu() {
#ifdef HETKERN_OFFLOAD
  return hk::offload_on_host();
#else
  return true;
#endif
}

TEST(Pinning, DefaultScheduleNamesThePolicy) {
  std::vector<std::int32_t> x(1 << 20), y(x.size());
  const std::int64_t n = std::int64_t(x.size());
  const hk::TensorDesc d(hk::DataType::int32, std::span<const std::int64_t>(&n, 1));
  const hk::Schedule s = hk::default_schedule(hk::Operator::cumulative_sum, {d, x.data()}, {d, y.data()}, {});
  // Without a GPU the host's threads scan it; with one, the cost model may send it there (a GPU
  // schedule has no threads to pin). A chosen strategy that pins names the policy.
  const auto scans = hk::strategies(hk::Operator::cumulative_sum);
  const auto chosen = std::find_if(scans.begin(), scans.end(), [&](const auto& i) { return i.name == s.strategy(); });
  ASSERT_NE(chosen, scans.end()) << s.to_string();
  const bool pins = std::any_of(chosen->params.begin(), chosen->params.end(), [](const auto& p) { return p.key == "pin"; });
  if (no_gpu() && hk::default_threads() > 1) EXPECT_TRUE(pins) << s.to_string();
  if (pins && hk::default_threads() > 1) {
    ASSERT_TRUE(s.find("pin").has_value()) << s.to_string();
    EXPECT_EQ(*s.find("pin"), hk::name_of(hk::default_pin_policy()));
  }
  const auto strategies = hk::strategies(hk::Operator::quantized_linear_matmul);
  const auto parallel = std::find_if(strategies.begin(), strategies.end(), [](const auto& i) { return i.name == "qmm.parallel"; });
  ASSERT_NE(parallel, strategies.end());
  const auto pin = std::find_if(parallel->params.begin(), parallel->params.end(), [](const auto& p) { return p.key == "pin"; });
  ASSERT_NE(pin, parallel->params.end());
  EXPECT_EQ(pin->choices, (std::vector<std::string>{"none", "compact", "scatter", "numa"}));
  EXPECT_EQ(pin->max - pin->min + 1, std::int64_t(pin->choices.size()));
}

}  // namespace

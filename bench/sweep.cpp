// A benchmark sweep over cases, schedules, threads, pinning and devices (sweep.hpp).
#include "bench/sweep.hpp"

#include <fcntl.h>
#include <omp.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <sstream>

#include "bench/interrupt.hpp"
#include "bench/onednn_baseline.hpp"
#include "bench/peak.hpp"
#include "bench/threads.hpp"
#include "hetkern/hetkern.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

extern char** environ;

namespace hk::bench {
namespace {

namespace fs = std::filesystem;

// The plots bench/plot.py can draw (its `wanted` list), each only where the sweep has its cases.
constexpr const char* plot_files[] = {"scans.png", "qmm.png", "scaling.png", "cpu_gpu.png"};

// Strategies for GPUs carry "offload" (one GPU) or ".devices" (several) in their names; every
// other strategy runs on the host (the split strategies' `threads` are their host part's).
std::string device_of(const std::string& strategy) {
  return strategy.find("offload") != std::string::npos || strategy.find(".devices") != std::string::npos ? "gpu"
                                                                                                          : "host";
}

bool has_param(const StrategyInfo& s, std::string_view key) {
  return std::any_of(s.params.begin(), s.params.end(), [&](const ParamInfo& p) { return p.key == key; });
}

Operator op_of(const SweepCase& c) { return c.is_qmm ? Operator::quantized_linear_matmul : c.scan.op; }

struct Measurement {
  const SweepCase* c = nullptr;
  Schedule schedule;      // empty: the library's choice
  std::string strategy;   // the strategy's name, or "default"
  int threads = 1;
  std::string pin;        // empty: no pin parameter
  std::string device;
};

// The thread count a schedule text fixes; a value that is no count is left for the operator to
// refuse (the measurement is then reported as skipped with its message).
int fixed_threads(std::string_view value, int fallback) {
  int t = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), t);
  return ec == std::errc() && end == value.data() + value.size() && t > 0 ? t : fallback;
}

// The schedule variants of one strategy for the thread and pin dimensions: host strategies with a
// threads parameter take each count (unless the schedule fixes one), those with a pin parameter
// each pin; a GPU strategy runs once, its device threads left to the library.
void expand(const SweepCase& c, const StrategyInfo& info, const Schedule& base,
            const SweepOptions& o, const std::vector<int>& threads, std::vector<Measurement>& out) {
  const std::string device = device_of(info.name);
  std::vector<std::string> pins = {""};
  if (base.find("pin")) pins = {std::string(*base.find("pin"))};
  else if (device == "host" && has_param(info, "pin") && !o.pins.empty()) pins = o.pins;
  std::vector<int> counts = {threads.back()};
  if (device == "host") {
    if (const auto fixed = base.find("threads")) counts = {fixed_threads(*fixed, threads.back())};
    else if (has_param(info, "threads")) counts = threads;
    else counts = {1};
  }
  for (const int t : counts)
    for (const auto& pin : pins) {
      Schedule s = base;
      if (device == "host" && has_param(info, "threads")) s.set("threads", t);
      if (!pin.empty()) s.set("pin", pin);
      out.push_back({&c, s, info.name, t, pin, device});
    }
}

std::vector<Measurement> plan(const SweepOptions& o, const std::vector<int>& threads, bool gpu,
                              std::vector<std::string>& notes) {
  std::vector<Measurement> out;
  std::set<std::string> noted;
  for (const SweepCase& c : o.cases) {
    const auto infos = strategies(op_of(c));
    auto info_of = [&](const std::string& name) -> const StrategyInfo* {
      for (const auto& i : infos)
        if (i.name == name) return &i;
      return nullptr;
    };
    if (!o.schedules.empty()) {
      for (const auto& text : o.schedules) {
        const Schedule s = Schedule::parse(text);
        const StrategyInfo* info = info_of(s.strategy());
        // A schedule names one operator's strategy; the cases of the other operators skip it.
        if (!info) continue;
        if (device_of(info->name) == "gpu" && !gpu) {
          if (noted.insert(info->name).second)
            notes.push_back(info->name + ": no OpenMP offload device, not measured");
          continue;
        }
        expand(c, *info, s, o, threads, out);
      }
      continue;
    }
    for (const int t : threads) out.push_back({&c, Schedule(), "default", t, "", "host"});
    for (const auto& info : infos) {
      // The reference is the tests' oracle, not a schedule anyone runs for speed.
      if (info.name == "reference") continue;
      if (device_of(info.name) == "gpu" && !gpu) {
        if (noted.insert(info.name).second)
          notes.push_back(info.name + ": no OpenMP offload device, not measured");
        continue;
      }
      expand(c, info, Schedule(info.name), o, threads, out);
    }
  }
  return out;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(std::min(line.size(), colon + 2));
    }
  return "unknown";
}

std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

class Progress {
 public:
  explicit Progress(int total) : total_(total), tty_(isatty(STDERR_FILENO)) {
    winsize w{};
    if (tty_ && ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col >= 40) width_ = w.ws_col;
  }
  void show(int done, const std::string& what) {
    if (!tty_) {
      std::fprintf(stderr, "[%d/%d] %s\n", done + 1, total_, what.c_str());
      return;
    }
    constexpr int bar = 24;
    const int filled = total_ ? bar * done / total_ : bar;
    std::string line = "[" + std::string(std::size_t(filled), '#') + std::string(std::size_t(bar - filled), '.') +
                       "] " + std::to_string(done) + "/" + std::to_string(total_) + " " + what;
    if (int(line.size()) > width_ - 1) line.resize(std::size_t(width_ - 1));
    std::fprintf(stderr, "\r%-*s", width_ - 1, line.c_str());
  }
  void finish(int done) {
    if (!tty_) return;
    show(done, done == total_ ? "done" : "stopped");
    std::fputc('\n', stderr);
  }

 private:
  int total_;
  bool tty_;
  int width_ = 80;
};

std::string describe(const Measurement& m) {
  std::string s = m.c->text + " | " + (m.schedule.empty() ? "default" : m.schedule.to_string());
  if (m.schedule.empty() || !m.schedule.find("threads")) s += " threads=" + std::to_string(m.threads);
  return s;
}

// The sweep's fields first, then the benchmark's record (case parameters, timing, baseline).
Record sweep_record(const Measurement& m, const Record& measured) {
  Record r;
  r.set("case", m.c->text);
  r.set("case_line", m.c->line);
  r.set("kind", "hetkern");
  r.set("peer", nullptr);
  r.set("strategy", m.strategy);
  r.set("device", m.device);
  r.set("pin", m.pin.empty() ? Record::Value() : Record::Value(m.pin));
  for (const auto& [key, value] : measured.fields()) r.set(key, value);
  // The library's choice may be any strategy: its device is the one of what it chose.
  if (const auto* text = std::get_if<std::string>(r.find("schedule")))
    r.set("device", device_of(Schedule::parse(*text).strategy()));
  // hetkern's offload schedules take host memory: every call includes the transfers.
  const bool gpu = std::get<std::string>(*r.find("device")) == "gpu";
  r.set("median_with_transfers_ns", gpu ? *r.find("median_ns") : Record::Value());
  r.set("median_without_transfers_ns", nullptr);
  return r;
}

std::string json_string(std::string_view s) {
  Record r;
  r.set("s", std::string(s));
  const std::string j = r.to_json();  // {"s": "..."}
  return j.substr(6, j.size() - 7);
}

void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      throw Error(Errc::invalid_file, "sweep", path.string(), "cannot be written");
  }
  fs::rename(tmp, path);
}

// The JSON object of a peer or skip note: {"key": "value", ...}.
std::string object(const std::vector<std::pair<std::string, std::string>>& fields) {
  Record r;
  for (const auto& [k, v] : fields) r.set(k, v);
  return r.to_json();
}

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The Python helpers lie in share/hetkern/bench next to bin/, in the build tree and once installed.
fs::path script(const char* name) { return executable_dir() / ".." / "share" / "hetkern" / "bench" / name; }

// $HETKERN_PYTHON, else Debian's /usr/bin/python3 (where python3-numpy and python3-matplotlib
// install), else python3 from PATH.
std::string python() {
  if (const char* chosen = std::getenv("HETKERN_PYTHON"); chosen && *chosen) return chosen;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

// Runs `PYTHON ARGS...` (a script and its arguments, or -c CODE) with stdin and stdout from and to
// the files given; returns the exit status, or -1 when Python could not be started. In a process
// group of its own, a Ctrl-C at the terminal reaches only hetkern, which lets it finish.
int run_python(const std::vector<std::string>& args, const std::optional<fs::path>& stdin_file,
               const std::optional<fs::path>& stdout_file, bool own_process_group = false) {
  const std::string interpreter = python();
  std::vector<std::string> argv_text = {interpreter};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_file) posix_spawn_file_actions_addopen(&actions, 0, stdin_file->c_str(), O_RDONLY, 0);
  if (stdout_file)
    posix_spawn_file_actions_addopen(&actions, 1, stdout_file->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_process_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, interpreter.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Whether the interpreter run_python would start runs at all: it writes the CSV, the summary and
// the plots at the end, so a sweep without one stops before measuring anything.
bool python_runs() { return run_python({"-c", ""}, std::nullopt, std::nullopt) == 0; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The peers' cases, each with the copy baselines of hetkern's measurements of it by thread count,
// so that a peer's record carries the roof measured in this run at its own thread count.
std::string peer_input(const SweepOptions& o, const std::vector<Record>& measured) {
  std::string text = "{\"min_seconds\": " + std::to_string(o.timing.min_seconds) +
                     ", \"min_repetitions\": " + std::to_string(o.timing.min_repetitions) + ", \"cases\": [";
  bool first = true;
  for (const SweepCase& c : o.cases) {
    Record r;
    r.set("case", c.text);
    r.set("case_line", c.line);
    if (c.is_qmm) {
      r.set("op", "qlinear-matmul");
      r.set("shape", std::vector<std::int64_t>{c.qmm.m, c.qmm.n, c.qmm.k});
      r.set("dtype", std::string(name_of(c.qmm.a_type)) + "," + std::string(name_of(c.qmm.b_type)) + "," +
                         std::string(name_of(c.qmm.out_type)));
      // The quantization hetkern ran with, so that a peer requantizes its products the same way.
      const auto same_case = [&](const Record& m) {
        const auto* name = std::get_if<std::string>(m.find("case"));
        return name && *name == c.text && m.find("a_scale");
      };
      if (const auto it = std::find_if(measured.begin(), measured.end(), same_case); it != measured.end())
        for (const char* key :
             {"b_range", "b_layout", "a_scale", "a_zero_point", "b_scale", "out_scale", "out_zero_point"})
          r.set(key, *it->find(key));
    } else {
      r.set("op", command_name(c.scan.op));
      r.set("shape", c.scan.shape);
      r.set("dtype", std::string(name_of(c.scan.dtype)));
      r.set("axis", c.scan.options.axis);
      r.set("direction", c.scan.options.direction == Direction::decreasing ? "decreasing" : "increasing");
      r.set("exclusive", c.scan.options.exclusive);
    }
    std::string baselines;
    std::set<std::int64_t> seen;
    for (const Record& m : measured) {
      const auto* name = std::get_if<std::string>(m.find("case"));
      const auto* t = std::get_if<std::int64_t>(m.find("threads"));
      if (!name || *name != c.text || !t || !m.find("copy_median_ns") || !seen.insert(*t).second) continue;
      Record b;
      b.set("threads", *t);
      for (const char* key : {"copy_method", "copy_median_ns", "copy_min_ns", "copy_max_ns", "copy_gbps"})
        b.set(key, *m.find(key));
      baselines += (baselines.empty() ? "" : ", ") + b.to_json();
    }
    std::string json = r.to_json();
    json.pop_back();
    text += (first ? "" : ", ") + json + ", \"baselines\": [" + baselines + "]}";
    first = false;
  }
  return text + "]}\n";
}

// Lines of the peers' output, each a word and a JSON object: "peer {...}" for each peer library,
// "record {...}" for each measurement, "skip {...}" for a case a peer cannot run. The objects are
// passed through into results.json as they are.
struct PeerOutput {
  std::vector<std::string> peers, records, skipped;
  std::string failure;  // why the helper produced nothing usable, or empty
};

PeerOutput run_peers(const SweepOptions& o, const std::vector<Record>& measured, const fs::path& dir) {
  PeerOutput out;
  const fs::path in = dir / ".peers-input.json", result = dir / ".peers-output.jsonl";
  write_atomically(in, peer_input(o, measured));
  const int status = run_python({script("peers.py").string()}, in, result);
  const std::string text = read_file(result);
  fs::remove(in);
  fs::remove(result);
  if (status != 0) {
    out.failure = status < 0 ? "python3 not found" : "bench/peers.py exited with status " + std::to_string(status);
    return out;
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string kind = line.substr(0, space), json = line.substr(space + 1);
    if (kind == "peer") out.peers.push_back(json);
    else if (kind == "record") out.records.push_back(json);
    else if (kind == "skip") out.skipped.push_back(json);
  }
  return out;
}

std::string list_json(const std::vector<std::string>& items) {
  std::string t = "[";
  for (std::size_t i = 0; i < items.size(); ++i) t += (i ? ",\n  " : "\n  ") + items[i];
  return t + (items.empty() ? "]" : "\n]");
}

}  // namespace

std::vector<int> default_thread_counts(int cpus) {
  std::vector<int> counts;
  for (int t = 1; t < cpus; t *= 2) counts.push_back(t);
  counts.push_back(std::max(1, cpus));
  return counts;
}

// A parameter the strategy lacks, or a value outside the parameter's range, is wrong for every
// case: refused before anything runs, by the library's own binding of the schedule (what suits
// only some cases is skipped where it does not).
void bind_parameters(Operator op, const Schedule& s) {
  detail::BoundParams bound(s, {});
  if (op == Operator::quantized_linear_matmul)
    detail::find_strategy("sweep", detail::qmm_strategies(), bound);
  else
    detail::find_strategy("sweep", detail::scan_strategies(), bound);
}

void validate(const SweepOptions& o) {
  if (o.cases.empty()) throw Error(Errc::invalid_parameter, "sweep", "spec", "no case to run");
  if (o.out_dir.empty()) throw Error(Errc::invalid_parameter, "sweep", "--out", "needs a directory");
  if (o.out_dir == "-")
    throw Error(Errc::invalid_parameter, "sweep", "--out",
                "'-' is standard output, but a sweep writes a directory of files: name a directory");
  // Two sweeps' files in one directory would read as one sweep.
  std::error_code ec;
  if (!o.force && fs::is_directory(o.out_dir, ec) && !fs::is_empty(o.out_dir, ec))
    throw Error(Errc::invalid_file, "sweep", o.out_dir,
                "is not empty: give another --out, or --force to write into it");
  for (const int t : o.threads)
    if (t < 1 || t > 1024)
      throw Error(Errc::invalid_parameter, "sweep", "--threads", "counts are 1 to 1024, got " + std::to_string(t));
  for (const auto& p : o.pins) parse_pin_policy(p);
  std::set<Operator> ops;
  for (const SweepCase& c : o.cases) ops.insert(op_of(c));
  for (const auto& text : o.schedules) {
    const Schedule s = Schedule::parse(text);
    bool known = false;
    for (const Operator op : ops)
      for (const auto& info : strategies(op))
        if (info.name == s.strategy()) bind_parameters(op, s), known = true;
    if (!known)
      throw Error(Errc::invalid_schedule, "sweep", "--schedule",
                  "no case of the sweep has a strategy '" + s.strategy() + "'");
  }
}

SweepResult run_sweep(const SweepOptions& o) {
  validate(o);
  if (!python_runs())
    throw Error(Errc::invalid_parameter, "sweep", "python",
                "cannot run '" + python() +
                    "' (HETKERN_PYTHON, else python3), which writes the CSV, the summary and the plots");
  const fs::path dir = o.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(Errc::invalid_file, "sweep", o.out_dir,
                "cannot create the output directory" +
                    (ec ? ": " + ec.message() : std::string(": a file of that name is in the way")));
  // --force: an earlier sweep's outputs go first, so that none of them (a plot this sweep does not
  // draw) is taken for this sweep's.
  if (o.force) {
    for (const char* name : {"results.json", "results.csv", "summary.md"}) fs::remove(dir / name, ec);
    for (const char* name : plot_files) fs::remove(dir / name, ec);
  }

  const int cpus = allowed_cpu_count();
  std::vector<int> threads = o.threads.empty() ? default_thread_counts(cpus) : o.threads;
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  const int gpu_devices = omp_get_num_devices();
  std::vector<std::string> notes;
  const std::vector<Measurement> measurements = plan(o, threads, gpu_devices > 0, notes);

  SweepResult result;
  result.planned = int(measurements.size());
  int status = 0;  // plot.py's
  std::vector<std::string> records, skipped;
  std::vector<Record> hetkern_records;
  std::map<int, Peak> peaks;
  {
    InterruptGuard guard;
    Progress progress(result.planned);
    auto skip = [&](const Measurement& m, const std::string& reason) {
      skipped.push_back(object({{"case", m.c->text},
                                {"schedule", m.schedule.empty() ? "default" : m.schedule.to_string()},
                                {"reason", reason}}));
      ++result.skipped;
    };
    for (std::size_t i = 0; i < measurements.size(); ++i) {
      if (interrupt_requested()) break;
      const Measurement& m = measurements[i];
      progress.show(int(i), describe(m));
      try {
        Record measured;
        if (m.c->is_qmm) {
          QmmCase c = m.c->qmm;
          c.schedule = m.schedule;
          c.threads = m.threads;
          measured = bench_qmm(c, o.timing);
        } else {
          ScanCase c = m.c->scan;
          c.schedule = m.schedule;
          c.threads = m.threads;
          measured = bench_scan(c, o.timing);
        }
        Record r = sweep_record(m, measured);
        if (m.c->is_qmm && m.device == "host") {
          if (!peaks.count(m.threads)) peaks[m.threads] = measured_peak(active_isa(), m.threads);
          const Peak& p = peaks[m.threads];
          r.set("peak_gops", p.gops > 0 ? Record::Value(p.gops) : Record::Value());
          r.set("peak_method", p.method);
        }
        records.push_back(r.to_json());
        hetkern_records.push_back(std::move(r));
        ++result.measured;
      } catch (const Error& e) {
        // A strategy that does not apply to the case's shape is reported, not fatal.
        skip(m, e.what());
      } catch (const std::bad_alloc&) {
        skip(m, "not enough memory for this case");
      }
    }
    progress.finish(result.measured + result.skipped);
    result.interrupted = interrupt_requested();

    PeerOutput peers;
    if (o.peers && !result.interrupted) {
      std::fprintf(stderr, "peers: numpy and PyTorch where installed ...\n");
      peers = run_peers(o, hetkern_records, dir);
      result.interrupted = interrupt_requested();
      if (!peers.failure.empty()) notes.push_back("peers not measured: " + peers.failure);
    } else if (!o.peers) {
      notes.push_back("peers not measured: --no-peers");
    }
    for (const auto& r : peers.records) records.push_back(r);
    for (const auto& s : peers.skipped) skipped.push_back(s);

    std::vector<std::string> peak_list;
    for (const auto& [t, p] : peaks) {
      Record r;
      r.set("threads", t);
      r.set("isa", name_of(active_isa()));
      r.set("gops", p.gops > 0 ? Record::Value(p.gops) : Record::Value());
      r.set("clock_ghz", p.clock_ghz);
      r.set("method", p.method);
      peak_list.push_back(r.to_json());
    }
    std::vector<std::string> note_list;
    for (const auto& n : notes) note_list.push_back(json_string(n));

    Record machine;
    machine.set("cpu", cpu_model());
    machine.set("cpus", cpus);
    machine.set("isa", name_of(active_isa()));
    machine.set("detected_isa", name_of(detected_isa()));
    machine.set("clock_ghz", measured_clock_ghz(1));
    machine.set("clock_method", "dependent integer additions, one thread");
    machine.set("gpu_devices", gpu_devices);
    const std::string onednn = onednn_version();
    machine.set("onednn_version", onednn.empty() ? Record::Value() : Record::Value(onednn));

    std::string json = "{\n\"hetkern_version\": " + json_string(build_info().version) +
                       ",\n\"spec\": " + json_string(o.spec) + ",\n\"created\": " +
                       json_string(utc_now("%Y-%m-%dT%H:%M:%SZ")) + ",\n\"interrupted\": " +
                       (result.interrupted ? "true" : "false") + ",\n\"planned\": " +
                       std::to_string(result.planned) + ",\n\"machine\": " + machine.to_json() +
                       ",\n\"peaks\": " + list_json(peak_list) + ",\n\"peers\": " + list_json(peers.peers) +
                       ",\n\"notes\": " + list_json(note_list) + ",\n\"skipped\": " + list_json(skipped) +
                       ",\n\"records\": " + list_json(records) + "\n}\n";
    write_atomically(dir / "results.json", json);
    result.files.push_back("results.json");
    // bench/plot.py writes results.csv, summary.md and the plots from results.json, so that every
    // column of every record, peers' included, appears once and the report also works standalone.
    // A Ctrl-C now lets it finish (it runs apart from the terminal's signals) and ends with 130.
    // Absolute paths: a relative one starting with '-' would read as an option.
    const fs::path absolute_dir = fs::absolute(dir);
    status = run_python({script("plot.py").string(), (absolute_dir / "results.json").string(), "--out",
                         absolute_dir.string()},
                        std::nullopt, std::nullopt, true);
    result.interrupted = result.interrupted || interrupt_requested();
  }
  if (status != 0)
    throw Error(Errc::invalid_file, "sweep", "bench/plot.py",
                status < 0 ? "python3 not found: results.json written, no CSV, summary or plots"
                           : "exited with status " + std::to_string(status) +
                                 ": results.json written, see the message above");
  for (const char* f : {"results.csv", "summary.md"}) result.files.push_back(f);
  for (const char* name : plot_files)
    if (fs::exists(dir / name, ec)) result.files.push_back(name);
  return result;
}

}  // namespace hk::bench

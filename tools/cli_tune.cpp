// `hetkern tune`: measure schedules per shape and keep the winners in the tuning database;
// inspect, export and import records; evaluate the tuner against exhaustive sweeps.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "bench/interrupt.hpp"
#include "bench/printable.hpp"
#include "bench/threads.hpp"
#include "hetkern/hetkern.hpp"
#include "tools/cli.hpp"
#include "tools/cli_problem.hpp"
#include "tools/output_file.hpp"
#include "tools/tune_evaluation.hpp"

namespace hk::cli {
namespace {

struct TuneArgs {
  double budget = 8;
  std::string db;
  std::string shapes_file, export_file, import_file;
  bool list = false, retune = false, exhaustive = false, evaluate = false, calibrate = false, clear_rates = false;
  std::string evaluate_only;
  int threads = 0;
};

const char* const op_names[] = {"cumsum", "cumprod", "qlinear-matmul"};

Operator op_of(const std::string& name) {
  return name == "cumsum" ? Operator::cumulative_sum
         : name == "cumprod" ? Operator::cumulative_product
                             : Operator::quantized_linear_matmul;
}

const char* command_of(Operator op) {
  return op == Operator::cumulative_sum ? "cumsum" : op == Operator::cumulative_product ? "cumprod" : "qlinear-matmul";
}

TuneProblem to_problem(Operator op, const ProblemArgs& a) {
  TuneProblem p;
  p.op = op;
  p.shape = a.shape;
  if (op == Operator::quantized_linear_matmul) {
    check_qmm_args(a);
    for (const auto& t : a.types) p.types.push_back(data_type_option("--types", t));
  } else {
    p.types = {data_type_option("--dtype", a.dtype)};
    p.options = scan_options(a);
  }
  return p;
}

std::string problem_text(const TuneProblem& p) {
  std::string shape;
  for (std::size_t i = 0; i < p.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(p.shape[i]);
  std::string out = std::string(command_of(p.op)) + " --shape " + shape;
  if (p.op == Operator::quantized_linear_matmul) {
    std::string types;
    for (std::size_t i = 0; i < p.types.size(); ++i) types += (i ? "," : "") + std::string(name_of(p.types[i]));
    return out + " --types " + types;
  }
  out += " --dtype " + std::string(name_of(p.types[0])) + " --axis " + std::to_string(p.options.axis);
  if (p.options.direction == Direction::decreasing) out += " --direction decreasing";
  if (p.options.exclusive) out += " --exclusive";
  return out;
}

// One line of a shapes file: "OP OPTIONS..." exactly as after `hetkern tune`.
TuneProblem parse_shape_line(const std::string& line, const std::string& where) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  const std::string op = words.front();
  if (op != "cumsum" && op != "cumprod" && op != "qlinear-matmul")
    throw Error(Errc::invalid_file, "tune", where,
                "unknown operator '" + bench::printable(op) + "' (cumsum, cumprod or qlinear-matmul)");
  CLI::App app{"shape"};
  ProblemArgs a;
  add_problem_options(app, a, op != "qlinear-matmul");
  // Extras are kept, to be named in the line's order (CLI11's own message lists them backwards).
  app.allow_extras();
  std::vector<std::string> rest(words.rbegin(), words.rend() - 1);  // CLI11 parses a reversed vector
  try {
    app.parse(rest);
  } catch (const CLI::CallForHelp&) {
    throw Error(Errc::invalid_file, "tune", where, "--help is no option of a shapes line (see hetkern tune --help)");
  } catch (const CLI::ParseError& e) {
    throw Error(Errc::invalid_file, "tune", where, bench::printable(e.what()));
  }
  if (const auto extras = app.remaining(); !extras.empty()) {
    std::string list;
    for (const auto& word : extras) list += (list.empty() ? "" : " ") + word;
    throw Error(Errc::invalid_file, "tune", where, "not expected in a shapes line: " + bench::printable(list));
  }
  // The line's problem validated here, so that its errors name the line.
  try {
    TuneProblem problem = to_problem(op_of(op), a);
    tuning_key(problem);
    return problem;
  } catch (const Error& e) {
    throw Error(e.code(), "tune", where, e.what());
  } catch (const CLI::Error& e) {
    throw Error(Errc::invalid_file, "tune", where, e.what());
  }
}

// A file to read whole; refused by name where it is a directory, which reads as empty.
std::ifstream open_input(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(Errc::invalid_file, "tune", path, "is a directory, not a file");
  std::ifstream in(path);
  if (!in) throw Error(Errc::invalid_file, "tune", path, "cannot be read: " + std::generic_category().message(errno));
  return in;
}

std::vector<TuneProblem> read_shapes_file(const std::string& path) {
  std::ifstream in = open_input(path);
  std::vector<TuneProblem> out;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(parse_shape_line(line, path + ":" + std::to_string(number)));
  }
  if (out.empty()) throw Error(Errc::invalid_file, "tune", path, "lists no shapes");
  return out;
}

std::string db_path(const TuneArgs& args) {
  const std::string p = args.db.empty() ? tuning_db_path() : args.db;
  if (p.empty())
    throw Error(Errc::invalid_file, "tune", "database",
                "no path: set --db, HETKERN_TUNING_DB, XDG_CACHE_HOME or HOME");
  return p;
}

std::string time_text(double ns) {
  char buf[32];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  return buf;
}

// A progress bar redrawn in place on a terminal; plain lines (one per shape) otherwise.
class Progress {
 public:
  Progress() : terminal_(isatty(STDERR_FILENO) != 0) {}

  void begin(std::size_t index, std::size_t total, const std::string& what) {
    prefix_ = "[" + std::to_string(index + 1) + "/" + std::to_string(total) + "] " + what;
  }

  // The shape's measuring starts (a shape kept as tuned ends without it).
  void measuring() {
    if (!terminal_) std::fprintf(stderr, "%s: tuning\n", prefix_.c_str());
  }

  void update(const TuneProgress& p) {
    if (!terminal_) return;
    constexpr int width = 24;
    const int filled = p.planned ? int(width * std::min<std::int64_t>(p.tried, p.planned) / p.planned) : 0;
    std::fprintf(stderr, "\r\033[K%s [%s%s] %lld/%lld best %s", prefix_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, ' ').c_str(), static_cast<long long>(p.tried),
                 static_cast<long long>(p.planned), time_text(p.best_ns).c_str());
  }

  void end(const std::string& outcome) {
    if (terminal_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%s: %s\n", prefix_.c_str(), outcome.c_str());
  }

 private:
  bool terminal_;
  std::string prefix_;
};

struct SummaryRow {
  std::string shape, schedule, time, speedup, tried;
};

void print_summary(const std::vector<SummaryRow>& rows) {
  std::size_t w[4] = {5, 13, 4, 8};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], r.shape.size());
    w[1] = std::max(w[1], r.schedule.size());
    w[2] = std::max(w[2], r.time.size());
    w[3] = std::max(w[3], r.speedup.size());
  }
  std::printf("%-*s  %-*s  %*s  %*s  %s\n", int(w[0]), "shape", int(w[1]), "best schedule", int(w[2]), "time",
              int(w[3]), "vs heuristic", "tried");
  for (const auto& r : rows)
    std::printf("%-*s  %-*s  %*s  %*s  %s\n", int(w[0]), r.shape.c_str(), int(w[1]), r.schedule.c_str(),
                int(w[2]), r.time.c_str(), int(w[3]), r.speedup.c_str(), r.tried.c_str());
}

std::string speedup_text(const TuningRecord& r) {
  if (!(r.default_ns > 0) || !(r.median_ns > 0)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", r.default_ns / r.median_ns);
  return buf;
}

std::string rates_text(const MachineRates& r) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "host->device %.3g GB/s, device->host %.3g GB/s (page-locked %.3g, %.3g), GPU call %s, "
                "on host tensors %s more\n",
                r.to_device_bytes_per_s / 1e9, r.to_host_bytes_per_s / 1e9, r.page_locked_to_device_bytes_per_s / 1e9,
                r.page_locked_to_host_bytes_per_s / 1e9, time_text(r.gpu_call_seconds * 1e9).c_str(),
                time_text(r.host_tensor_call_seconds * 1e9).c_str());
  std::string out = buf;
  for (const auto& [name, rate] : r.strategy_rates) {
    const bool matmul = name.rfind("qmm.", 0) == 0;
    const auto fixed = r.strategy_fixed_seconds.find(name);
    std::snprintf(buf, sizeof buf, "  %-22s %8.3g %s, fixed %s\n", name.c_str(), rate / 1e9,
                  matmul ? "G multiply-adds/s" : "GB/s", fixed == r.strategy_fixed_seconds.end() ? "-" : time_text(fixed->second * 1e9).c_str());
    out += buf;
  }
  const std::size_t devices = std::max(r.device_matmul_speeds.size(), r.device_scan_speeds.size());
  const auto speed = [](const std::vector<double>& speeds, std::size_t d) {
    return d < speeds.size() ? speeds[d] : 0.0;
  };
  for (std::size_t d = 0; d < devices; ++d) {
    std::snprintf(buf, sizeof buf, "  GPU %-18zu speed %.3g at the matmul, %.3g at scans of host tensors\n", d,
                  speed(r.device_matmul_speeds, d), speed(r.device_scan_speeds, d));
    out += buf;
  }
  return out;
}

// `hetkern tune --calibrate`: measures the cost model's rates again and replaces the stored ones.
void calibrate_rates(const TuneArgs& args) {
  const std::string path = db_path(args);
  const auto rates = calibrate(path, true);
  if (!rates) {
    std::printf("no GPU: the cost model is not used here, nothing measured\n");
    return;
  }
  std::printf("machine rates stored in %s:\n%s", path.c_str(), rates_text(*rates).c_str());
}

void clear_rates(const TuneArgs& args) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path(args), ec)) {  // nothing to clear, and no file to make for it
    std::printf("no machine rates stored for this machine\n");
    return;
  }
  TuningDb db(db_path(args), true);
  const bool had = db.clear_rates(machine_fingerprint());
  std::printf("%s\n", had ? "machine rates of this machine cleared" : "no machine rates stored for this machine");
}

void tune_problems(const TuneArgs& args, const std::vector<TuneProblem>& problems) {
  // Every problem is validated before anything is measured or written.
  std::vector<TuningRecord> keys;
  for (const auto& p : problems) keys.push_back(tuning_key(p));
  // The cost model's rates first, when a GPU is present and none are stored: a few seconds.
  calibrate(db_path(args), false);
  TuningDb db(db_path(args), true);
  Progress progress;
  std::vector<SummaryRow> rows;
  // Ctrl-C stops at the next measured candidate: the shapes that finished keep their records and
  // appear in the summary; a second Ctrl-C ends the process at once.
  const bench::InterruptGuard interrupt;
  for (std::size_t i = 0; i < problems.size() && !bench::interrupt_requested(); ++i) {
    const TuneProblem& p = problems[i];
    const std::string what = problem_text(p);
    progress.begin(i, problems.size(), what);
    if (!args.retune) {
      if (auto kept = db.find(keys[i])) {
        progress.end("already tuned, kept (--retune measures again)");
        rows.push_back({what, kept->schedule, time_text(kept->median_ns), speedup_text(*kept), "kept"});
        continue;
      }
    }
    progress.measuring();
    TuneOptions options;
    options.budget_seconds = args.budget;
    options.exhaustive = args.exhaustive;
    options.progress = [&](const TuneProgress& tp) {
      bench::stop_if_interrupted();
      progress.update(tp);
    };
    TuneResult result;
    try {
      result = tune(p, options);
    } catch (const bench::Abandoned&) {
      progress.end("interrupted, not recorded");
      break;
    }
    db.put(result.record);
    char outcome[96];
    std::snprintf(outcome, sizeof outcome, "%s in %.1f s, %lld of %lld candidates", time_text(result.record.median_ns).c_str(),
                  result.seconds, static_cast<long long>(result.record.candidates),
                  static_cast<long long>(result.space_size));
    progress.end(result.record.schedule + ", " + outcome);
    rows.push_back({what, result.record.schedule, time_text(result.record.median_ns), speedup_text(result.record),
                    std::to_string(result.record.candidates) + "/" + std::to_string(result.space_size)});
  }
  print_summary(rows);
  if (bench::interrupt_requested()) {
    std::fflush(stdout);
    std::fprintf(stderr, "interrupted (Ctrl-C): %zu of %zu shapes done, their records kept\n", rows.size(),
                 problems.size());
    throw Interrupted();
  }
}

// The fingerprint's fields ("cpu=...;isa=...;threads=2;...") in order.
std::vector<std::pair<std::string, std::string>> fingerprint_fields(const std::string& fingerprint) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(fingerprint);
  for (std::string field; std::getline(in, field, ';');) {
    const auto eq = field.find('=');
    out.emplace_back(field.substr(0, eq), eq == std::string::npos ? "" : field.substr(eq + 1));
  }
  return out;
}

// Why a listed record is not used here: another machine, or this one with other settings (a
// record tuned with --threads 1 differs from the default only there).
std::string elsewhere_text(const std::string& fingerprint, const std::string& here) {
  const auto theirs = fingerprint_fields(fingerprint), ours = fingerprint_fields(here);
  const auto value = [](const auto& fields, const std::string& key) -> std::string {
    for (const auto& [k, v] : fields)
      if (k == key) return v;
    return "\n";  // no such field: unlike any value
  };
  if (value(theirs, "cpu") != value(ours, "cpu") || value(theirs, "topology") != value(ours, "topology"))
    return "[other machine: " + fingerprint + "]";
  std::string differing;
  for (const auto& [k, v] : theirs)
    if (value(ours, k) != v) differing += (differing.empty() ? "" : ";") + k + "=" + v;
  return "[this machine, other settings: " + differing + "]";
}

void list_records(const TuneArgs& args) {
  const std::string path = db_path(args);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    std::printf("%s: no database there yet (hetkern tune creates it)\n", path.c_str());
    return;
  }
  const TuningDb db(path, false);
  const auto records = db.all();
  const std::string here = machine_fingerprint();
  std::printf("%s: %zu records, schema version %d\nthis machine: %s\n", path.c_str(), records.size(),
              db.schema_version(), here.c_str());
  if (const auto rates = db.find_rates(here)) std::printf("machine rates: %s", rates_text(*rates).c_str());
  std::vector<SummaryRow> rows;
  for (const auto& r : records) {
    std::string shape;
    for (std::size_t i = 0; i < r.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(r.shape[i]);
    std::string what = r.op + " " + r.dtype + "{" + shape + "} " + r.params + " " + r.stride_class;
    if (r.fingerprint != here) what += " " + elsewhere_text(r.fingerprint, here);
    // Imported records can hold any bytes: none of them reaches the terminal as a control sequence.
    rows.push_back({bench::printable(what), bench::printable(r.schedule), time_text(r.median_ns), speedup_text(r),
                    std::to_string(r.candidates)});
  }
  print_summary(rows);
}

// Refuses an export onto the database or one of SQLite's files beside it, which the export would
// replace with JSON: the records it was about to save would be lost.
void refuse_database_files(const std::string& out, const std::string& db) {
  if (out == "-") return;
  namespace fs = std::filesystem;
  std::error_code ec;
  // Absolute first: of a path none of which exists, weakly_canonical keeps the relative form.
  const auto resolved = [&ec](const std::string& p) { return fs::weakly_canonical(fs::absolute(p, ec), ec); };
  const fs::path target = resolved(out);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = db + suffix;
    const bool same = (!ec && target == resolved(file)) || fs::equivalent(out, file, ec);
    if (same)
      throw Error(Errc::invalid_file, "tune", out,
                  std::string("is the tuning database") + (*suffix ? std::string("'s ") + (suffix + 1) + " file" : "") +
                      ", which the export would overwrite: choose another file");
    ec.clear();
  }
}

void export_records(const TuneArgs& args) {
  refuse_database_files(args.export_file, db_path(args));
  const TuningDb db(db_path(args), false);
  const auto records = db.all();
  const std::string json = records_to_json(records);
  write_output(args.export_file, std::as_bytes(std::span(json)), "tune");
  // With the records on standard output, the count goes to stderr.
  std::fprintf(args.export_file == "-" ? stderr : stdout, "exported %zu records to %s\n", records.size(),
               args.export_file.c_str());
}

void import_records(const TuneArgs& args) {
  std::ostringstream text;
  if (args.import_file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in = open_input(args.import_file);
    text << in.rdbuf();
  }
  TuningDb db(db_path(args), true);
  const auto records = hk::import_records(db, text.str());
  const std::string here = machine_fingerprint();
  const auto foreign = std::count_if(records.begin(), records.end(), [&](const auto& r) { return r.fingerprint != here; });
  std::printf("imported %zu records into %s (%lld measured elsewhere: kept, but not used on this machine)\n",
              records.size(), db_path(args).c_str(), static_cast<long long>(foreign));
}

void check_evaluate_only(const TuneArgs& a) {
  if (!a.evaluate_only.empty() && !a.evaluate)
    throw CLI::ValidationError("--evaluate-only narrows --evaluate: give --evaluate too");
}

// How many of tune's modes other than an operator the options ask for.
int modes_of(const TuneArgs& a) {
  return int(!a.shapes_file.empty()) + int(a.list) + int(!a.export_file.empty()) + int(!a.import_file.empty()) +
         int(a.evaluate) + int(a.calibrate) + int(a.clear_rates);
}

}  // namespace

void add_tune(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "measure schedules for shapes and keep the fastest in the tuning database; Ctrl-C "
              "stops at the next candidate, prints the summary of the shapes that finished (their "
              "records are kept) and exits with status 130, a second Ctrl-C at once");
  tune_cmd->require_subcommand(0, 1);
  tune_cmd->add_option("--budget", args->budget,
                       "seconds the search of one shape may take (above 0, at most 86400)")
      ->check(seconds_within(0, 86400, true))
      ->capture_default_str();
  tune_cmd->add_option("--db", args->db,
                       "database file; default $HETKERN_TUNING_DB, else $XDG_CACHE_HOME/hetkern/tuning.sqlite, else "
                       "~/.cache/hetkern/tuning.sqlite");
  tune_cmd->add_option("--shapes", args->shapes_file,
                       "tune every shape of FILE: one per line, 'OP OPTIONS' as on this command line, # comments");
  tune_cmd->add_flag("--retune", args->retune, "measure shapes that already have a record again");
  tune_cmd->add_flag("--exhaustive", args->exhaustive, "measure the whole schedule space (slow)");
  tune_cmd->add_option("--threads", args->threads, "OpenMP threads (part of the record's key); default: every CPU")
      ->check(whole_number_within(1, max_threads));
  tune_cmd->add_flag("--list", args->list, "print the records of the database");
  tune_cmd->add_option("--export", args->export_file, "write every record to FILE as a JSON list (- for standard output)");
  tune_cmd->add_option("--import", args->import_file, "add the records of a JSON list (as --export writes; - for standard input)");
  tune_cmd->add_flag("--calibrate", args->calibrate,
                     "measure this machine's rates for the cost model again (GPU machines, a few seconds)");
  tune_cmd->add_flag("--clear-rates", args->clear_rates, "forget this machine's stored rates");
  tune_cmd->add_flag("--evaluate", args->evaluate,
                     "compare the tuner with exhaustive sweeps on 30 shapes per operator (minutes)");
  tune_cmd->add_option("--evaluate-only", args->evaluate_only, "with --evaluate: only this operator")
      ->check(CLI::IsMember({"cumsum", "cumprod", "qlinear-matmul"}));

  for (const char* name : op_names) {
    auto problem = std::make_shared<ProblemArgs>();
    const Operator op = op_of(name);
    CLI::App* cmd = tune_cmd->add_subcommand(name, "tune one " + std::string(name_of(op)) + " shape");
    cmd->fallthrough();
    add_problem_options(*cmd, *problem, op != Operator::quantized_linear_matmul);
    cmd->callback([args, problem, op] {
      check_evaluate_only(*args);
      if (modes_of(*args) != 0)
        throw CLI::ValidationError("an operator to tune excludes --shapes, --list, --export, --import, --evaluate, "
                                   "--calibrate and --clear-rates: give one of them");
      bench::use_threads(args->threads);
      tune_problems(*args, {to_problem(op, *problem)});
    });
  }
  tune_cmd->callback([args, tune_cmd] {
    if (!tune_cmd->get_subcommands().empty()) return;
    check_evaluate_only(*args);
    if (modes_of(*args) > 1)
      throw CLI::ValidationError("tune takes one of --shapes, --list, --export, --import, --evaluate, --calibrate and "
                                 "--clear-rates at a time: give one");
    if (modes_of(*args) == 0)
      throw CLI::ValidationError("tune needs one of: an operator (cumsum, cumprod, qlinear-matmul), --shapes FILE, "
                                 "--list, --export FILE, --import FILE, --evaluate, --calibrate or --clear-rates");
    if (!args->shapes_file.empty()) {
      const auto problems = read_shapes_file(args->shapes_file);
      bench::use_threads(args->threads);
      tune_problems(*args, problems);
    } else if (args->list) {
      list_records(*args);
    } else if (!args->export_file.empty()) {
      export_records(*args);
    } else if (!args->import_file.empty()) {
      import_records(*args);
    } else if (args->calibrate) {
      calibrate_rates(*args);
    } else if (args->clear_rates) {
      clear_rates(*args);
    } else {
      bench::use_threads(args->threads);
      run_tuner_evaluation(args->budget, args->evaluate_only);
    }
  });
}

}  // namespace hk::cli

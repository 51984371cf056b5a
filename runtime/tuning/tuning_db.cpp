// The SQLite tuning database.
//
// Schema history (schema_version holds the number):
//   v1  records keyed by (op, algorithm_version, dtype, shape, stride_class, params, fingerprint)
//       with the schedule and its median time
//   v2  adds the measurement's spread, repetitions, transfer flag, candidates tried and the
//       heuristic's time, so that `hetkern tune --list` can report the gain
//   v3  adds machine_rates: the cost model's measured rates, one named value per row, keyed by
//       fingerprint (a new rate is a new name, not a new column)
// A writable open migrates older files in one transaction; a file from a newer hetkern is refused.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "hetkern/error.hpp"
#include "hetkern/tuning.hpp"
#include "runtime/tuning/tuning_text.hpp"

namespace hk {
namespace {

constexpr int busy_timeout_ms = 30000;

#define HETKERN_RATES_TABLE \
  "CREATE TABLE machine_rates(fingerprint TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL," \
  " PRIMARY KEY(fingerprint, name));"

const char* const schema_v3 =
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "INSERT INTO schema_version VALUES(3);"
    "CREATE TABLE records("
    " op TEXT NOT NULL, algorithm_version INTEGER NOT NULL, dtype TEXT NOT NULL,"
    " shape TEXT NOT NULL, stride_class TEXT NOT NULL, params TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL, schedule TEXT NOT NULL, median_ns REAL NOT NULL,"
    " spread_ns REAL NOT NULL DEFAULT 0, repetitions INTEGER NOT NULL DEFAULT 0,"
    " transfers INTEGER NOT NULL DEFAULT 0, candidates INTEGER NOT NULL DEFAULT 0,"
    " default_ns REAL NOT NULL DEFAULT 0,"
    " PRIMARY KEY(op, algorithm_version, dtype, shape, stride_class, params, fingerprint));"
    HETKERN_RATES_TABLE;

const char* const migrate_v1_to_v2 =
    "ALTER TABLE records ADD COLUMN spread_ns REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE records ADD COLUMN repetitions INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE records ADD COLUMN transfers INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE records ADD COLUMN candidates INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE records ADD COLUMN default_ns REAL NOT NULL DEFAULT 0;"
    "UPDATE schema_version SET version = 2;";

const char* const migrate_v2_to_v3 = HETKERN_RATES_TABLE "UPDATE schema_version SET version = 3;";

// The rates' names in the table; a strategy's rate is its name after the prefix.
const char* const to_device_name = "to_device_bytes_per_s";
const char* const to_host_name = "to_host_bytes_per_s";
const char* const page_locked_to_device_name = "page_locked_to_device_bytes_per_s";
const char* const page_locked_to_host_name = "page_locked_to_host_bytes_per_s";
const char* const gpu_call_name = "gpu_call_seconds";
const char* const host_tensor_call_name = "host_tensor_call_seconds";
const std::string strategy_prefix = "strategy:";
const std::string fixed_prefix = "fixed:";
// A device's speed is its OpenMP device number after the prefix.
const std::string matmul_speed_prefix = "device_matmul_speed:";
const std::string scan_speed_prefix = "device_scan_speed:";

// Sets speeds[device] where `name` is `prefix` followed by a device number.
void read_device_speed(const std::string& name, const std::string& prefix, double value, std::vector<double>& speeds) {
  if (name.rfind(prefix, 0) != 0) return;
  const std::string number = name.substr(prefix.size());
  if (number.empty() || number.size() > 4 ||
      !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return;
  const std::size_t device = std::size_t(std::stoi(number));
  if (speeds.size() <= device) speeds.resize(device + 1, 0.0);
  speeds[device] = value;
}

const char* const record_columns =
    "op, algorithm_version, dtype, shape, stride_class, params, fingerprint, schedule, median_ns,"
    " spread_ns, repetitions, transfers, candidates, default_ns";

const char* const class_condition =
    "op = ?1 AND algorithm_version = ?2 AND dtype = ?3 AND stride_class = ?5 AND params = ?6 AND "
    "fingerprint = ?7";

// A URI that opens `path` read-only as a file nobody changes, its reserved characters escaped.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char digits[] = "0123456789ABCDEF";
      uri += '%';
      uri += digits[(static_cast<unsigned char>(c) >> 4) & 0xf];
      uri += digits[static_cast<unsigned char>(c) & 0xf];
    } else {
      uri += c;
    }
  }
  return uri + "?mode=ro&immutable=1";
}

}  // namespace

struct TuningDb::Impl {
  std::string path;
  sqlite3* db = nullptr;  // null: the file does not exist (read-only open), no records
  int version = 0;

  [[noreturn]] void fail(const std::string& what) const {
    const std::string reason = db ? sqlite3_errmsg(db) : "cannot allocate a connection";
    throw Error(Errc::invalid_file, "tuning database", path, what + ": " + reason);
  }

  void exec(const char* sql, const char* what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
  }

  // Switching to write-ahead logging needs the file to itself, and SQLite answers SQLITE_BUSY at
  // once, without calling the busy handler, while another process opens the same file (two
  // tuners creating a new database together): retry for as long as the busy timeout allows.
  void switch_to_wal() {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
    for (;;) {
      const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) return;
      if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > give_up)
        fail("cannot switch to write-ahead logging");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  // A prepared statement, finalized on scope exit.
  struct Statement {
    sqlite3_stmt* s = nullptr;
    ~Statement() { sqlite3_finalize(s); }
  };

  void prepare(Statement& st, const std::string& sql) const {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK) fail("cannot read");
  }

  void bind_key(sqlite3_stmt* s, const TuningRecord& r) const {
    const std::string shape = detail::shape_to_text(r.shape);
    sqlite3_bind_text(s, 1, r.op.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, r.algorithm_version);
    sqlite3_bind_text(s, 3, r.dtype.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 4, shape.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 5, r.stride_class.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 6, r.params.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 7, r.fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  }

  std::vector<TuningRecord> rows(sqlite3_stmt* s) const {
    std::vector<TuningRecord> out;
    for (;;) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) fail("cannot read");
      auto text = [&](int i) {
        const unsigned char* t = sqlite3_column_text(s, i);
        return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
      };
      TuningRecord r;
      r.op = text(0);
      r.algorithm_version = sqlite3_column_int(s, 1);
      r.dtype = text(2);
      const auto shape = detail::shape_from_text(text(3));
      if (!shape) throw Error(Errc::invalid_file, "tuning database", path, "a record's shape '" + text(3) + "' is malformed");
      r.shape = *shape;
      r.stride_class = text(4);
      r.params = text(5);
      r.fingerprint = text(6);
      r.schedule = text(7);
      r.median_ns = sqlite3_column_double(s, 8);
      r.spread_ns = sqlite3_column_double(s, 9);
      r.repetitions = sqlite3_column_int64(s, 10);
      r.transfers = sqlite3_column_int(s, 11) != 0;
      r.candidates = sqlite3_column_int64(s, 12);
      r.default_ns = sqlite3_column_double(s, 13);
      out.push_back(std::move(r));
    }
    return out;
  }

  // The version the file holds: 0 for a new empty file. Reading it is also the first access,
  // where a file that is not a database is found out, and a database of something else, which
  // is left as it is.
  // Both counts come from one statement, so from one snapshot: read apart, another process's
  // schema could be committed between them, and a new file read as a database of something else.
  int read_version() {
    Statement st;
    prepare(st, "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'), "
                "(SELECT count(*) FROM sqlite_master)");
    if (sqlite3_step(st.s) != SQLITE_ROW) fail("cannot read");
    if (sqlite3_column_int64(st.s, 0) == 0) {
      if (sqlite3_column_int64(st.s, 1) > 0)
        throw Error(Errc::invalid_file, "tuning database", path,
                    "is an SQLite database of something else (no schema_version table): not a hetkern tuning database");
      return 0;
    }
    Statement v;
    prepare(v, "SELECT version FROM schema_version");
    if (sqlite3_step(v.s) != SQLITE_ROW)
      throw Error(Errc::invalid_file, "tuning database", path, "the schema_version table is empty");
    return sqlite3_column_int(v.s, 0);
  }

  void check_version() const {
    if (version > current_schema_version)
      throw Error(Errc::invalid_file, "tuning database", path,
                  "schema version " + std::to_string(version) + " was written by a newer hetkern (this one reads up to " +
                      std::to_string(current_schema_version) + ")");
  }

  // Creates or migrates the schema inside one write transaction, so that processes opening the
  // same new file at once see either nothing or the whole schema.
  void prepare_schema() {
    exec("BEGIN IMMEDIATE", "cannot start a transaction");
    try {
      version = read_version();
      check_version();
      if (version == 0) {
        exec(schema_v3, "cannot create the schema");
      } else {
        if (version == 1) exec(migrate_v1_to_v2, "cannot migrate schema version 1 to 2");
        if (version <= 2) exec(migrate_v2_to_v3, "cannot migrate schema version 2 to 3");
      }
      exec("COMMIT", "cannot commit");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    version = current_schema_version;
  }

  void open(bool writable) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw Error(Errc::invalid_file, "tuning database", path, "is a directory, not a database file");
    const bool exists = std::filesystem::exists(path, ec);
    if (!writable && !exists) return;
    const auto dir = std::filesystem::path(path).parent_path();
    if (writable && !exists) {
      if (!dir.empty()) std::filesystem::create_directories(dir, ec);
      if (ec)
        throw Error(Errc::invalid_file, "tuning database", path,
                    "cannot create directory " + dir.string() + ": " + ec.message());
    }
    // A reader migrates an old file when it may write it; otherwise it reads only current ones.
    const bool write_access = writable || access(path.c_str(), W_OK) == 0;
    const int flags = write_access ? (SQLITE_OPEN_READWRITE | (writable ? SQLITE_OPEN_CREATE : 0))
                                   : SQLITE_OPEN_READONLY;
    // Reading a write-ahead-logged file needs its shared-memory file beside it, which a directory
    // the process may not write cannot take: there nobody of this user writes the file either, and
    // SQLite reads it as immutable.
    const bool immutable = !write_access && access(dir.empty() ? "." : dir.c_str(), W_OK) != 0;
    const std::string name = immutable ? immutable_uri(path) : path;
    if (sqlite3_open_v2(name.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX | (immutable ? SQLITE_OPEN_URI : 0), nullptr) !=
        SQLITE_OK)
      fail("cannot open");
    // SQLite opens a file it may not write read-only without a word: say so before a tuner
    // measures for an hour and only then finds it cannot keep the results.
    if (writable && sqlite3_db_readonly(db, "main") == 1)
      throw Error(Errc::invalid_file, "tuning database", path, "cannot write: the file is read-only for this user");
    sqlite3_busy_timeout(db, busy_timeout_ms);
    // A reader of a current file takes no write lock, and nobody writes a file of something else.
    version = read_version();
    check_version();
    if (!writable && version == current_schema_version) return;
    if (write_access) {
      switch_to_wal();
      exec("PRAGMA synchronous=NORMAL", "cannot set the sync mode");
      prepare_schema();
    } else {
      if (version != current_schema_version)
        throw Error(Errc::invalid_file, "tuning database", path,
                    "schema version " + std::to_string(version) +
                        " needs migrating, which needs write access");
    }
  }
};

TuningDb::TuningDb(const std::string& path, bool writable) : impl_(new Impl) {
  impl_->path = path;
  try {
    impl_->open(writable);
  } catch (...) {
    sqlite3_close_v2(impl_->db);
    delete impl_;
    throw;
  }
}

TuningDb::~TuningDb() {
  sqlite3_close_v2(impl_->db);
  delete impl_;
}

int TuningDb::schema_version() const { return impl_->version; }

void TuningDb::put_all(const std::vector<TuningRecord>& records) {
  if (!impl_->db)
    throw Error(Errc::invalid_file, "tuning database", impl_->path, "opened read-only, cannot write");
  impl_->exec("BEGIN IMMEDIATE", "cannot start a transaction");
  try {
    for (const auto& r : records) put(r);
    impl_->exec("COMMIT", "cannot commit");
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void TuningDb::put(const TuningRecord& r) {
  if (!impl_->db)
    throw Error(Errc::invalid_file, "tuning database", impl_->path, "opened read-only, cannot write");
  Impl::Statement st;
  impl_->prepare(st, std::string("INSERT OR REPLACE INTO records(") + record_columns +
                         ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  impl_->bind_key(st.s, r);
  sqlite3_bind_text(st.s, 8, r.schedule.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.s, 9, r.median_ns);
  sqlite3_bind_double(st.s, 10, r.spread_ns);
  sqlite3_bind_int64(st.s, 11, r.repetitions);
  sqlite3_bind_int(st.s, 12, r.transfers ? 1 : 0);
  sqlite3_bind_int64(st.s, 13, r.candidates);
  sqlite3_bind_double(st.s, 14, r.default_ns);
  // Outside put_all a single statement is its own transaction: all of the record or none of it.
  if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail("cannot write a record");
}

std::optional<TuningRecord> TuningDb::find(const TuningRecord& key) const {
  if (!impl_->db) return std::nullopt;
  Impl::Statement st;
  impl_->prepare(st, std::string("SELECT ") + record_columns + " FROM records WHERE " + class_condition +
                         " AND shape = ?4");
  impl_->bind_key(st.s, key);
  auto rows = impl_->rows(st.s);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());
}

std::vector<TuningRecord> TuningDb::same_class(const TuningRecord& key) const {
  if (!impl_->db) return {};
  Impl::Statement st;
  // ?4 (the shape) is bound by bind_key but not used: parameters are numbered, so that is legal.
  impl_->prepare(st, std::string("SELECT ") + record_columns + " FROM records WHERE " + class_condition);
  impl_->bind_key(st.s, key);
  return impl_->rows(st.s);
}

std::vector<TuningRecord> TuningDb::all() const {
  if (!impl_->db) return {};
  Impl::Statement st;
  impl_->prepare(st, std::string("SELECT ") + record_columns +
                         " FROM records ORDER BY op, algorithm_version, dtype, params, stride_class, shape, fingerprint");
  return impl_->rows(st.s);
}

std::optional<MachineRates> TuningDb::find_rates(const std::string& fingerprint) const {
  if (!impl_->db) return std::nullopt;
  Impl::Statement st;
  impl_->prepare(st, "SELECT name, value FROM machine_rates WHERE fingerprint = ?1");
  sqlite3_bind_text(st.s, 1, fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  MachineRates r;
  bool any = false;
  for (;;) {
    const int rc = sqlite3_step(st.s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) impl_->fail("cannot read");
    const unsigned char* t = sqlite3_column_text(st.s, 0);
    const std::string name = t ? reinterpret_cast<const char*>(t) : "";
    const double value = sqlite3_column_double(st.s, 1);
    any = true;
    if (name == to_device_name) r.to_device_bytes_per_s = value;
    else if (name == to_host_name) r.to_host_bytes_per_s = value;
    else if (name == page_locked_to_device_name) r.page_locked_to_device_bytes_per_s = value;
    else if (name == page_locked_to_host_name) r.page_locked_to_host_bytes_per_s = value;
    else if (name == gpu_call_name) r.gpu_call_seconds = value;
    else if (name == host_tensor_call_name) r.host_tensor_call_seconds = value;
    else if (name.rfind(strategy_prefix, 0) == 0) r.strategy_rates[name.substr(strategy_prefix.size())] = value;
    else if (name.rfind(fixed_prefix, 0) == 0) r.strategy_fixed_seconds[name.substr(fixed_prefix.size())] = value;
    else {
      read_device_speed(name, matmul_speed_prefix, value, r.device_matmul_speeds);
      read_device_speed(name, scan_speed_prefix, value, r.device_scan_speeds);
    }
    // Other names come from a later hetkern of the same schema: not ours to read.
  }
  if (!any) return std::nullopt;
  return r;
}

void TuningDb::put_rates(const std::string& fingerprint, const MachineRates& rates) {
  if (!impl_->db)
    throw Error(Errc::invalid_file, "tuning database", impl_->path, "opened read-only, cannot write");
  impl_->exec("BEGIN IMMEDIATE", "cannot start a transaction");
  try {
    clear_rates(fingerprint);
    auto put_one = [&](const std::string& name, double value) {
      Impl::Statement st;
      impl_->prepare(st, "INSERT INTO machine_rates(fingerprint, name, value) VALUES(?1, ?2, ?3)");
      sqlite3_bind_text(st.s, 1, fingerprint.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st.s, 2, name.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_double(st.s, 3, value);
      if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail("cannot write the machine rates");
    };
    put_one(to_device_name, rates.to_device_bytes_per_s);
    put_one(to_host_name, rates.to_host_bytes_per_s);
    put_one(page_locked_to_device_name, rates.page_locked_to_device_bytes_per_s);
    put_one(page_locked_to_host_name, rates.page_locked_to_host_bytes_per_s);
    put_one(gpu_call_name, rates.gpu_call_seconds);
    put_one(host_tensor_call_name, rates.host_tensor_call_seconds);
    for (const auto& [name, value] : rates.strategy_rates) put_one(strategy_prefix + name, value);
    for (const auto& [name, value] : rates.strategy_fixed_seconds) put_one(fixed_prefix + name, value);
    for (std::size_t d = 0; d < rates.device_matmul_speeds.size(); ++d)
      put_one(matmul_speed_prefix + std::to_string(d), rates.device_matmul_speeds[d]);
    for (std::size_t d = 0; d < rates.device_scan_speeds.size(); ++d)
      put_one(scan_speed_prefix + std::to_string(d), rates.device_scan_speeds[d]);
    impl_->exec("COMMIT", "cannot commit");
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

bool TuningDb::clear_rates(const std::string& fingerprint) {
  if (!impl_->db)
    throw Error(Errc::invalid_file, "tuning database", impl_->path, "opened read-only, cannot write");
  Impl::Statement st;
  impl_->prepare(st, "DELETE FROM machine_rates WHERE fingerprint = ?1");
  sqlite3_bind_text(st.s, 1, fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail("cannot write the machine rates");
  return sqlite3_changes(impl_->db) > 0;
}

}  // namespace hk

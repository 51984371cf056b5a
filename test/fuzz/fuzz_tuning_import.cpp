// `hetkern tune --import` (hk::import_records) on arbitrary bytes, into a copy of a database that
// already holds records: the import either succeeds, and the database then holds exactly the old
// records with the imported ones added or replacing those of the same key (the last of a key
// wins), or it throws hk::Error and the database is byte for byte what it was. Whatever it holds
// afterwards must survive an export and a re-parse unchanged.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hetkern/hetkern.hpp"
#include "test/fuzz/fuzz_support.hpp"

namespace {

namespace fs = std::filesystem;
using hk::TuningRecord;
using hk::fuzz::require;

using Key = std::tuple<std::string, int, std::string, std::vector<std::int64_t>, std::string, std::string, std::string>;

Key key_of(const TuningRecord& r) {
  return {r.op, r.algorithm_version, r.dtype, r.shape, r.stride_class, r.params, r.fingerprint};
}

bool same(const TuningRecord& a, const TuningRecord& b) {
  return key_of(a) == key_of(b) && a.schedule == b.schedule && a.median_ns == b.median_ns &&
         a.spread_ns == b.spread_ns && a.repetitions == b.repetitions && a.transfers == b.transfers &&
         a.candidates == b.candidates && a.default_ns == b.default_ns;
}

bool same(const std::vector<TuningRecord>& a, const std::vector<TuningRecord>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

TuningRecord record(const char* op, const char* dtype, std::vector<std::int64_t> shape, const char* params,
                    const char* schedule, double ns) {
  TuningRecord r;
  r.op = op;
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.stride_class = "packed";
  r.params = params;
  r.fingerprint = "cpu=fuzz;isa=avx2;threads=2";
  r.schedule = schedule;
  r.median_ns = ns;
  r.spread_ns = ns / 10;
  r.repetitions = 9;
  r.candidates = 40;
  r.default_ns = ns * 1.5;
  return r;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A scratch directory holding the database every input starts from, removed at exit.
struct Fixture {
  fs::path dir, base, work;
  std::vector<TuningRecord> base_records;
  std::string base_bytes;

  Fixture() {
    std::string tmpl = (fs::temp_directory_path() / "hetkern-fuzz-import-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) hk::fuzz::fail("cannot create a scratch directory");
    dir = tmpl;
    base = dir / "base.sqlite";
    work = dir / "work.sqlite";
    {
      hk::TuningDb db(base.string(), true);
      // The first shares its key with the seed corpus's cumsum record, so imports also replace.
      db.put_all({record("cumulative_sum", "float32", {64, 64}, "axis=1,direction=increasing,exclusive=0",
                         "scan.tiled(tile=64)", 5000),
                  record("quantized_linear_matmul", "uint8,int8,uint8", {33, 41, 70}, "batch=1",
                         "qmm.tiled(mc=16, nc=32, kc=64)", 12000)});
      base_records = db.all();
    }
    base_bytes = file_bytes(base);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Fixture fx;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The last connection's close checkpoints the log, so the file alone is the whole database.
  fs::copy_file(fx.base, fx.work, fs::copy_options::overwrite_existing);

  std::vector<TuningRecord> imported;
  bool refused = false;
  std::vector<TuningRecord> after;
  {
    hk::TuningDb db(fx.work.string(), true);
    try {
      imported = hk::import_records(db, text);
    } catch (const hk::Error&) {
      refused = true;
    }
    after = db.all();
  }

  if (refused) {
    require(same(after, fx.base_records), "a refused import changed the database's records");
    require(file_bytes(fx.work) == fx.base_bytes, "a refused import changed the database file");
  } else {
    std::map<Key, TuningRecord> expected;
    for (const auto& r : fx.base_records) expected[key_of(r)] = r;
    for (const auto& r : imported) expected[key_of(r)] = r;
    require(after.size() == expected.size(), "the database does not hold the old and the imported records");
    for (const auto& r : after) {
      const auto it = expected.find(key_of(r));
      require(it != expected.end() && same(it->second, r), "a record was stored differently than imported");
    }
  }
  require(same(hk::records_from_json(hk::records_to_json(after)), after),
          "the database's records do not survive an export and an import");
  return 0;
}

// The cases of a benchmark sweep: the presets and SPEC files (sweep_spec.hpp).
#include "bench/sweep_spec.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "bench/printable.hpp"
#include "hetkern/error.hpp"

namespace hk::bench {
namespace {

// Scans: rows of a matrix along the contiguous axis and across it, and one long line, at sizes
// from cache-resident to far past the last-level cache (the CPU-against-GPU plot's size axis).
constexpr std::string_view scans_spec = R"(# cumulative sums and products, float32 unless named
cumsum 65536 float32 axis=0
cumsum 1048576 float32 axis=0
cumsum 16777216 float32 axis=0
cumsum 67108864 float32 axis=0
cumsum 4096,4096 float32 axis=1
cumsum 4096,4096 float32 axis=0
cumsum 16,1048576 float32 axis=1
cumsum 4096,4096 float16 axis=1
cumsum 4096,4096 int64 axis=1
cumprod 4096,4096 float32 axis=1
cumsum 4096,4096 float32 axis=1 direction=decreasing exclusive
)";

// Quantized matrix multiplication: a batch of vectors, square layers and a tall activation.
constexpr std::string_view qmm_spec = R"(# M,N,K; A, B and output types
qlinear-matmul 16,4096,4096 u8,s8,u8
qlinear-matmul 256,1024,1024 u8,s8,u8
qlinear-matmul 1024,1024,1024 u8,s8,u8
qlinear-matmul 4096,1024,1024 u8,s8,u8
qlinear-matmul 1024,1024,1024 s8,s8,s8
)";

// Seconds on two cores: a size series for the scans and two matrix products.
constexpr std::string_view small_spec = R"(# a quick look: scans at three sizes and two axes, two matrix products
cumsum 65536 float32 axis=0
cumsum 1048576 float32 axis=0
cumsum 4194304 float32 axis=0
cumsum 1024,1024 float32 axis=1
cumsum 1024,1024 float32 axis=0
cumprod 1024,1024 float32 axis=1
qlinear-matmul 64,512,512 u8,s8,u8
qlinear-matmul 256,1024,1024 u8,s8,u8
)";

// `why` quotes the file's words: made printable, as tune's shapes files are.
[[noreturn]] void fail(const std::string& source, int line, const std::string& why) {
  throw Error(Errc::invalid_parameter, "sweep", source + ":" + std::to_string(line), printable(why));
}

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<std::int64_t> integer(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::vector<std::int64_t> integers(const std::string& text, const std::string& what,
                                   const std::string& source, int line) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const auto v = integer(std::string_view(text).substr(start, comma - start));
    if (!v) fail(source, line, what + " must be integers separated by commas, got '" + text + "'");
    out.push_back(*v);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

DataType data_type(std::string_view text, const std::string& source, int line) {
  const auto t = parse_data_type(text);
  if (!t) fail(source, line, "unknown data type '" + std::string(text) + "'");
  return *t;
}

void parse_scan_options(SweepCase& c, const std::vector<std::string>& w, const std::string& source) {
  bool have_axis = false;
  std::set<std::string> seen;
  for (std::size_t i = 3; i < w.size(); ++i) {
    const std::string& opt = w[i];
    const std::size_t eq = opt.find('=');
    const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (!seen.insert(key).second) fail(source, c.line, "scan option '" + key + "' given twice");
    if (key == "axis" && eq != std::string::npos) {
      const auto v = integer(value);
      const auto rank = std::int64_t(c.scan.shape.size());
      if (!v || *v < -rank || *v >= rank)
        fail(source, c.line, "axis must be an integer in [-rank, rank), got '" + value + "'");
      c.scan.options.axis = int(*v < 0 ? *v + rank : *v);
      have_axis = true;
    } else if (key == "direction" && (value == "increasing" || value == "decreasing")) {
      c.scan.options.direction = value == "decreasing" ? Direction::decreasing : Direction::increasing;
    } else if (opt == "exclusive") {
      c.scan.options.exclusive = true;
    } else {
      fail(source, c.line,
           "unknown scan option '" + opt +
               "' (options: axis=N, direction=increasing|decreasing, exclusive)");
    }
  }
  if (!have_axis) fail(source, c.line, "a scan needs axis=N");
}

void parse_qmm(SweepCase& c, const std::vector<std::string>& w, const std::string& source) {
  c.is_qmm = true;
  const auto shape = integers(w[1], "M,N,K", source, c.line);
  if (shape.size() != 3) fail(source, c.line, "qlinear-matmul's shape is M,N,K, got '" + w[1] + "'");
  c.qmm.m = shape[0];
  c.qmm.n = shape[1];
  c.qmm.k = shape[2];
  std::vector<std::string> types;
  std::size_t start = 0;
  for (std::size_t comma; (comma = w[2].find(',', start)) != std::string::npos; start = comma + 1)
    types.push_back(w[2].substr(start, comma - start));
  types.push_back(w[2].substr(start));
  if (types.size() != 3) fail(source, c.line, "qlinear-matmul's types are A,B,OUTPUT, got '" + w[2] + "'");
  c.qmm.a_type = data_type(types[0], source, c.line);
  c.qmm.b_type = data_type(types[1], source, c.line);
  c.qmm.out_type = data_type(types[2], source, c.line);
  for (const DataType t : {c.qmm.a_type, c.qmm.b_type, c.qmm.out_type})
    if (t != DataType::uint8 && t != DataType::int8)
      fail(source, c.line, "qlinear-matmul's types are each u8 or s8, got '" + w[2] + "'");
  try {
    checked_qmm_case(c.qmm);
  } catch (const Error& e) {
    fail(source, c.line, std::string(e.what()) + ", got '" + w[1] + "'");
  }
  bool layout_given = false;
  for (std::size_t i = 3; i < w.size(); ++i) {
    if (w[i].rfind("b_layout=", 0) == 0) {
      if (layout_given) fail(source, c.line, "b_layout given twice");
      layout_given = true;
      const std::string layout = w[i].substr(9);
      if (layout != "rows" && layout != "columns")
        fail(source, c.line, "b_layout is rows or columns, got '" + layout + "'");
      c.qmm.b_layout = layout == "columns" ? BLayout::columns : BLayout::rows;
      continue;
    }
    if (w[i].rfind("b_range=", 0) != 0)
      fail(source, c.line,
           "unknown qlinear-matmul option '" + w[i] + "' (options: b_range=LO,HI, b_layout=rows|columns)");
    if (c.qmm.b_range) fail(source, c.line, "b_range given twice");
    const auto range = integers(w[i].substr(8), "b_range", source, c.line);
    if (range.size() != 2) fail(source, c.line, "b_range is LO,HI, got '" + w[i].substr(8) + "'");
    // Beyond int, the narrowing could land inside B's range.
    constexpr std::int64_t widest = std::numeric_limits<int>::max();
    const auto lo = std::clamp(range[0], -widest, widest), hi = std::clamp(range[1], -widest, widest);
    c.qmm.b_range = std::pair(int(lo), int(hi));
    try {
      checked_b_range(c.qmm);
    } catch (const Error& e) {
      fail(source, c.line, e.what());
    }
  }
}

}  // namespace

std::vector<std::string> sweep_presets() { return {"scans", "qmm", "small", "all"}; }

std::optional<std::string> preset_spec(std::string_view name) {
  if (name == "scans") return std::string(scans_spec);
  if (name == "qmm") return std::string(qmm_spec);
  if (name == "small") return std::string(small_spec);
  if (name == "all") return std::string(scans_spec) + std::string(qmm_spec);
  return std::nullopt;
}

std::vector<SweepCase> parse_sweep_spec(std::string_view text, const std::string& source) {
  std::vector<SweepCase> cases;
  int line_number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    line = line.substr(0, line.find('#'));
    const auto w = words(line);
    if (w.empty()) continue;
    SweepCase c;
    c.line = line_number;
    for (const auto& word : w) c.text += (c.text.empty() ? "" : " ") + word;
    if (w.size() < 3) fail(source, c.line, "a case is OP SHAPE DTYPE [OPTIONS], got '" + c.text + "'");
    if (w[0] == "qlinear-matmul") {
      parse_qmm(c, w, source);
    } else if (w[0] == "cumsum" || w[0] == "cumprod") {
      c.scan.op = w[0] == "cumprod" ? Operator::cumulative_product : Operator::cumulative_sum;
      c.scan.shape = integers(w[1], "the shape's sizes", source, c.line);
      if (c.scan.shape.size() > std::size_t(max_rank))
        fail(source, c.line, "at most " + std::to_string(max_rank) + " sizes, got '" + w[1] + "'");
      c.scan.dtype = data_type(w[2], source, c.line);
      std::int64_t bytes = std::int64_t(size_of(c.scan.dtype));
      for (const std::int64_t s : c.scan.shape)
        if (s <= 0 || __builtin_mul_overflow(bytes, s, &bytes))
          fail(source, c.line, "every size must be positive and the tensor must fit in 63 bits of bytes, got '" + w[1] + "'");
      if (c.scan.dtype == DataType::int8 || c.scan.dtype == DataType::uint8)
        fail(source, c.line, "scans take float16, float32, float64, bfloat16, int32, uint32, int64 or uint64, got '" + w[2] + "'");
      parse_scan_options(c, w, source);
    } else {
      fail(source, c.line, "unknown operator '" + w[0] + "' (cumsum, cumprod or qlinear-matmul)");
    }
    cases.push_back(std::move(c));
  }
  if (cases.empty())
    throw Error(Errc::invalid_parameter, "sweep", source, "no case in it (one case per line: OP SHAPE DTYPE [OPTIONS])");
  return cases;
}

std::vector<SweepCase> load_sweep_spec(const std::string& spec) {
  if (const auto preset = preset_spec(spec)) return parse_sweep_spec(*preset, spec);
  std::error_code ec;
  if (std::filesystem::is_directory(spec, ec))
    throw Error(Errc::invalid_file, "sweep", spec, "is a directory, not a preset or a SPEC file");
  std::ifstream file(spec, std::ios::binary);
  if (!file)
    throw Error(Errc::invalid_file, "sweep", spec,
                "neither a preset (scans, qmm, small, all) nor a readable file");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw Error(Errc::invalid_file, "sweep", spec, "read error");
  return parse_sweep_spec(text.str(), spec);
}

}  // namespace hk::bench

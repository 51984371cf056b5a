// Shape text and the JSON export/import of tuning records.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <map>
#include <variant>

#include "hetkern/error.hpp"
#include "hetkern/schedule.hpp"
#include "hetkern/tuning.hpp"
#include "runtime/tuning/json_text.hpp"
#include "runtime/tuning/tuning_text.hpp"

namespace hk {
namespace detail {

std::string shape_to_text(const std::vector<std::int64_t>& shape) {
  std::string t;
  for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? "," : "") + std::to_string(shape[i]);
  return t;
}

std::optional<std::vector<std::int64_t>> shape_from_text(const std::string& text) {
  std::vector<std::int64_t> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    std::int64_t v = 0;
    const auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v <= 0) return std::nullopt;
    out.push_back(v);
    p = next;
    if (p < end && *p++ != ',') return std::nullopt;
    if (p == end && text.back() == ',') return std::nullopt;
  }
  if (out.empty() || out.size() > 8) return std::nullopt;
  return out;
}

}  // namespace detail

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The subset of JSON the export writes: a list of objects whose values are strings, numbers,
// booleans or lists of integers.
using Value = std::variant<std::string, double, bool, std::vector<std::int64_t>>;
using Object = std::map<std::string, Value>;

// Integers beyond 2^53 do not survive the trip through a double.
constexpr std::int64_t max_exact_integer = std::int64_t(1) << 53;

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::vector<Object> list() {
    std::vector<Object> out;
    expect('[');
    if (peek() == ']') {
      ++i_;
    } else {
      for (;;) {
        out.push_back(object());
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        break;
      }
    }
    if (peek() != '\0') fail("text after the list");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Errc::invalid_file, "tuning records", "json",
                what + " at offset " + std::to_string(i_));
  }
  char peek() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unterminated string");
        const char e = s_[i_++];
        switch (e) {
          case '"': case '\\': case '/': c = e; break;
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (i_ + 4 > s_.size()) fail("short \\u escape");
            unsigned v = 0;
            const auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + i_ + 4, v, 16);
            if (ec != std::errc() || p != s_.data() + i_ + 4 || v > 0x7f) fail("unsupported \\u escape");
            i_ += 4;
            c = char(v);
            break;
          }
          default: fail("unknown escape");
        }
      }
      // SQLite keeps text up to its first NUL: a record holding one would be stored changed.
      if (c == '\0') fail("NUL character in a string");
      out += c;
    }
    expect('"');
    return out;
  }
  double num() {
    peek();
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || std::strchr("+-.eE", s_[i_]))) ++i_;
    double v = 0;
    const auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + i_, v);
    if (ec != std::errc() || p != s_.data() + i_ || !std::isfinite(v)) fail("malformed number");
    return v;
  }
  Value value() {
    const char c = peek();
    if (c == '"') return string();
    if (c == '[') {
      ++i_;
      std::vector<std::int64_t> out;
      if (peek() == ']') { ++i_; return out; }
      for (;;) {
        const double v = num();
        if (v != std::floor(v) || std::fabs(v) > double(max_exact_integer)) fail("list element is not an integer");
        out.push_back(std::int64_t(v));
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return out;
      }
    }
    if (s_.compare(i_, 4, "true") == 0) { i_ += 4; return true; }
    if (s_.compare(i_, 5, "false") == 0) { i_ += 5; return false; }
    return num();
  }
  Object object() {
    Object out;
    expect('{');
    if (peek() == '}') { ++i_; return out; }
    for (;;) {
      std::string key = string();
      expect(':');
      out[key] = value();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      return out;
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

template <class T> const T& field(const Object& o, const char* key, std::size_t index) {
  const auto it = o.find(key);
  const std::string where = "record " + std::to_string(index);
  if (it == o.end()) throw Error(Errc::invalid_file, "tuning records", where, std::string("missing field '") + key + "'");
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw Error(Errc::invalid_file, "tuning records", where, std::string("field '") + key + "' has the wrong type");
  return *v;
}

template <class T> T optional_field(const Object& o, const char* key, std::size_t index, T fallback) {
  return o.count(key) ? field<T>(o, key, index) : fallback;
}

// A number field that must be a whole number in [lo, hi] (converting any other double to an
// integer type would be undefined behaviour).
std::int64_t integer_field(const Object& o, const char* key, std::size_t index, std::int64_t fallback,
                           std::int64_t lo, std::int64_t hi) {
  if (!o.count(key)) return fallback;
  const double v = field<double>(o, key, index);
  if (!(v == std::floor(v) && v >= double(lo) && v <= double(hi)))
    throw Error(Errc::invalid_file, "tuning records", "record " + std::to_string(index),
                std::string("field '") + key + "' must be a whole number from " + std::to_string(lo) + " to " +
                    std::to_string(hi));
  return std::int64_t(v);
}

// A record no call can ever look up is refused: its operator, its types (one for a scan; a, b
// and the output, int8 or uint8, for the matmul) and its schedule's strategy must be the
// operator's.
void check_lookup_fields(const TuningRecord& r, std::size_t index) {
  const auto refuse = [&](const std::string& rule) {
    throw Error(Errc::invalid_file, "tuning records", "record " + std::to_string(index), rule);
  };
  const bool matmul = r.op == "quantized_linear_matmul";
  if (!matmul && r.op != "cumulative_sum" && r.op != "cumulative_product")
    refuse("field 'op': '" + r.op + "' is none of cumulative_sum, cumulative_product, quantized_linear_matmul");
  std::vector<std::string> types;
  for (std::size_t start = 0;;) {
    const std::size_t comma = r.dtype.find(',', start);
    types.push_back(r.dtype.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  bool types_ok = types.size() == (matmul ? 3u : 1u);
  for (const std::string& t : types) {
    const auto type = parse_data_type(t);
    types_ok = types_ok && type && (!matmul || *type == DataType::int8 || *type == DataType::uint8);
  }
  if (!types_ok)
    refuse("field 'dtype': '" + r.dtype + "' is not " +
           (matmul ? std::string("three of int8 and uint8 (a, b, output), comma-separated") : "one element type"));
  const std::string strategy = Schedule::parse(r.schedule).strategy();
  const auto offered = strategies(matmul ? Operator::quantized_linear_matmul : Operator::cumulative_sum);
  if (std::none_of(offered.begin(), offered.end(), [&](const StrategyInfo& s) { return s.name == strategy; }))
    refuse("field 'schedule': " + r.op + " has no strategy " + strategy);
}

}  // namespace

std::string records_to_json(const std::vector<TuningRecord>& records) {
  std::string out = "[";
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = records[i];
    std::string shape = "[";
    for (std::size_t d = 0; d < r.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(r.shape[d]);
    shape += "]";
    out += std::string(i ? ",\n " : "\n ") + "{\"op\": " + detail::json_quoted(r.op) +
           ", \"algorithm_version\": " + std::to_string(r.algorithm_version) + ", \"dtype\": " + detail::json_quoted(r.dtype) +
           ", \"shape\": " + shape + ", \"stride_class\": " + detail::json_quoted(r.stride_class) +
           ", \"params\": " + detail::json_quoted(r.params) + ", \"schedule\": " + detail::json_quoted(r.schedule) +
           ", \"median_ns\": " + number(r.median_ns) + ", \"spread_ns\": " + number(r.spread_ns) +
           ", \"repetitions\": " + std::to_string(r.repetitions) +
           ", \"transfers\": " + (r.transfers ? "true" : "false") +
           ", \"candidates\": " + std::to_string(r.candidates) + ", \"default_ns\": " + number(r.default_ns) +
           ", \"fingerprint\": " + detail::json_quoted(r.fingerprint) + "}";
  }
  return out + (records.empty() ? "]\n" : "\n]\n");
}

std::vector<TuningRecord> records_from_json(const std::string& text) {
  std::vector<TuningRecord> out;
  const std::vector<Object> objects = Parser(text).list();
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const Object& o = objects[i];
    TuningRecord r;
    r.op = field<std::string>(o, "op", i);
    r.algorithm_version = int(integer_field(o, "algorithm_version", i, 1, 0, INT32_MAX));
    r.dtype = field<std::string>(o, "dtype", i);
    r.shape = field<std::vector<std::int64_t>>(o, "shape", i);
    if (!detail::shape_from_text(detail::shape_to_text(r.shape)))
      throw Error(Errc::invalid_file, "tuning records", "record " + std::to_string(i),
                  "shape must be 1 to 8 positive sizes");
    r.stride_class = optional_field<std::string>(o, "stride_class", i, "packed");
    r.params = field<std::string>(o, "params", i);
    r.schedule = field<std::string>(o, "schedule", i);
    try {
      Schedule::parse(r.schedule);
    } catch (const Error& e) {
      throw Error(Errc::invalid_file, "tuning records", "record " + std::to_string(i),
                  "field 'schedule': " + std::string(e.what()));
    }
    r.median_ns = field<double>(o, "median_ns", i);
    if (!(r.median_ns > 0))
      throw Error(Errc::invalid_file, "tuning records", "record " + std::to_string(i), "median_ns must be positive");
    r.spread_ns = optional_field<double>(o, "spread_ns", i, 0);
    r.repetitions = integer_field(o, "repetitions", i, 0, 0, max_exact_integer);
    r.transfers = optional_field<bool>(o, "transfers", i, false);
    r.candidates = integer_field(o, "candidates", i, 0, 0, max_exact_integer);
    r.default_ns = optional_field<double>(o, "default_ns", i, 0);
    r.fingerprint = field<std::string>(o, "fingerprint", i);
    check_lookup_fields(r, i);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TuningRecord> import_records(TuningDb& db, const std::string& json) {
  std::vector<TuningRecord> records = records_from_json(json);
  db.put_all(records);
  // Records of one key replace each other in the database, the last one staying: so here too.
  std::vector<TuningRecord> kept;
  for (auto r = records.rbegin(); r != records.rend(); ++r) {
    const auto same_key = [&](const TuningRecord& k) {
      return k.op == r->op && k.algorithm_version == r->algorithm_version && k.dtype == r->dtype &&
             k.shape == r->shape && k.stride_class == r->stride_class && k.params == r->params &&
             k.fingerprint == r->fingerprint;
    };
    if (std::none_of(kept.begin(), kept.end(), same_key)) kept.push_back(std::move(*r));
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

}  // namespace hk

// One benchmark result written as one line of JSON (record.hpp).
#include "bench/record.hpp"

#include <charconv>
#include <cmath>

#include "runtime/tuning/json_text.hpp"

namespace hk::bench {
namespace {

template <class Number>
void append_number(std::string& out, Number x) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, x).ptr;  // shortest exact form
  out.append(text, end);
}

struct ValueWriter {
  std::string& out;
  void operator()(std::nullptr_t) const { out += "null"; }
  void operator()(bool b) const { out += b ? "true" : "false"; }
  void operator()(std::int64_t i) const { append_number(out, i); }
  void operator()(double d) const {
    if (std::isfinite(d))
      append_number(out, d);
    else
      out += "null";
  }
  void operator()(const std::string& s) const { out += hk::detail::json_quoted(s); }
  void operator()(const std::vector<std::int64_t>& list) const {
    out += '[';
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i) out += ", ";
      append_number(out, list[i]);
    }
    out += ']';
  }
};

}  // namespace

Record& Record::set(std::string_view key, Value value) {
  for (auto& [k, v] : fields_)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  fields_.emplace_back(std::string(key), std::move(value));
  return *this;
}

const Record::Value* Record::find(std::string_view key) const {
  for (const auto& [k, v] : fields_)
    if (k == key) return &v;
  return nullptr;
}

std::string Record::to_json() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ", ";
    out += hk::detail::json_quoted(fields_[i].first);
    out += ": ";
    std::visit(ValueWriter{out}, fields_[i].second);
  }
  out += '}';
  return out;
}

}  // namespace hk::bench

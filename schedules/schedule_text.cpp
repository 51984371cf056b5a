// The text and JSON forms of hk::Schedule.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "hetkern/error.hpp"
#include "hetkern/schedule.hpp"

namespace hk {
namespace {

[[noreturn]] void malformed(std::string_view text, const std::string& why) {
  throw Error(Errc::invalid_schedule, "schedule", "\"" + std::string(text) + "\"", why);
}

// The character at `pos` for a message: itself where printable ASCII, else its byte's value, so
// that no message holds part of a multi-byte character.
std::string character_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return "the end";
  const auto c = static_cast<unsigned char>(text[pos]);
  if (c >= 0x20 && c < 0x7f) return "'" + std::string(1, char(c)) + "'";
  static constexpr char digits[] = "0123456789ABCDEF";
  return std::string("byte 0x") + digits[c >> 4] + digits[c & 15] + (c >= 0x80 ? " (names are ASCII)" : "");
}

bool is_ident_start(char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) {
  return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c));
}
bool is_integer(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A small recursive-descent reader over the grammar documented in schedule.hpp.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Schedule read() {
    skip_space();
    std::string name = ident(true);
    std::vector<Schedule::Param> params;
    skip_space();
    if (accept('(')) {
      skip_space();
      if (!accept(')')) {
        do {
          skip_space();
          Schedule::Param p;
          p.key = ident(false);
          for (const auto& q : params)
            if (q.key == p.key) malformed(text_, "parameter '" + p.key + "' is given twice");
          skip_space();
          if (!accept('=')) malformed(text_, "expected '=' after '" + p.key + "'");
          skip_space();
          p.value = value();
          params.push_back(std::move(p));
          skip_space();
        } while (accept(','));
        if (!accept(')')) malformed(text_, "expected ',' or ')' at offset " + std::to_string(pos_));
      }
      skip_space();
    }
    if (pos_ != text_.size())
      malformed(text_, "unexpected " + character_at(text_, pos_) + " at offset " + std::to_string(pos_));
    return Schedule(std::move(name), std::move(params));
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool accept(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string ident(bool dotted) {
    std::size_t start = pos_;
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_]))
      malformed(text_, dotted ? "expected a strategy name such as scan.tiled"
                              : "expected a parameter name at offset " + std::to_string(pos_));
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (is_ident_char(c)) {
        ++pos_;
      } else if (dotted && c == '.' && pos_ + 1 < text_.size() && is_ident_start(text_[pos_ + 1])) {
        ++pos_;
      } else {
        break;
      }
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string value() {
    std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    std::string v(text_.substr(start, pos_ - start));
    if (v.empty())
      malformed(text_, "expected a value (a non-negative integer or a name) at offset " + std::to_string(start) +
                           ", got " + character_at(text_, start));
    if (std::isdigit(static_cast<unsigned char>(v[0])) && !is_integer(v))
      malformed(text_, "'" + v + "' is neither an integer nor a name");
    if (is_integer(v)) {
      v.erase(0, std::min(v.find_first_not_of('0'), v.size() - 1));  // one text per value: 01 is 1
      if (v.size() > 18) malformed(text_, "integer '" + v + "' is too large");
    }
    return v;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Schedule::Schedule(std::string strategy, std::vector<Param> params)
    : strategy_(std::move(strategy)), params_(std::move(params)) {}

Schedule Schedule::parse(std::string_view text) { return Reader(text).read(); }

std::optional<std::string_view> Schedule::find(std::string_view key) const {
  for (const auto& p : params_)
    if (p.key == key) return std::string_view(p.value);
  return std::nullopt;
}

Schedule& Schedule::set(std::string_view key, std::string value) {
  for (auto& p : params_)
    if (p.key == key) {
      p.value = std::move(value);
      return *this;
    }
  params_.push_back({std::string(key), std::move(value)});
  return *this;
}

std::string Schedule::to_string() const {
  if (params_.empty()) return strategy_;
  std::string s = strategy_ + "(";
  for (std::size_t i = 0; i < params_.size(); ++i)
    s += (i ? ", " : "") + params_[i].key + "=" + params_[i].value;
  return s + ")";
}

std::string Schedule::to_json() const {
  std::string s = "{\"strategy\": \"" + strategy_ + "\", \"params\": {";
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    s += (i ? ", \"" : "\"") + p.key + "\": ";
    s += is_integer(p.value) ? p.value : "\"" + p.value + "\"";
  }
  return s + "}}";
}

std::string_view name_of(Operator op) {
  switch (op) {
    case Operator::cumulative_sum: return "cumulative_sum";
    case Operator::cumulative_product: return "cumulative_product";
    case Operator::quantized_linear_matmul: return "quantized_linear_matmul";
  }
  return "?";
}

}  // namespace hk

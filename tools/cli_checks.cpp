// The option checks the subcommands share (cli.hpp).
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "tools/cli.hpp"

namespace hk::cli {

CLI::Validator seconds_within(double lo, double hi, bool above_lo) {
  std::ostringstream range;
  range << "a finite number of seconds " << (above_lo ? "above " : "from ") << lo << (above_lo ? ", at most " : " to ")
        << hi;
  const std::string expected = range.str();
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        const bool number = CLI::detail::lexical_cast(text, v);
        if (number && std::isfinite(v) && v >= lo && v <= hi && !(above_lo && v == lo)) return {};
        return "expected " + expected + ", got " + text;
      },
      "SECONDS");
}

CLI::Validator whole_number_within(std::int64_t lo, std::int64_t hi) {
  const std::string range = hi == std::numeric_limits<std::int64_t>::max()
                                ? "a whole number of at least " + std::to_string(lo)
                                : "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
        const char* end = text.data() + text.size();
        std::int64_t v = 0;
        const auto [stop, error] = std::from_chars(begin, end, v);
        if (stop == end && error == std::errc() && v >= lo && v <= hi) return {};
        return "expected " + range + ", got " + (text.empty() ? "an empty value" : text);
      },
      lo == std::numeric_limits<int>::min() ? std::string()
      : hi == std::numeric_limits<std::int64_t>::max()
          ? "INT >= " + std::to_string(lo)
          : "INT in [" + std::to_string(lo) + " - " + std::to_string(hi) + "]");
}

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& text) -> std::string { return text.empty() ? "expected a value, got an empty one" : ""; },
      "", "NON_EMPTY");
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() != 0) option->check(non_empty);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_values(*sub);
}

}  // namespace hk::cli

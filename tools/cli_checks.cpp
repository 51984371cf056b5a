// The option checks the subcommands share (cli.hpp).
#include <cmath>
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

void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& text) -> std::string { return text.empty() ? "expected a value, got an empty one" : ""; },
      "", "NON_EMPTY");
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() != 0) option->check(non_empty);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_values(*sub);
}

}  // namespace hk::cli

// hetkern: run, inspect and compare the library's operators from the command line.
// Exit status: 0 on success, 2 on any usage or validation error (one line on stderr), 130 when
// Ctrl-C stopped a tuning run or a sweep (after what finished was reported), 1 when the machine
// ran out of memory or another unexpected failure occurred.
#include <iostream>
#include <new>
#include <string>

#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "tools/cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hetkern: cumulative sums and products and quantized matrix multiplication, "
               "with selectable schedules"};
  app.require_subcommand(0, 1);
  // The version this program was built as; the library it loaded says its own in `hetkern info`.
  std::string version = "hetkern " HETKERN_VERSION;
  if (hk::build_info().version != HETKERN_VERSION) version += " (library " + hk::build_info().version + ")";
  app.set_version_flag("--version", version, "print the version and exit");
  app.footer("Exit status: 0 success; 2 bad input or usage (one line on stderr, no output written); "
             "130 Ctrl-C stopped tune or bench --sweep after reporting what finished; 1 out of memory "
             "or an unexpected failure. An output path of - is standard output.");
  hk::cli::add_run(app);
  hk::cli::add_info(app);
  hk::cli::add_demo(app);
  hk::cli::add_bench(app);
  hk::cli::add_tune(app);
  hk::cli::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty())
      throw CLI::ValidationError("a command is required: run, info, demo, bench or tune");
    if (app.got_subcommand("run") && app.get_subcommand("run")->get_subcommands().empty())
      throw CLI::ValidationError("run needs an operator: cumsum, cumprod or qlinear-matmul");
    if (app.got_subcommand("bench") && app.get_subcommand("bench")->get_subcommands().empty() &&
        app.get_subcommand("bench")->count("--sweep") == 0)
      throw CLI::ValidationError("bench needs an operator (cumsum, cumprod or qlinear-matmul) or --sweep SPEC");
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const hk::cli::Interrupted&) {
    return 130;
  } catch (const CLI::ParseError& e) {
    std::cerr << "hetkern: " << e.what() << " (see hetkern --help)\n";
    return 2;
  } catch (const hk::Error& e) {
    std::cerr << "hetkern: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "hetkern: not enough memory for this input\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hetkern: unexpected failure: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

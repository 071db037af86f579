// The frame every chapter program runs in, so that a program reads as its lesson:
//   parse the command line (the chapter's own keys, bound to its settings by name),
//   open the run (device chosen, described and written to CSV; timing options; output folder),
//   dispatch to one function per --mode, from a table of modes written once.
#pragma once

#include "cml/cli.hpp"
#include "cml/device.hpp"
#include "cml/table.hpp"
#include "cml/timing.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cml {

// What every measurement of a run shares, opened once by open_run().
struct Run {
  DeviceFacts facts;
  TimingOptions timing;
  bool csv = false;      // --csv: tables as CSV on stdout
  bool verbose = false;  // --verbose
  std::string out;       // --out=DIR: tables and files are also written there (empty: nowhere)

  // Prints the table (aligned, or CSV with --csv), and writes DIR/<name>.csv with --out.
  void emit(const Table& table) const;
  // Writes DIR/<filename> with --out (atomically: never half a file); nothing without it.
  void write(const std::string& filename, const std::string& text) const;
};

// The device memory a run needs, and the option that sets it (named in the error when the
// device has too little free: "--size (two buffers)").
struct Footprint {
  std::uint64_t bytes = 0;
  std::string what = "--size";
};

// Selects --device (Skip without a usable GPU), checks that `footprint` fits in its free
// memory (UsageError naming footprint.what otherwise), prints the device's description
// (unless `quiet`) and writes device.csv with --out, so every figure names its GPU.
Run open_run(const Cli& cli, const Footprint& footprint, bool quiet = false);
// The same, for a program whose footprint depends on the device (a default that shrinks to
// fit): `footprint` is called with the device's facts before the check.
Run open_run(const Cli& cli, const std::function<Footprint(const DeviceFacts&)>& footprint, bool quiet = false);

// One --mode of a program: its name (written once, here), what it shows (for --help), and
// the function that runs it over the chapter's context. in_all: whether --mode=all runs it.
template <class Context>
struct Mode {
  const char* name;
  const char* what;
  bool (*run)(Context&);
  bool in_all = true;
};

// The --mode choices of a table: "all" first when `with_all`, then each mode's name.
template <class Context>
std::vector<std::string> mode_names(const std::vector<Mode<Context>>& modes, bool with_all) {
  std::vector<std::string> names;
  if (with_all) names.emplace_back("all");
  for (const auto& m : modes) names.emplace_back(m.name);
  return names;
}

// --mode's help: one "name: what" per mode.
template <class Context>
std::string modes_help(const std::vector<Mode<Context>>& modes) {
  std::string help = "what to run:";
  for (const auto& m : modes) help += std::string(" ") + m.name + " (" + m.what + ");";
  help.pop_back();
  return help;
}

// A chapter program's command line (chapter_cli's summary and help line) with --mode bound
// to `mode`, its choices the table's names ("all" first when `with_all`), its help the
// table's descriptions: the modes are named once, in the table.
template <class Context>
Cli chapter_cli(const std::string& num, const std::string& summary, const std::vector<Mode<Context>>& modes,
                std::string& mode, bool with_all = true) {
  Cli cli = chapter_cli(num, summary);
  cli.choice("mode", mode, mode_names(modes, with_all), modes_help(modes));
  return cli;
}

// Runs the chosen mode, or every mode marked in_all for "all", and returns whether all of
// them passed (each still runs after another failed, so a run reports everything).
template <class Context>
bool run_modes(const std::vector<Mode<Context>>& modes, const std::string& chosen, Context& context) {
  bool ok = true;
  for (const auto& m : modes)
    if (chosen == m.name || (chosen == "all" && m.in_all)) ok = m.run(context) && ok;
  return ok;
}

}  // namespace cml

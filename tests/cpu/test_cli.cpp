// The shared command line: sizes, numbers, choices, flags, and the one-line errors (exit 2).
#include "catch.hpp"

#include "cml/cli.hpp"
#include "cml/errors.hpp"

#include <vector>

namespace {
// Parses a command line given as words after the program name.
bool parse(cml::Cli& cli, std::vector<const char*> words) {
  words.insert(words.begin(), "prog");
  return cli.parse(static_cast<int>(words.size()), words.data());
}

// A program's settings with their defaults, and its command line bound to them.
struct TestProgram {
  std::uint64_t size = 1024;
  int streams = 4;
  std::size_t chunks = 0;
  std::string mode = "a";
  bool fast = false;
  cml::Cli cli{"prog", "a test program"};
  TestProgram() {
    cli.size("size", size, 4, 1ull << 40, "bytes")
        .integer("streams", streams, 1, 64, "streams")
        .integer("chunks", chunks, 0, 1 << 20, "chunks")
        .choice("mode", mode, {"a", "b"}, "mode")
        .flag("fast", fast, "go fast");
  }
};

// The one line a fresh TestProgram's parse throws for `words` ("" when it parses).
std::string usage_error(std::vector<const char*> words) {
  TestProgram p;
  try {
    parse(p.cli, std::move(words));
  } catch (const cml::UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("sizes take binary K, M, G, T suffixes", "[cpu][cli]") {
  CHECK(cml::parse_size("4096") == 4096);
  CHECK(cml::parse_size("64K") == 64u * 1024);
  CHECK(cml::parse_size("64k") == 64u * 1024);
  CHECK(cml::parse_size("64M") == 64ull << 20);
  CHECK(cml::parse_size("64MiB") == 64ull << 20);
  CHECK(cml::parse_size("1G") == 1ull << 30);
  CHECK(cml::parse_size("2T") == 2ull << 40);
  CHECK(cml::parse_size("12B") == 12);
}

TEST_CASE("a size that is not a number, has a bad unit or overflows is a usage error", "[cpu][cli]") {
  CHECK_THROWS_AS(cml::parse_size(""), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_size("abc"), cml::UsageError);
  CHECK_THROWS_WITH(cml::parse_size("1e99", "--size"), cml::test::Contains("is not a whole number"));
  CHECK_THROWS_WITH(cml::parse_size("1.5G", "--size"), cml::test::Contains("is not a whole number"));
  CHECK_THROWS_WITH(cml::parse_size("12Q", "--size"), cml::test::Contains("has an unknown unit"));
  CHECK_THROWS_AS(cml::parse_size("-1"), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_size("1.5G"), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_size("64X"), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_size("99999999999999999999"), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_size("99999999999T"), cml::UsageError);
  CHECK_THROWS_WITH(cml::parse_size("64X", "--size"), cml::test::Contains("--size") && cml::test::Contains("64X"));
}

TEST_CASE("whole numbers are checked against their range", "[cpu][cli]") {
  CHECK(cml::parse_int("17", 0, 100) == 17);
  CHECK(cml::parse_int("-3", -5, 5) == -3);
  CHECK_THROWS_AS(cml::parse_int("101", 0, 100), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_int("1e3", 0, 10000), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_int("", 0, 1), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_int("-", 0, 1), cml::UsageError);
  CHECK_THROWS_AS(cml::parse_int("99999999999999999999", 0, 1), cml::UsageError);
}

TEST_CASE("byte counts print in the largest whole binary unit, else in the largest unit with one decimal",
          "[cpu][cli]") {
  CHECK(cml::format_bytes(4096) == "4 KiB");
  CHECK(cml::format_bytes(256ull << 20) == "256 MiB");
  CHECK(cml::format_bytes(1000) == "1000 B");
  CHECK(cml::format_bytes(1ull << 30) == "1 GiB");
  CHECK(cml::format_bytes(99999999999999ull) == "90.9 TiB");  // the largest unit, not 97656250000.0 KiB
  CHECK(cml::format_bytes((10ull << 20) + 1) == "10.0 MiB");
  CHECK(cml::format_bytes((1ull << 20) + 4096) == "1028 KiB");
}

TEST_CASE("the command line accepts --key=value and --key value, with defaults otherwise", "[cpu][cli]") {
  TestProgram program;
  auto& cli = program.cli;
  REQUIRE(parse(cli, {"--size=64M", "--streams", "8", "--csv"}));
  CHECK(cli.get_size("size") == 64ull << 20);
  CHECK(cli.get_int("streams") == 8);
  CHECK(cli.get_choice("mode") == "a");
  CHECK(cli.csv());
  CHECK_FALSE(cli.verbose());
  CHECK(cli.iters() == 10);
  CHECK(cli.device() == 0);
  CHECK(cli.out_dir().empty());
}

TEST_CASE("every program has --help, --device, --iters, --warmup, --csv, --verbose and --out", "[cpu][cli]") {
  TestProgram program;
  auto& cli = program.cli;
  const std::string usage = cli.usage();
  for (const char* key : {"--help", "--device=N", "--iters=N", "--warmup=N", "--csv", "--verbose", "--out=DIR",
                          "--size=SIZE", "--mode=a|b"})
    CHECK_THAT(usage, cml::test::Contains(key));
  CHECK_THAT(usage, cml::test::Contains("77"));
}

TEST_CASE("--help asks the caller to exit 0 without running", "[cpu][cli]") {
  TestProgram program;
  auto& cli = program.cli;
  CHECK_FALSE(parse(cli, {"--help"}));
  TestProgram short_help;
  CHECK_FALSE(parse(short_help.cli, {"-h"}));
}

TEST_CASE("a bad command line is one UsageError naming the option", "[cpu][cli]") {
  CHECK_THAT(usage_error({"--nope=1"}), cml::test::Contains("unknown option --nope"));
  CHECK_THAT(usage_error({"--streams=eight"}), cml::test::Contains("--streams"));
  CHECK_THAT(usage_error({"--streams=65"}), cml::test::Contains("out of range"));
  CHECK_THAT(usage_error({"--mode=c"}), cml::test::Contains("a|b"));
  CHECK_THAT(usage_error({"--streams"}), cml::test::Contains("needs a value"));
  CHECK_THAT(usage_error({"extra"}), cml::test::Contains("unexpected argument"));
  CHECK_THAT(usage_error({"--csv=maybe"}), cml::test::Contains("--csv takes no value"));
  CHECK_THAT(usage_error({"--size=2"}), cml::test::Contains("out of range"));
}

TEST_CASE("given tells a value set on the command line from a default, even an equal one", "[cpu][cli]") {
  TestProgram program;
  auto& cli = program.cli;
  REQUIRE(parse(cli, {"--size=1024", "--mode=b"}));
  CHECK(cli.given("size"));
  CHECK(cli.given("mode"));
  CHECK_FALSE(cli.given("streams"));
  CHECK(cli.get_int("streams") == 4);
  CHECK_THROWS_AS(cli.given("nonsense"), std::logic_error);
}

TEST_CASE("a chapter's command line is named chNN and its help says how to run and check it", "[cpu][cli]") {
  auto cli = cml::chapter_cli("07", "Chapter 07 - something.");
  const std::string help = cli.usage();
  CHECK_THAT(help, cml::test::Contains("ch07"));
  CHECK_THAT(help,
             cml::test::Contains("Chapter 07 - something.\nRun it with ./lab run 07 [-- options]; check your steps "
                                 "with ./lab check 07."));
}

TEST_CASE("parsed values land in the settings' fields, named once beside their defaults", "[cpu][cli]") {
  TestProgram p;
  REQUIRE(parse(p.cli, {"--size=64M", "--streams=8", "--chunks", "32", "--mode=b", "--fast"}));
  CHECK(p.size == 64ull << 20);
  CHECK(p.streams == 8);
  CHECK(p.chunks == 32);
  CHECK(p.mode == "b");
  CHECK(p.fast);
  TestProgram defaults;
  REQUIRE(parse(defaults.cli, {}));
  CHECK(defaults.size == 1024);
  CHECK(defaults.streams == 4);
  CHECK(defaults.mode == "a");
  CHECK_FALSE(defaults.fast);
}

TEST_CASE("a key given twice, or a value given to a flag, is a usage error", "[cpu][cli]") {
  CHECK_THAT(usage_error({"--size=64M", "--size=32M"}), cml::test::Contains("--size is given twice"));
  CHECK_THAT(usage_error({"--help=1"}), cml::test::Contains("--help takes no value"));
  CHECK_THAT(usage_error({"--csv=yes"}), cml::test::Contains("--csv takes no value"));
  CHECK_THAT(usage_error({"--fast=true"}), cml::test::Contains("--fast takes no value"));
}

TEST_CASE("a program cannot register the same key twice", "[cpu][cli]") {
  TestProgram p;
  int again = 0;
  CHECK_THROWS_AS(p.cli.integer("streams", again, 0, 1, "again"), std::logic_error);
}

TEST_CASE("--help wraps at 100 columns, long choice lists included", "[cpu][cli]") {
  std::string which = "none";
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) names.push_back("a-rather-long-name-" + std::to_string(i));
  names.push_back("none");
  cml::Cli cli("prog", "a program");
  cli.choice("breaker", which, names,
             "apply one way of breaking concurrency, or all of them in turn, and see what each does to the "
             "pipeline's speed-up and to the copies and kernels that overlap");
  const std::string help = cli.usage();
  std::size_t start = 0;
  while (start < help.size()) {
    const std::size_t end = help.find('\n', start);
    const std::string line = help.substr(start, end == std::string::npos ? std::string::npos : end - start);
    CHECK(line.size() <= 100);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  CHECK_THAT(help, cml::test::Contains("--breaker=NAME"));
  CHECK_THAT(help, cml::test::Contains("a-rather-long-name-11"));
}

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

cml::Cli make_cli() {
  cml::Cli cli("prog", "a test program");
  cli.size("size", 1024, 4, 1ull << 40, "bytes")
      .integer("streams", 4, 1, 64, "streams")
      .choice("mode", "a", {"a", "b"}, "mode");
  return cli;
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

TEST_CASE("byte counts print in the largest whole binary unit", "[cpu][cli]") {
  CHECK(cml::format_bytes(4096) == "4 KiB");
  CHECK(cml::format_bytes(256ull << 20) == "256 MiB");
  CHECK(cml::format_bytes(1000) == "1000 B");
  CHECK(cml::format_bytes(1ull << 30) == "1 GiB");
}

TEST_CASE("the command line accepts --key=value and --key value, with defaults otherwise", "[cpu][cli]") {
  auto cli = make_cli();
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
  auto cli = make_cli();
  const std::string usage = cli.usage();
  for (const char* key : {"--help", "--device=N", "--iters=N", "--warmup=N", "--csv", "--verbose", "--out=DIR",
                          "--size=SIZE", "--mode=a|b"})
    CHECK_THAT(usage, cml::test::Contains(key));
  CHECK_THAT(usage, cml::test::Contains("77"));
}

TEST_CASE("--help asks the caller to exit 0 without running", "[cpu][cli]") {
  auto cli = make_cli();
  CHECK_FALSE(parse(cli, {"--help"}));
  auto cli2 = make_cli();
  CHECK_FALSE(parse(cli2, {"-h"}));
}

TEST_CASE("a bad command line is one UsageError naming the option", "[cpu][cli]") {
  auto unknown = make_cli();
  CHECK_THROWS_WITH(parse(unknown, {"--nope=1"}), cml::test::Contains("unknown option --nope"));
  auto bad_number = make_cli();
  CHECK_THROWS_WITH(parse(bad_number, {"--streams=eight"}), cml::test::Contains("--streams"));
  auto out_of_range = make_cli();
  CHECK_THROWS_WITH(parse(out_of_range, {"--streams=65"}), cml::test::Contains("out of range"));
  auto bad_choice = make_cli();
  CHECK_THROWS_WITH(parse(bad_choice, {"--mode=c"}), cml::test::Contains("a|b"));
  auto missing = make_cli();
  CHECK_THROWS_WITH(parse(missing, {"--streams"}), cml::test::Contains("needs a value"));
  auto positional = make_cli();
  CHECK_THROWS_AS(parse(positional, {"extra"}), cml::UsageError);
  auto flag_value = make_cli();
  CHECK_THROWS_AS(parse(flag_value, {"--csv=maybe"}), cml::UsageError);
  auto small = make_cli();
  CHECK_THROWS_WITH(parse(small, {"--size=2"}), cml::test::Contains("out of range"));
}

TEST_CASE("given tells a value set on the command line from a default, even an equal one", "[cpu][cli]") {
  auto cli = make_cli();
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
  CHECK_THAT(help, cml::test::Contains("Chapter 07 - something.\nRun it with ./lab run 07 [-- options]; check your steps "
                                       "with ./lab check 07."));
}

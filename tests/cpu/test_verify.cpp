// Verification against a CPU reference: the first mismatch is named, NaN never passes.
#include "catch.hpp"

#include "cml/table.hpp"
#include "cml/verify.hpp"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

TEST_CASE("exact comparison names the first mismatch and counts them all", "[cpu][verify]") {
  const std::vector<int> want = {1, 2, 3, 4, 5};
  const std::vector<int> got = {1, 2, 9, 4, 7};
  const auto r = cml::compare_exact(got.data(), want.data(), want.size());
  CHECK_FALSE(r.ok);
  CHECK(r.first_bad == 2);
  CHECK(r.bad_count == 2);
  CHECK(r.describe() == "FAILED: first mismatch at 2: got 9, want 3 (2 of 5 wrong)");
  CHECK(cml::compare_exact(want.data(), want.data(), want.size()).describe() == "PASSED");
}

TEST_CASE("bytes print as numbers, not characters", "[cpu][verify]") {
  const std::byte want[2] = {std::byte{1}, std::byte{65}};
  const std::byte got[2] = {std::byte{1}, std::byte{66}};
  CHECK(cml::compare_exact(got, want, 2).describe() == "FAILED: first mismatch at 1: got 66, want 65 (1 of 2 wrong)");
}

TEST_CASE("close comparison uses absolute plus relative tolerance and rejects NaN", "[cpu][verify]") {
  const std::vector<float> want = {1.0f, 100.0f, 0.0f};
  const std::vector<float> close = {1.0001f, 100.01f, 1e-7f};
  CHECK(cml::compare_close(close.data(), want.data(), 3, 1e-3, 1e-6).ok);
  const std::vector<float> nan = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  const auto r = cml::compare_close(nan.data(), want.data(), 3, 1e-3, 1e-6);
  CHECK_FALSE(r.ok);
  CHECK(r.first_bad == 1);
}

TEST_CASE("a table prints aligned, as CSV, and writes DIR/name.csv whole", "[cpu][table]") {
  cml::Table t("demo", {"name", "value"});
  t.row({"a", "1"}).row({"b,c", "22"});
  CHECK(t.csv_text() == "name,value\na,1\n\"b,c\",22\n");
  CHECK_THROWS_AS(t.row({"only one"}), std::logic_error);
  const auto dir = std::filesystem::temp_directory_path() / "cml_table_test";
  std::filesystem::remove_all(dir);
  t.write_csv(dir.string());
  std::ifstream f(dir / "demo.csv");
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str() == t.csv_text());
  CHECK_FALSE(std::filesystem::exists(dir / ".demo.csv.partial"));
  std::filesystem::remove_all(dir);
  CHECK(cml::fixed(1.23456, 2) == "1.23");
  CHECK(cml::fixed(std::nan(""), 2) == "-");
}

TEST_CASE("a table lines its columns up by characters, not bytes, so ± and µ do not shift them", "[cpu][table]") {
  cml::Table t("noise", {"what", "time"});
  t.row({"a", "1.0 ms ±0.8 %"}).row({"b", "12.0 ms ±10.5 %"});
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  REQUIRE(out != nullptr);
  t.print(out, false);
  std::fclose(out);
  std::istringstream lines(std::string(text, size));
  std::free(text);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  const auto columns = [](const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0u) != 0x80u;
    return n;
  };
  CHECK(columns(first) == columns(second));
  CHECK(columns(header) == columns(first));
}

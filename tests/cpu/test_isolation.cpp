// The supervisor's text work, without running anything: how a case is named to its child,
// which step it belongs to, what the learner reads when it hangs or crashes, and the JUnit
// merge that ./lab check reads. The processes themselves: test_watchdog.py.
#include "catch.hpp"

#include "case_names.hpp"
#include "junit_merge.hpp"
#include "supervisor.hpp"
#include "verdicts.hpp"

#include "cml/tools.hpp"

#include <csignal>
#include <string>

using namespace cml::test::isolation;
namespace junit = cml::test::junit;
using cml::test::Contains;

TEST_CASE("escape_spec puts a backslash before the test-spec syntax only", "[isolation]") {
  CHECK(escape_spec("step 1: plain words") == "step 1: plain words");
  CHECK(escape_spec("a, b [c] \"d\" ~e *f \\g") == "a\\, b \\[c\\] \\\"d\\\" \\~e \\*f \\\\g");
}

TEST_CASE("step_of reads the [stepK] tag, else a name starting 'step K'", "[isolation]") {
  CHECK(step_of("[ch04][step2][perf]", "anything") == 2);
  CHECK(step_of("[ch04][STEP12]", "") == 12);
  CHECK(step_of("[ch04][stepx][step3]", "") == 3);
  CHECK(step_of("[ch04][mechanism]", "step 4 and the model: sectors") == 4);
  CHECK_FALSE(step_of("[.target]", "profile target: kernels").has_value());
  CHECK_FALSE(step_of("[steps]", "stepping").has_value());
}

TEST_CASE("the learner reads which step hung, for how long, and where to look", "[isolation]") {
  CHECK(timeout_message(3, 60, "step 3: x") ==
        "the kernel of step 3 never finished within 60 s: look for a loop that never ends or a wait "
        "that never completes (step 3: x)");
  CHECK_THAT(timeout_message(std::nullopt, 2.5, "t"), Contains("the kernel of test case never finished within 2.5 s"));
  CHECK_THAT(signal_message(5, SIGSEGV, "n"), Contains("the test process of step 5 was killed by signal 11 (SIGSEGV"));
  CHECK_THAT(signal_message(1, SIGUSR1, "n"), Contains("signal " + std::to_string(SIGUSR1) + " ("));
  CHECK_THAT(exit_message(2, 5, "n"), Contains("step 2 ended with exit status 5"));
}

TEST_CASE("a case not run after its step hung names the case that hung", "[isolation]") {
  CHECK(not_run_message(2, "step 2: sums \"ragged\"") ==
        "not run: step 2's kernel already hung in 'step 2: sums \"ragged\"' (fix that first)");
}

TEST_CASE("sticky CUDA errors are recognised by name or by CUDA's words, the first one first", "[isolation]") {
  CHECK(sticky_cuda_error("x: cudaErrorIllegalAddress: an illegal memory access was encountered") ==
        "cudaErrorIllegalAddress (an illegal memory access was encountered)");
  CHECK(sticky_cuda_error("misaligned address, later unspecified launch failure") ==
        "cudaErrorMisalignedAddress (misaligned address)");
  CHECK_FALSE(sticky_cuda_error("cudaErrorInvalidValue: invalid argument").has_value());
  CHECK_THAT(sticky_message(4, "cudaErrorIllegalAddress (an illegal memory access was encountered)", "n"),
             Contains("step 4 hit a sticky CUDA error") && Contains("index past the end"));
}

TEST_CASE("CML_CASE_TIMEOUT takes positive seconds only", "[isolation]") {
  using cml::tools::parse_seconds;
  CHECK(parse_seconds("60") == 60.0);
  CHECK(parse_seconds("0.5") == 0.5);
  for (const char* bad : {"", "0", "-3", "soon", "5s", "inf", "nan"}) CHECK_FALSE(parse_seconds(bad).has_value());
}

TEST_CASE("the children get the reporter's file and the options worth passing on", "[isolation]") {
  const auto f = forwarded_options({"exe", "-r", "junit", "-o", "x.xml", "[step1]", "-s", "-d", "yes", "-c", "sec"});
  CHECK(f.junit());
  CHECK(f.out == "x.xml");
  CHECK(f.passthrough == std::vector<std::string>{"-s", "-d", "yes", "-c", "sec"});
  const auto v3 = forwarded_options({"exe", "--reporter=junit::out=r.xml::colour-mode=none", "--durations=yes"});
  CHECK(v3.reporter == "junit");
  CHECK(v3.out == "r.xml");
  CHECK(v3.reporter_options == "::colour-mode=none");
  CHECK(v3.passthrough == std::vector<std::string>{"--durations=yes"});
  CHECK(forwarded_options({"exe", "name with spaces"}).reporter.empty());
}

TEST_CASE("escape makes any child output safe inside XML", "[isolation]") {
  CHECK(junit::escape("a<b & \"c\" > d") == "a&lt;b &amp; &quot;c&quot; &gt; d");
  CHECK(junit::escape("tab\tline\nbell\a cr\r") == "tab\tline\nbell? cr");
  CHECK(junit::escape("caf\xc3\xa9 \xe2\x86\x92") == "caf\xc3\xa9 \xe2\x86\x92");  // valid UTF-8 stays
  CHECK(junit::escape("cut \xe2\x86") == "cut ??");                                // a sequence cut short
  CHECK(junit::escape("\xff\xc0\x80") == "???");
}

TEST_CASE("testcases finds Catch2's <testcase> elements, '>' in names included", "[isolation]") {
  const std::string report =
      "<?xml version=\"1.0\"?>\n<testsuites><testsuite name=\"t\" tests=\"3\">\n"
      "<properties><property name=\"filters\" value=\"x\"/></properties>\n"
      "<testcase classname=\"t.global\" name=\"a > b\" time=\"0.1\" status=\"run\"/>\n"
      "<testcase classname=\"t.global\" name=\"fails\" time=\"0.1\" status=\"run\">\n"
      "  <failure message=\"x\" type=\"CHECK\">FAILED: 1 == 2</failure>\n</testcase>\n"
      "<testcase classname=\"t.global\" name=\"skips\"><skipped message=\"why\"/></testcase>\n"
      "<testcases-not-this/>\n<system-out/>\n</testsuite></testsuites>\n";
  const auto cases = junit::testcases(report);
  REQUIRE(cases.size() == 3);
  CHECK_THAT(cases[0], Contains("name=\"a > b\""));
  CHECK_FALSE(junit::has_failure(cases[0]));
  CHECK(junit::has_failure(cases[1]));
  CHECK(junit::has_skip(cases[2]));
  CHECK(junit::testcases("<testsuites><testcase name=\"cut").empty());  // a truncated report
}

TEST_CASE("annotate_failure puts the supervisor's note first in the failure text", "[isolation]") {
  const std::string tc = "<testcase name=\"n\"><failure message=\"m\">FAILED: own</failure></testcase>";
  CHECK(junit::annotate_failure(tc, "note <1>") ==
        "<testcase name=\"n\"><failure message=\"m\">note &lt;1&gt;\nFAILED: own</failure></testcase>");
  CHECK(junit::annotate_failure("<testcase name=\"n\"><error message=\"m\"/></testcase>", "x") ==
        "<testcase name=\"n\"><error message=\"m\">x</error></testcase>");
  CHECK(junit::annotate_failure("<testcase name=\"n\"/>", "x") == "<testcase name=\"n\"/>");
}

TEST_CASE("document wraps the cases in one suite with counts taken from them", "[isolation]") {
  const std::vector<std::string> cases = {
      "<testcase name=\"ok\"/>",
      junit::failed_testcase("suite", "step 3: \"hangs\"", 60, "the kernel of step 3 never finished", "out\x01put"),
      "<testcase name=\"s\"><skipped/></testcase>",
      "<testcase name=\"e\"><error message=\"boom\">x</error></testcase>"};
  const std::string doc = junit::document("suite", cases, 61.5);
  CHECK_THAT(doc, Contains("<testsuite name=\"suite\" errors=\"1\" failures=\"1\" skipped=\"1\" tests=\"4\""));
  CHECK_THAT(doc, Contains("name=\"step 3: &quot;hangs&quot;\" time=\"60.000\""));
  CHECK_THAT(doc, Contains("type=\"isolation\">\nthe kernel of step 3 never finished\n"));
  CHECK_THAT(doc, Contains("out?put"));
  CHECK(junit::testcases(doc).size() == 4);
}

TEST_CASE("a case not run is a skip in the report, never a pass or a failure", "[isolation]") {
  const std::string tc = junit::not_run_testcase("suite", "step 2: <b>", "not run: step 2's kernel already hung");
  CHECK(junit::has_skip(tc));
  CHECK_FALSE(junit::has_failure(tc));
  CHECK_THAT(tc, Contains("name=\"step 2: &lt;b&gt;\" time=\"0.000\" status=\"notrun\""));
  CHECK_THAT(tc, Contains("<skipped message=\"not run: step 2's kernel already hung\">"));
  const std::string doc = junit::document(
      "suite", {junit::failed_testcase("suite", "step 2: a", 60, "the kernel of step 2 never finished", ""), tc}, 60);
  CHECK_THAT(doc, Contains("errors=\"0\" failures=\"1\" skipped=\"1\" tests=\"2\""));
  CHECK(junit::testcases(doc).size() == 2);
}

// One JUnit report from many: the supervisor runs each test case in its own process, each
// child writes Catch2's JUnit report, and ./lab check must still read one file of the same
// shape (<testsuites><testsuite><testcase>...). A child that timed out or crashed wrote no
// usable report: it gets a synthesised failed <testcase> with the supervisor's message.
// Text work only (Catch2's reports are regular enough that no XML library is needed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cml::test::junit {

// Text safe inside an XML element or a double-quoted attribute: & < > " escaped, control
// characters other than tab/newline and invalid UTF-8 (a child's raw output, cut anywhere)
// replaced by '?', so the merged file always parses.
std::string escape(std::string_view text);

// Every <testcase ...>...</testcase> (or <testcase .../>) element of a report, verbatim.
std::vector<std::string> testcases(std::string_view report);

// Whether a <testcase> element records a failure (<failure> or <error>) or a skip.
bool has_failure(std::string_view testcase);
bool has_skip(std::string_view testcase);

// The element with `note` (plain text) put first in its first <failure>/<error> text, so a
// reader sees the supervisor's diagnosis before Catch2's; unchanged if it has none.
std::string annotate_failure(std::string_view testcase, std::string_view note);

// A failed test case, as Catch2 writes one; `details` (plain text) goes into system-out.
std::string failed_testcase(const std::string& suite, const std::string& name, double seconds,
                            const std::string& message, const std::string& details);

// A test case the supervisor did not run, as a skip (<skipped>, which ./lab check and the
// counts of `document` read as one): `message` (plain text) says why.
std::string not_run_testcase(const std::string& suite, const std::string& name, const std::string& message);

// The whole report: one <testsuite> named `suite` holding `cases`, with counts computed
// from them.
std::string document(const std::string& suite, const std::vector<std::string>& cases, double seconds);

}  // namespace cml::test::junit

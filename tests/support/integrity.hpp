// That the learner's exercise.cu is their own: not the solution pulled in by #include, nor
// copied (which would pass every test the solution passes). Every chapter's test file
// holds this check once, as CML_INTEGRITY_CASE(NN, "NN_topic") at file scope.
#pragma once

#include "catch.hpp"

#include "cml/sass.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace cml::test {

// The checkout's root, from a test source's __FILE__ (tests/test_NN_x.cpp): absolute, or
// relative to the build folder ninja compiled it from (the test executable's folder's parent).
inline std::string checkout_root(std::string test_file) {
  if (test_file.empty() || test_file[0] != '/') {
    const std::string exe = cml::sass::self_executable();
    const auto tests_dir = exe.find_last_of('/');
    const auto build_dir = tests_dir == std::string::npos ? std::string::npos : exe.find_last_of('/', tests_dir - 1);
    test_file = (build_dir == std::string::npos ? std::string(".") : exe.substr(0, build_dir)) + "/" + test_file;
  }
  const auto slash = test_file.find_last_of('/');
  const std::string tests = slash == std::string::npos ? "." : test_file.substr(0, slash);
  return tests + "/..";
}

// "" when this executable is not the learner's (the solution's tests are not checked), or
// when the learner's exercise.cu does not include anything from solutions/; else what the
// learner sees.
inline std::string exercise_includes_solution(const std::string& test_file, const std::string& chapter) {
  if (cml::sass::self_executable().find("_learner") == std::string::npos) return "";
  const std::string path = checkout_root(test_file) + "/chapters/" + chapter + "/exercise.cu";
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  static const std::regex include(R"(#\s*include\s*[<"][^">\n]*solutions[/\\])");
  if (!std::regex_search(text.str(), include)) return "";
  return "chapters/" + chapter +
         "/exercise.cu includes the solution: the tests check your code, so write it "
         "(./lab reset " +
         chapter.substr(0, 2) + " restores the starter; ./lab hint " + chapter.substr(0, 2) + ")";
}

// "" unless this is the learner's build and it links the solution's exercise.cu: that file
// defines a marker symbol, cml_chNN_solution_tu, which the tests reference weakly (its
// address is null when absent). Else what the learner sees.
inline std::string solution_linked_error(const void* marker, const std::string& chapter) {
  if (cml::sass::self_executable().find("_learner") == std::string::npos || marker == nullptr) return "";
  const std::string num = chapter.substr(0, 2);
  return "your build contains the solution's exercise.cu (its marker symbol cml_ch" + num +
         "_solution_tu): an "
         "exercise.cu that includes or copies solutions/" +
         chapter +
         "/exercise.cu teaches nothing; write the "
         "steps yourself (./lab hint " +
         num + ")";
}

}  // namespace cml::test

// The integrity case of chapter NN (a number token: 01) whose folder is `folder`
// ("01_transfers"): the learner's build neither includes solutions/ nor links the
// solution's exercise.cu, which defines the marker cml_chNN_solution_tu (referenced weakly
// here: its address is null where it is absent).
#define CML_INTEGRITY_CASE(NN, folder)                                                                \
  extern "C" __attribute__((weak)) const int cml_ch##NN##_solution_tu;                                \
  TEST_CASE("step 1: exercise.cu is your own: the solution is not part of your build",                \
            "[ch" #NN "][step1][integrity]") {                                                        \
    const std::string included = ::cml::test::exercise_includes_solution(__FILE__, folder);           \
    INFO(included);                                                                                   \
    CHECK(included.empty());                                                                          \
    const std::string linked = ::cml::test::solution_linked_error(&cml_ch##NN##_solution_tu, folder); \
    INFO(linked);                                                                                     \
    CHECK(linked.empty());                                                                            \
  }

// The tests' main: doctest's, plus one rule. A suite of a combined executable
// (tests/unity.py) runs its own cases through a --source-file filter; a filter that
// matches no test case must fail the suite instead of passing it silently.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

unsigned g_selected = 0;  // test cases that passed the filters in the last run

struct selection_counter : doctest::IReporter {
  explicit selection_counter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override { g_selected = s.numTestCasesPassingFilters; }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("selection_counter", 1, selection_counter);

}  // namespace

int main(int argc, char** argv) {
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--source-file=", 0) == 0 || a.rfind("-sf=", 0) == 0) filtered = true;
  }
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  if (ctx.shouldExit()) return rc;
  if (filtered && g_selected == 0) {
    std::fprintf(stderr, "no test case matched the --source-file filter\n");
    return 1;
  }
  return rc;
}

// The one doctest main for every test executable in tests/.
//
// An area's test files share one executable, and meson runs each file's test cases alone (--source-file=*/<file>,
// tests/meson.build). A filter that selects nothing (a file renamed, a test case's name changed) would make that
// test pass having run nothing, so a run in which no test case passed the filters fails, and says so.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

// The test cases that passed the filters, as the run's end reports them; -1 until a run ends (a query such as
// --list-test-cases runs nothing and is not a failure).
long g_selected = -1;

struct SelectedCount final : doctest::IReporter {
  explicit SelectedCount(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override { g_selected = stats.numTestCasesPassingFilters; }
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

}  // namespace

DOCTEST_REGISTER_LISTENER("weft_selected_count", 1, SelectedCount);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (result == 0 && g_selected == 0) {
    std::fprintf(stderr, "weft tests: no test case passed the filters; a run of nothing fails. Arguments:");
    for (int i = 1; i < argc; ++i) std::fprintf(stderr, " %s", argv[i]);
    std::fprintf(stderr, "\n");
    return 1;
  }
  return result;
}

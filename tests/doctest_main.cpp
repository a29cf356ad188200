#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

namespace {

// ctest's doctest discovery (doctestAddTests.cmake) reads `--list-test-cases` as a CMake list,
// so a ';' in a test's name splits it into entries that match no test and fail in CI only. The
// listing refuses such a name instead: discovery, and with it the build, fails naming the test.
struct TestNameCheck : doctest::IReporter {
  explicit TestNameCheck(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData& query) override {
    bool bad = false;
    for (unsigned i = 0; i < query.num_data && query.data; ++i) {
      const std::string_view name = query.data[i]->m_name;
      if (name.find(';') == std::string_view::npos) continue;
      std::cerr << query.data[i]->m_file.c_str() << ":" << query.data[i]->m_line << ": test name \"" << name
                << "\" holds a ';', which ctest's discovery splits into two failing tests: use ',' or ':'\n";
      bad = true;
    }
    if (bad) std::exit(2);
  }
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
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

DOCTEST_REGISTER_LISTENER("weft_test_names", 1, TestNameCheck);

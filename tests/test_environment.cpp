// Linked into every test binary: where compiled code goes, and how skipped tests are reported.
//
// Compiled code goes to the build tree's test cache (WEFT_TEST_CACHE_DIR), never to the user's
// ~/.cache, unless the caller set WEFT_CACHE_DIR. ctest sets the same directory for every test
// (tests/CMakeLists.txt); this covers binaries run by hand.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>

#include "skip.h"

namespace weft::testing {
namespace {

[[maybe_unused]] const bool kTestCacheDir = [] { return setenv("WEFT_CACHE_DIR", WEFT_TEST_CACHE_DIR, 0) == 0; }();

#ifdef WEFT_TEST_EMU_CHECKS
// The kernel suites run every emulator launch with these checks (tests/CMakeLists.txt: hazard
// mode), so a weft kernel with an LDS race or a missing wait fails its test. A WEFT_EMU_CHECKS the
// caller set wins.
[[maybe_unused]] const bool kEmuChecks = [] { return setenv("WEFT_EMU_CHECKS", WEFT_TEST_EMU_CHECKS, 0) == 0; }();
#endif

std::string& test_case_name() {
  static std::string name;
  return name;
}

// Keeps the running case's name for report_skip, and keeps ';' out of the names.
struct TestCaseNames : doctest::IReporter {
  explicit TestCaseNames(const doctest::ContextOptions&) {}
  // ctest's doctest discovery (doctestAddTests.cmake) reads `--list-test-cases` as a CMake list,
  // so a ';' in a name splits it into entries that match no test and fail in CI only. The listing
  // refuses such a name instead: discovery, and with it the build, fails naming the test.
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
  // A filter that matches no case is an error, not an empty success: ctest cuts a case's name at
  // a ';', and the cut name would run nothing and pass.
  void test_run_end(const doctest::TestRunStats& stats) override {
    if (stats.numTestCases > 0 && stats.numTestCasesPassingFilters == 0) {
      std::cerr << "weft tests: no test case matches the filters (a name with ';' is cut by ctest: avoid ';' in names)\n";
      std::exit(1);
    }
  }
  void test_case_start(const doctest::TestCaseData& data) override { test_case_name() = data.m_name; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("weft_test_case_names", 1, TestCaseNames);

}  // namespace

const std::string& current_test_case() { return test_case_name(); }

void report_skip(const std::string& reason) {
  std::cout << "WEFT-SKIPPED: " << reason << std::endl;
  const char* dir = std::getenv("WEFT_TEST_SKIP_DIR");
  if (!dir || !*dir) return;
  // One file per skip (tests run in parallel): the case's name, then the reason.
  static std::atomic<int> n{0};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(std::filesystem::path(dir) / (std::to_string(getpid()) + "-" + std::to_string(n++) + ".skip"))
      << test_case_name() << "\n" << reason << "\n";
}

}  // namespace weft::testing

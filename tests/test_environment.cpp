// Linked into every test binary: compiled code goes to the build tree's test cache
// (WEFT_TEST_CACHE_DIR), never to the user's ~/.cache, unless the caller set WEFT_CACHE_DIR.
// ctest sets the same directory for every test (tests/CMakeLists.txt); this covers binaries
// run by hand.
#include <cstdlib>

namespace {

[[maybe_unused]] const bool kTestCacheDir = [] { return setenv("WEFT_CACHE_DIR", WEFT_TEST_CACHE_DIR, 0) == 0; }();

}  // namespace

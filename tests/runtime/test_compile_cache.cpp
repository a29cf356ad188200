// The compile cache: memory hits, disk hits across cache objects (as across processes), keys
// that differ by target or source, and corrupt or foreign files treated as misses.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "weft/runtime/compile_cache.h"

using weft::rt::CompileCache;

namespace {

std::filesystem::path fresh_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("weft-cache-test-" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace

TEST_CASE("compile once, then hit in memory and, from a new cache, on disk") {
  const auto dir = fresh_dir();
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return std::vector<uint8_t>{1, 2, 3, static_cast<uint8_t>(compiles)};
  };
  {
    CompileCache cache(dir);
    const auto a = cache.get("kernel source", "gfx950", compile);
    const auto b = cache.get("kernel source", "gfx950", compile);
    CHECK(a == b);
    CHECK(compiles == 1);
    CHECK(cache.stats().memory_hits == 1);
    CHECK(cache.stats().compiles == 1);
    cache.get("kernel source", "gfx942", compile);  // another target: another entry
    cache.get("other source", "gfx950", compile);   // another key: another entry
    CHECK(compiles == 3);
  }
  CompileCache later(dir);  // a later process
  CHECK(later.get("kernel source", "gfx950", compile) == std::vector<uint8_t>{1, 2, 3, 1});
  CHECK(later.stats().disk_hits == 1);
  CHECK(compiles == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE("corrupt or truncated cache files are misses, not errors") {
  const auto dir = fresh_dir();
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return std::vector<uint8_t>(100, 7);
  };
  CompileCache(dir).get("k", "gfx950", compile);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::resize_file(entry.path(), 30);  // truncate
  }
  CompileCache again(dir);
  CHECK(again.get("k", "gfx950", compile) == std::vector<uint8_t>(100, 7));
  CHECK(compiles == 2);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) std::ofstream(entry.path(), std::ios::binary) << "not a cache file at all";
  CHECK(CompileCache(dir).get("k", "gfx950", compile).size() == 100);
  CHECK(compiles == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a memory-only cache and an unwritable directory still compile and return the result") {
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return std::vector<uint8_t>{9};
  };
  CompileCache memory_only(std::nullopt);
  CHECK(memory_only.get("k", "gfx942", compile) == std::vector<uint8_t>{9});
  CHECK(memory_only.get("k", "gfx942", compile) == std::vector<uint8_t>{9});
  CHECK(compiles == 1);
  CompileCache unwritable(std::filesystem::path("/proc/weft-cannot-write-here"));
  CHECK(unwritable.get("k", "gfx942", compile) == std::vector<uint8_t>{9});
  CHECK(compiles == 2);
}

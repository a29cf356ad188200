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

TEST_CASE("a corrupted code object in the cache is detected, compiled again and rewritten") {
  const auto dir = fresh_dir();
  int compiles = 0;
  std::mt19937 rng(std::random_device{}());
  const std::vector<uint8_t> code = [&] {
    std::vector<uint8_t> v(4096);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    return v;
  }();
  auto compile = [&] {
    ++compiles;
    return code;
  };
  CompileCache(dir).get("k", "gfx950", compile);
  const auto path = CompileCache(dir).path_of("k", "gfx950");
  REQUIRE(std::filesystem::exists(path));
  // Flip one bit of one byte of the payload (the file's tail), at a random place.
  const auto size = std::filesystem::file_size(path);
  const auto at = size - 1 - std::uniform_int_distribution<uint64_t>(0, code.size() - 1)(rng);
  CAPTURE(at);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
  }
  CompileCache again(dir);
  CHECK(again.get("k", "gfx950", compile) == code);
  CHECK(again.stats().disk_hits == 0);
  CHECK(compiles == 2);
  CompileCache third(dir);  // the entry was rewritten whole
  CHECK(third.get("k", "gfx950", compile) == code);
  CHECK(third.stats().disk_hits == 1);
  CHECK(compiles == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a file whose name matches but whose key differs is a miss") {
  const auto dir = fresh_dir();
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return std::vector<uint8_t>{static_cast<uint8_t>(compiles)};
  };
  CompileCache cache(dir);
  cache.get("key one", "gfx942", compile);
  // Put the entry of "key one" where "key two" would be looked for (as a name-hash collision would).
  std::filesystem::copy_file(cache.path_of("key one", "gfx942"), cache.path_of("key two", "gfx942"));
  CHECK(CompileCache(dir).get("key two", "gfx942", compile) == std::vector<uint8_t>{2});
  CHECK(compiles == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tests keep compiled code in the build tree's cache directory, not the user's") {
  const auto dir = CompileCache::default_dir();
  REQUIRE(dir);
  const char* chosen = std::getenv("WEFT_CACHE_DIR");
  REQUIRE(chosen);  // by the caller, or else by tests/test_environment.cpp
  CHECK(*dir == std::filesystem::path(chosen));
  if (const char* home = std::getenv("HOME"))
    CHECK_FALSE(dir->lexically_normal().string().starts_with((std::filesystem::path(home) / ".cache").lexically_normal().string()));
}

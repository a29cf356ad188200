#include "weft/runtime/compile_cache.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "weft/dsl/error.h"

namespace weft::rt {

namespace {

// Bump when the cache file layout or what the key covers changes.
constexpr uint32_t kFormat = 1;
constexpr char kMagic[8] = {'w', 'e', 'f', 't', 'c', 'o', 'b', '1'};

// 64-bit FNV-1a with a chosen offset basis; two bases give two independent hashes.
uint64_t fnv1a(std::string_view s, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

CompileCache::CompileCache(std::optional<std::filesystem::path> dir) : dir_(std::move(dir)) {}

std::optional<std::filesystem::path> CompileCache::default_dir() {
  if (const char* d = std::getenv("WEFT_CACHE_DIR"); d && *d) return std::filesystem::path(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "weft";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "weft";
  return std::nullopt;
}

std::vector<uint8_t> CompileCache::get(std::string_view key, std::string_view target,
                                       const std::function<std::vector<uint8_t>()>& compile) {
  // The file name comes from one hash of (target, key); a second, independent hash stored in the
  // file guards against a collision of the first.
  const std::string material = std::string(target) + '\0' + std::to_string(kFormat) + '\0' + std::string(key);
  const uint64_t name_hash = fnv1a(material, 0xcbf29ce484222325ull), check = fnv1a(material, 0x84222325cbf29ce4ull) ^ material.size();
  const std::string name = std::string(target) + "-" + hex64(name_hash) + ".hsaco";
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(name); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  if (auto bytes = read_disk(name, check)) {
    std::lock_guard lock(mutex_);
    ++stats_.disk_hits;
    return memory_[name] = std::move(*bytes);
  }
  std::vector<uint8_t> bytes = compile();
  write_disk(name, check, bytes);
  std::lock_guard lock(mutex_);
  ++stats_.compiles;
  return memory_[name] = std::move(bytes);
}

CompileCache::Stats CompileCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

// File: magic (8 bytes), check hash (8), payload size (8), payload. Anything else is a miss.
std::optional<std::vector<uint8_t>> CompileCache::read_disk(const std::string& name, uint64_t check) const {
  if (!dir_) return std::nullopt;
  std::ifstream in(*dir_ / name, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < 24 || std::memcmp(file.data(), kMagic, 8) != 0) return std::nullopt;
  uint64_t stored_check = 0, size = 0;
  std::memcpy(&stored_check, file.data() + 8, 8);
  std::memcpy(&size, file.data() + 16, 8);
  if (stored_check != check || size != file.size() - 24) return std::nullopt;
  return std::vector<uint8_t>(file.begin() + 24, file.end());
}

// Written to a file of its own and renamed into place, so a reader never sees half a file and
// concurrent writers of the same entry do not interleave. A cache that cannot be written is not
// an error: the code object is still returned.
void CompileCache::write_disk(const std::string& name, uint64_t check, const std::vector<uint8_t>& bytes) const {
  if (!dir_) return;
  std::error_code ec;
  std::filesystem::create_directories(*dir_, ec);
  if (ec) return;
  const std::filesystem::path final_path = *dir_ / name;
  const std::filesystem::path partial = *dir_ / (name + ".partial." + std::to_string(getpid()));
  {
    std::ofstream out(partial, std::ios::binary);
    const uint64_t size = bytes.size();
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&check), 8);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::filesystem::remove(partial, ec);
      return;
    }
  }
  std::filesystem::rename(partial, final_path, ec);
  if (ec) std::filesystem::remove(partial, ec);
}

}  // namespace weft::rt

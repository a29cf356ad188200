#include "weft/runtime/compile_cache.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "weft/dsl/error.h"

namespace weft::rt {

namespace {

// Bump when the cache file layout changes (what a key holds is the caller's: compiler_identity.h).
constexpr char kMagic[8] = {'w', 'e', 'f', 't', 'c', 'o', 'b', '2'};
constexpr size_t kHeader = 32;  // magic, key size, payload size, payload checksum

// 64-bit FNV-1a. Each step is a bijection of the state, so a payload that differs from the one
// written in any single byte never has the same checksum.
uint64_t fnv1a(const uint8_t* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
uint64_t fnv1a(std::string_view s) { return fnv1a(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string material_of(std::string_view key, std::string_view target) { return std::string(target) + '\0' + std::string(key); }

// The entry's file name: the target and a hash of the whole key.
std::string file_name(const std::string& material, std::string_view target) {
  return std::string(target) + "-" + hex64(fnv1a(material)) + (target.starts_with("sm_") ? ".cubin" : ".hsaco");
}

uint64_t read_u64(const std::vector<uint8_t>& file, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, file.data() + at, 8);
  return v;
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
  // The whole key (with the target) is kept in the file and compared byte for byte, so a
  // collision of the file name's hash is a miss, never a wrong hit.
  const std::string material = material_of(key, target), name = file_name(material, target);
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(material); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  if (auto bytes = read_disk(name, material)) {
    std::lock_guard lock(mutex_);
    ++stats_.disk_hits;
    return memory_[material] = std::move(*bytes);
  }
  std::vector<uint8_t> bytes = compile();
  write_disk(name, material, bytes);
  std::lock_guard lock(mutex_);
  ++stats_.compiles;
  return memory_[material] = std::move(bytes);
}

CompileCache::Stats CompileCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::filesystem::path CompileCache::path_of(std::string_view key, std::string_view target) const {
  if (!dir_) return {};
  return *dir_ / file_name(material_of(key, target), target);
}

// File: magic (8 bytes), key size (8), payload size (8), payload checksum (8), key, payload.
// A file of another layout, for another key, of another size or whose payload does not match
// its checksum (a torn or corrupted file) is a miss: the caller compiles and rewrites it.
std::optional<std::vector<uint8_t>> CompileCache::read_disk(const std::string& name, const std::string& material) const {
  if (!dir_) return std::nullopt;
  std::ifstream in(*dir_ / name, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < kHeader || std::memcmp(file.data(), kMagic, 8) != 0) return std::nullopt;
  const uint64_t key_size = read_u64(file, 8), size = read_u64(file, 16), checksum = read_u64(file, 24);
  if (key_size != material.size() || key_size > file.size() - kHeader || size != file.size() - kHeader - key_size) return std::nullopt;
  if (std::memcmp(file.data() + kHeader, material.data(), material.size()) != 0) return std::nullopt;
  const uint8_t* payload = file.data() + kHeader + key_size;
  if (fnv1a(payload, size) != checksum) return std::nullopt;
  return std::vector<uint8_t>(payload, payload + size);
}

// Written to a file of its own and renamed into place, so a reader never sees half a file and
// concurrent writers of the same entry do not interleave. A cache that cannot be written is not
// an error: the code object is still returned.
void CompileCache::write_disk(const std::string& name, const std::string& material, const std::vector<uint8_t>& bytes) const {
  if (!dir_) return;
  std::error_code ec;
  std::filesystem::create_directories(*dir_, ec);
  if (ec) return;
  const std::filesystem::path final_path = *dir_ / name;
  static std::atomic<uint64_t> writes{0};
  const std::filesystem::path partial = *dir_ / (name + ".partial." + std::to_string(getpid()) + "." + std::to_string(writes++));
  {
    std::ofstream out(partial, std::ios::binary);
    const uint64_t header[3] = {material.size(), bytes.size(), fnv1a(bytes.data(), bytes.size())};
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(material.data(), static_cast<std::streamsize>(material.size()));
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

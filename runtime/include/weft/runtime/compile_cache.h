// Compiled code objects, kept in memory and on disk and keyed by what they were compiled from
// (the kernel and the compiler's identity: compiler_identity.h) and the target, so that a
// kernel built again in this or a later process is not compiled again. Each file holds its
// whole key and a checksum of its code object: a file for another key, truncated or corrupted,
// is a miss (compiled again and rewritten), never a wrong hit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::rt {

class CompileCache {
 public:
  // `dir`: where code objects are kept across processes; nullopt keeps them in memory only.
  explicit CompileCache(std::optional<std::filesystem::path> dir);
  // $WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft, else ~/.cache/weft (memory only if none is set).
  static std::optional<std::filesystem::path> default_dir();

  // The code object compiled from `key` for `target`; `compile` runs on a miss. `key` must hold
  // everything the result depends on besides the target (source or graph hash, options).
  std::vector<uint8_t> get(std::string_view key, std::string_view target, const std::function<std::vector<uint8_t>()>& compile);

  struct Stats {
    uint64_t memory_hits = 0, disk_hits = 0, compiles = 0;
  };
  Stats stats() const;
  // The file that holds the entry for (key, target); empty for a memory-only cache.
  std::filesystem::path path_of(std::string_view key, std::string_view target) const;

 private:
  std::optional<std::vector<uint8_t>> read_disk(const std::string& name, const std::string& material) const;
  void write_disk(const std::string& name, const std::string& material, const std::vector<uint8_t>& bytes) const;

  std::optional<std::filesystem::path> dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<uint8_t>> memory_;  // by target and whole key
  Stats stats_;
};

}  // namespace weft::rt

#include "weft/runtime/device.h"

#include <bit>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "devices.h"
#include "weft/dsl/error.h"

namespace weft::rt {

void check_copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes) {
  if (bytes > src.bytes || bytes > dst.bytes)
    throw Error("copy of " + std::to_string(bytes) + " bytes from a " + std::to_string(src.bytes) + "-byte buffer into a " + std::to_string(dst.bytes) +
                "-byte buffer");
}

Arg Arg::f32(float v) { return {Kind::F32, std::bit_cast<uint32_t>(v)}; }

double time_on_device(Device& device, const std::function<void()>& work) {
  const std::shared_ptr<Event> start = device.record_event();
  work();
  const std::shared_ptr<Event> end = device.record_event();
  return device.elapsed_seconds(*start, *end);
}

EmulatorOptions EmulatorOptions::from_environment() {
  EmulatorOptions o;
  if (const char* v = std::getenv("WEFT_EMU_MAX_INSTRUCTIONS"); v && *v) {
    uint64_t n = 0;
    const char* end = v + std::strlen(v);
    const auto r = std::from_chars(v, end, n);
    if (r.ec != std::errc() || r.ptr != end)
      throw Error(std::string("WEFT_EMU_MAX_INSTRUCTIONS='") + v + "' is not a number of instructions (0: no limit)");
    o.max_wave_instructions = n;
  }
  if (const char* v = std::getenv("WEFT_EMU_SCHEDULE_SEED"); v && *v) {
    const char* end = v + std::strlen(v);
    const auto r = std::from_chars(v, end, o.schedule_seed);
    if (r.ec != std::errc() || r.ptr != end) throw Error(std::string("WEFT_EMU_SCHEDULE_SEED='") + v + "' is not a number");
  }
  if (const char* v = std::getenv("WEFT_EMU_TIMELINE"); v && *v) o.timeline_path = v;
  if (const char* v = std::getenv("WEFT_EMU_CHECKS"); v && *v) {
    std::string_view rest = v;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view check = rest.substr(0, comma);
      if (check == "lds-reads") o.check_lds_reads = true;
      else if (check == "hazards") o.sanitize = true;
      else if (check != "none" && !check.empty())
        throw Error("WEFT_EMU_CHECKS: unknown check '" + std::string(check) +
                    "' (lds-reads, hazards, none; out-of-bounds accesses are always checked)");
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return o;
}

std::unique_ptr<Device> open_device(std::string_view spec) {
  // Only the emulator reads its options (and a bad value in them fails only where it is used).
  return open_device(spec, spec.starts_with("emu") ? EmulatorOptions::from_environment() : EmulatorOptions{});
}

std::unique_ptr<Device> open_device(std::string_view spec, const EmulatorOptions& emulator) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon), rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (kind == "emu") {
    if (rest.empty()) throw Error("device 'emu' needs a target: emu:gfx950 or emu:gfx942");
    return open_emulator(rest, emulator);
  }
  if (kind == "hip" || kind == "cuda") {
    int index = 0;
    if (!rest.empty()) {
      try {
        size_t used = 0;
        index = std::stoi(std::string(rest), &used);
        if (used != rest.size() || index < 0) throw std::invalid_argument("index");
      } catch (const std::exception&) {
        throw Error("device '" + std::string(spec) + "': the GPU index must be a number (" + std::string(kind) + ":0, " +
                    std::string(kind) + ":1, ...)");
      }
    }
    return kind == "hip" ? open_hip(index) : open_cuda(index);
  }
  throw Error("unknown device '" + std::string(spec) + "' (emu:gfx950, emu:gfx942, hip[:N], cuda[:N])");
}

}  // namespace weft::rt

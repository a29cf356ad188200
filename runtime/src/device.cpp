#include "weft/runtime/device.h"

#include <bit>

#include "devices.h"
#include "weft/dsl/error.h"

namespace weft::rt {

Arg Arg::f32(float v) { return {Kind::F32, std::bit_cast<uint32_t>(v)}; }

double time_on_device(Device& device, const std::function<void()>& work) {
  const std::shared_ptr<Event> start = device.record_event();
  work();
  const std::shared_ptr<Event> end = device.record_event();
  return device.elapsed_seconds(*start, *end);
}

std::unique_ptr<Device> open_device(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon), rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (kind == "emu") {
    if (rest.empty()) throw Error("device 'emu' needs a target: emu:gfx950 or emu:gfx942");
    return open_emulator(rest);
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

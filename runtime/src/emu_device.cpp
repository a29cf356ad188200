// emu:gfx942 / emu:gfx950: the CDNA emulator as a device. Launches run to completion
// (synchronize has nothing to wait for); the emulator's reports surface as weft::Error.
#include <chrono>
#include <cstring>
#include <fstream>

#include "devices.h"
#include "weft/dsl/error.h"
#include "weft/emulator/emulator.h"
#include "weft/emulator/timeline.h"

namespace weft::rt {

std::vector<uint8_t> pack_args(const emu::Kernel& kernel, std::span<const Arg> args) {
  std::vector<emu::ArgValue> values;
  for (const Arg& a : args) {
    switch (a.kind) {
      case Arg::Kind::Buffer: values.push_back(emu::ArgValue::pointer(a.bits)); break;
      case Arg::Kind::I32: values.push_back({emu::ArgValue::Kind::I32, a.bits}); break;
      case Arg::Kind::U32: values.push_back({emu::ArgValue::Kind::U32, a.bits}); break;
      case Arg::Kind::I64: values.push_back({emu::ArgValue::Kind::I64, a.bits}); break;
      case Arg::Kind::U64: values.push_back({emu::ArgValue::Kind::U64, a.bits}); break;
      case Arg::Kind::F32: values.push_back({emu::ArgValue::Kind::F32, a.bits}); break;
      case Arg::Kind::TensorMap: throw Error("kernel " + kernel.name + ": a TMA tensor map argument; only NVIDIA sm_90 devices take one");
    }
  }
  return emu::pack_kernel_args(kernel, values);
}

namespace {

class EmuModule : public Module {
 public:
  explicit EmuModule(emu::CodeObject code) : code_(std::move(code)) {}
  std::vector<std::string> kernels() const override {
    std::vector<std::string> names;
    for (const emu::Kernel& k : code_.kernels()) names.push_back(k.name);
    return names;
  }
  const emu::CodeObject& code() const { return code_; }

 private:
  emu::CodeObject code_;
};

// The emulator's launches run to completion in launch(), so the host's clock at record time
// is the point in the device's work.
class EmuEvent : public Event {
 public:
  explicit EmuEvent(const void* device) : device_(device), time_(std::chrono::steady_clock::now()) {}
  const void* device() const { return device_; }
  std::chrono::steady_clock::time_point time() const { return time_; }

 private:
  const void* device_;
  std::chrono::steady_clock::time_point time_;
};

class EmuDevice : public Device {
 public:
  EmuDevice(emu::Arch arch, const EmulatorOptions& options) : arch_(arch), options_(options) {}
  std::string name() const override { return std::string("emu:") + emu::arch_name(arch_); }
  std::string arch() const override { return emu::arch_name(arch_); }

  Buffer allocate(size_t bytes, std::string label) override { return {memory_.allocate(bytes, std::move(label)), bytes}; }
  void free(const Buffer& buffer) override {
    try {
      memory_.free(buffer.address);
    } catch (const Error& e) {
      throw Error("device " + name() + ": " + e.what());
    }
  }

  void copy_to_device(const Buffer& dst, std::span<const uint8_t> src) override {
    check_range(dst, src.size(), "copy to");
    std::memcpy(memory_.data(dst.address), src.data(), src.size());
  }
  void copy_from_device(std::span<uint8_t> dst, const Buffer& src) override {
    check_range(src, dst.size(), "copy from");
    std::memcpy(dst.data(), memory_.data(src.address), dst.size());
  }
  void copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes) override {
    check_range(src, bytes, "copy from");
    check_range(dst, bytes, "copy to");
    std::memmove(memory_.data(dst.address), memory_.data(src.address), bytes);
  }

  std::shared_ptr<Module> load(std::vector<uint8_t> code_object) override {
    emu::CodeObject code = emu::CodeObject::load(std::move(code_object));
    if (code.arch() != arch_)
      throw Error(std::string("the code object is for ") + emu::arch_name(code.arch()) + ", the device " + name() + " runs " +
                  emu::arch_name(arch_));
    return std::make_shared<EmuModule>(std::move(code));
  }

  void launch(Module& module, const std::string& kernel, Dim3 grid, Dim3 block, std::span<const Arg> args, LaunchMode mode) override {
    auto* m = dynamic_cast<EmuModule*>(&module);
    if (!m) throw Error("device " + name() + ": the module was loaded on another device");
    emu::LaunchOptions o;
    if (options_.max_wave_instructions) o.max_wave_instructions = *options_.max_wave_instructions;
    o.check_lds_reads = options_.check_lds_reads;
    o.sanitize = options_.sanitize;
    o.schedule_seed = options_.schedule_seed;
    o.host_threads = options_.host_threads;
    o.grid = {grid.x, grid.y, grid.z};
    o.block = {block.x, block.y, block.z};
    o.cooperative = mode.cooperative;  // a grid barrier: every workgroup resident, in turns
    o.kernarg = pack_args(m->code().kernel(kernel), args);
    if (!options_.timeline_path.empty()) o.record_workgroup = 0;
    const emu::RunReport report = emu::run_kernel(m->code(), kernel, memory_, o);
    if (report.recording) write_timeline(*report.recording);
    ++launches_;
  }

  void synchronize() override {}

  std::shared_ptr<Event> record_event() override { return std::make_shared<EmuEvent>(this); }
  double elapsed_seconds(const Event& start, const Event& end) override {
    const auto* a = dynamic_cast<const EmuEvent*>(&start);
    const auto* b = dynamic_cast<const EmuEvent*>(&end);
    if (!a || !b || a->device() != this || b->device() != this) throw Error("device " + name() + ": an event recorded on another device");
    return std::chrono::duration<double>(b->time() - a->time()).count();
  }

 private:
  // The launch's timeline, where EmulatorOptions::timeline_path says.
  void write_timeline(const emu::WorkgroupRecording& recording) const {
    std::string path = options_.timeline_path;
    if (const size_t at = path.find("{launch}"); at != std::string::npos) path.replace(at, 8, std::to_string(launches_));
    const emu::Timeline t = emu::model_timeline(recording, emu::cu_model(recording.arch));
    std::ofstream out(path);
    if (path.ends_with(".svg")) emu::write_timeline_svg(t, recording, out);
    else if (path.ends_with(".txt")) emu::write_timeline_stats(t, recording, out);
    else emu::write_chrome_trace(t, recording, out);
    if (!out.flush()) throw Error("device " + name() + ": cannot write the timeline to '" + path + "'");
  }

  void check_range(const Buffer& b, size_t bytes, const char* what) const {
    if (!memory_.live(b.address) || memory_.size(b.address) != b.bytes)
      throw Error(std::string("device ") + name() + ": " + what + " a buffer this device does not hold: " +
                  memory_.describe_nearest(b.address));
    if (bytes > b.bytes)
      throw Error(std::string("device ") + name() + ": " + what + " a buffer of " + std::to_string(b.bytes) + " bytes: " +
                  std::to_string(bytes) + " bytes requested");
  }

  emu::Arch arch_;
  EmulatorOptions options_;
  emu::GlobalMemory memory_;
  uint64_t launches_ = 0;
};

}  // namespace

std::unique_ptr<Device> open_emulator(std::string_view target, const EmulatorOptions& options) {
  if (target == "gfx950") return std::make_unique<EmuDevice>(emu::Arch::Gfx950, options);
  if (target == "gfx942") return std::make_unique<EmuDevice>(emu::Arch::Gfx942, options);
  throw Error("the emulator runs gfx942 and gfx950, not '" + std::string(target) + "'");
}

}  // namespace weft::rt

// The Device interface: where kernels run. `open_device("emu:gfx950")` is weft's CDNA emulator,
// `"hip"` / `"hip:N"` an AMD GPU through the HIP runtime, `"cuda"` / `"cuda:N"` an NVIDIA GPU
// through the CUDA driver API (both loaded with dlopen; a clear error where they are absent).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/dsl/dtype.h"

namespace weft::rt {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// A device allocation. The handle is the device address (emulator and HIP alike).
struct Buffer {
  uint64_t address = 0;
  size_t bytes = 0;
};

// A TMA tensor map as the kernel's parameter describes it (lower::KernelParam::Kind::TensorMap):
// a 2-D row-major tensor in device memory and the box a TMA load copies. The CUDA device encodes
// it into a CUtensorMap (cuTensorMapEncodeTiled) at launch; other devices reject it.
struct TensorMapArg {
  uint64_t address = 0;             // the buffer's device address (16-byte aligned)
  DType dtype;                      // the element type
  uint64_t rows = 0, cols = 0;      // the tensor's shape; cols * element_bytes a multiple of 16
  uint32_t box_rows = 0, box_cols = 0;
  int swizzle_bytes = 0;  // the box's swizzle: 0 (none), 64 or 128 (WgmmaSwizzle)
};

// One kernel argument, in kernel order: a buffer, a scalar of the kernel's parameter type, or a
// tensor map (passed by value: 128 bytes).
struct Arg {
  enum class Kind { Buffer, I32, U32, I64, U64, F32, TensorMap };
  Kind kind = Kind::Buffer;
  uint64_t bits = 0;
  TensorMapArg tensor_map{};  // TensorMap only
  static Arg buffer(const Buffer& b) { return {Kind::Buffer, b.address}; }
  static Arg i32(int32_t v) { return {Kind::I32, static_cast<uint32_t>(v)}; }
  static Arg u32(uint32_t v) { return {Kind::U32, v}; }
  static Arg i64(int64_t v) { return {Kind::I64, static_cast<uint64_t>(v)}; }
  static Arg u64(uint64_t v) { return {Kind::U64, v}; }
  static Arg f32(float v);
  static Arg tensor(const TensorMapArg& t) { return {Kind::TensorMap, 0, t}; }
};

// A point in a device's work, for timing launches: record one before and one after, then ask
// the device for the seconds between them (Device::record_event, Device::elapsed_seconds).
class Event {
 public:
  virtual ~Event() = default;
};

// How a launch orders itself after the device's work before it. `serialized`: it starts once that
// work has completed. `programmatic`: for a kernel that waits at entry until the kernel before it
// has completed and its writes are visible (KernelInfo::dependent_launch), it may start launching
// as soon as that kernel lets it (CUDA's programmatic dependent launch, sm_90 and newer). A device
// without it launches serialized, which the kernel's wait then finds done.
enum class LaunchOrder { serialized, programmatic };

// How a launch runs: its order, and `cooperative`: every workgroup resident at once, which a
// kernel with a grid barrier needs (grid_barrier, weft/dsl/builder.h). CUDA launches it
// cooperatively, an error naming the kernel where the GPU cannot hold the grid; the emulator keeps
// every workgroup resident and runs them in turns (emu::LaunchOptions::cooperative); HIP devices
// refuse it.
struct LaunchMode {
  LaunchOrder order = LaunchOrder::serialized;
  bool cooperative = false;
};

// A code object loaded on a device.
class Module {
 public:
  virtual ~Module() = default;
  virtual std::vector<std::string> kernels() const = 0;
};

// One host thread at a time uses a Device: a device keeps state between calls (its allocations,
// loaded kernels, the CUDA device's encoded tensor maps) without locks, so that a launch costs no
// synchronization. Threads that share one must take turns (a mutex of the caller's). Two devices
// opened on one GPU are independent objects, but a CUDA device uses the GPU's primary context and
// its default stream: their work runs in series, and synchronize() waits for both.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "emu:gfx950", "hip:0 (gfx942)"
  virtual std::string arch() const = 0;  // the target to compile for: "gfx950", "sm_90"
  // The GPU's compute units (NVIDIA multiprocessors), which a persistent kernel sizes its grid
  // by; nullopt where the device does not say (the emulator, which runs workgroups one by one).
  virtual std::optional<int64_t> compute_units() const { return std::nullopt; }
  virtual Buffer allocate(size_t bytes, std::string label) = 0;
  // Frees a buffer this device allocated. Throws weft::Error for one it did not allocate or
  // freed already. On the emulator a later access to it is an out-of-bounds error.
  virtual void free(const Buffer& buffer) = 0;
  virtual void copy_to_device(const Buffer& dst, std::span<const uint8_t> src) = 0;
  virtual void copy_from_device(std::span<uint8_t> dst, const Buffer& src) = 0;
  // The first `bytes` of `src` into `dst`, both this device's, in the device's order of work
  // (after the launches before it, before those after it: an event pair times it). Throws
  // weft::Error where either buffer is shorter.
  virtual void copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes) = 0;
  // Throws weft::Error if the code object is not for this device's target.
  virtual std::shared_ptr<Module> load(std::vector<uint8_t> code_object) = 0;
  // Arguments are checked against the kernel's metadata (count, buffer or scalar, size).
  virtual void launch(Module& module, const std::string& kernel, Dim3 grid, Dim3 block, std::span<const Arg> args,
                      LaunchMode mode) = 0;
  virtual void synchronize() = 0;

  // Timing: an event marks the point in the device's work where it is recorded (after the
  // launches before it, before those after it). CUDA and HIP events time on the GPU; the
  // emulator, whose launches run to completion, reads the host's steady clock.
  virtual std::shared_ptr<Event> record_event() = 0;
  // Seconds from `start` to `end` (both recorded on this device), waiting for `end` to complete.
  // Throws weft::Error for an event of another device.
  virtual double elapsed_seconds(const Event& start, const Event& end) = 0;
  // Keeps the device busy for about `seconds` (a spin on the GPU), in its order of work, so that
  // what the host enqueues meanwhile starts back to back when it ends: an event pair around that
  // work then times the device's part alone, not the host's time to enqueue it (NVBench's
  // blocking kernel, done with a timed spin, which cannot deadlock). Returns false, doing nothing,
  // where the device has no such work: the emulator (its launches run as they are made) and HIP.
  virtual bool hold(double seconds) {
    (void)seconds;
    return false;
  }
};

// Seconds the device spends on `work` (its launches), timed with events recorded before and
// after it.
double time_on_device(Device& device, const std::function<void()>& work);

// How the emulator devices (emu:gfx942, emu:gfx950) run launches; other devices ignore it.
struct EmulatorOptions {
  // The most instructions one wave may execute before its launch fails with an error naming
  // the kernel, workgroup, wave and PC (a kernel that never ends); 0: no limit; nullopt: the
  // emulator's default (emu::LaunchOptions::kDefaultMaxWaveInstructions, 2^28).
  std::optional<uint64_t> max_wave_instructions;
  // Report a read of LDS the workgroup never wrote (out-of-bounds accesses are always reported).
  bool check_lds_reads = false;
  // Hazard mode (docs/emulator.md): LDS races, reads before s_waitcnt, reads of what nothing wrote;
  // a launch that sees one throws emu::HazardError (a weft::Error) listing every report.
  bool sanitize = false;
  uint64_t schedule_seed = 1;  // the order hazard mode interleaves waves in
  int host_threads = 0;  // host threads running workgroups; 0: all
  // Where each launch writes the timeline of its first workgroup (emu/timeline.h, on the model of
  // one CU): a Chrome/Perfetto trace; an SVG picture when the name ends in ".svg"; the table of
  // MFMA-busy fractions and stall cycles when it ends in ".txt". "{launch}"
  // in the name becomes the launch's number on this device (0, 1, ...); without it every launch
  // overwrites the file. Empty: none.
  std::string timeline_path;

  // The defaults, changed by the environment:
  //   WEFT_EMU_MAX_INSTRUCTIONS=N   max_wave_instructions (0: no limit)
  //   WEFT_EMU_CHECKS=lds-reads     check_lds_reads (a comma-separated list; "none" for none)
  //   WEFT_EMU_CHECKS=hazards       sanitize (hazard mode)
  //   WEFT_EMU_SCHEDULE_SEED=N      schedule_seed
  //   WEFT_EMU_TIMELINE=PATH        timeline_path
  // Throws weft::Error naming the variable for a value it cannot read.
  static EmulatorOptions from_environment();
};

// "emu:gfx950", "emu:gfx942", "hip", "hip:N", "cuda", "cuda:N". Throws weft::Error naming the problem (unknown
// kind, unknown target, no HIP runtime, no such GPU).
std::unique_ptr<Device> open_device(std::string_view spec);
// The same, with the emulator's options given (the environment is not read).
std::unique_ptr<Device> open_device(std::string_view spec, const EmulatorOptions& emulator);

}  // namespace weft::rt

// The devices behind open_device().
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "weft/emulator/code_object.h"
#include "weft/emulator/kernel_args.h"
#include "weft/runtime/device.h"

namespace weft::rt {

std::unique_ptr<Device> open_emulator(std::string_view target, const EmulatorOptions& options);
std::unique_ptr<Device> open_hip(int index);
std::unique_ptr<Device> open_cuda(int index);

// The CUDA device ordinal of a device opened by open_cuda, nothing for any other device.
std::optional<int> cuda_ordinal(const Device& device);

// Throws weft::Error where a device-to-device copy of `bytes` reads or writes past either buffer
// (Device::copy_on_device, shared by the GPU devices).
void check_copy_on_device(const Buffer& dst, const Buffer& src, size_t bytes);

// Packs runtime arguments as the kernel's metadata lays them out (shared by every AMD device).
std::vector<uint8_t> pack_args(const emu::Kernel& kernel, std::span<const Arg> args);

}  // namespace weft::rt

// Mesh: devices on a grid, opened from a spec ("emu:gfx950 x 2x2", "cuda:0,1").
#include "weft/runtime/mesh.h"

#include <charconv>
#include <optional>
#include <set>

#include "weft/dsl/error.h"

namespace weft::rt {
namespace {

constexpr int64_t kMaxMeshDevices = 4096;

// "4" or "2x2": positive sizes, at most kMaxMeshDevices devices in all.
std::vector<int64_t> parse_mesh_shape(std::string_view text, std::string_view spec) {
  std::vector<int64_t> shape;
  int64_t devices = 1;
  for (std::string_view rest = text;;) {
    const size_t x = rest.find('x');
    const std::string_view part = rest.substr(0, x);
    int64_t n = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size() || n < 1)
      throw Error("mesh '" + std::string(spec) + "': the shape '" + std::string(text) + "' is not sizes like 4 or 2x2 (each at least 1)");
    if (n > kMaxMeshDevices / devices)
      throw Error("mesh '" + std::string(spec) + "': more than " + std::to_string(kMaxMeshDevices) + " devices");
    devices *= n;
    shape.push_back(n);
    if (x == std::string_view::npos) return shape;
    rest.remove_prefix(x + 1);
  }
}

// The device specs of a mesh: "emu:gfx950" repeated; "cuda:0,1" one per index, each named once;
// "cuda" GPUs 0..n-1.
std::vector<std::string> device_specs(std::string_view devices, std::optional<int64_t> count, std::string_view spec) {
  const size_t colon = devices.find(':');
  const std::string kind(devices.substr(0, colon));
  const std::string_view rest = colon == std::string_view::npos ? "" : devices.substr(colon + 1);
  std::vector<std::string> out;
  if (kind == "emu") {
    out.assign(static_cast<size_t>(count.value_or(1)), std::string(devices));
    return out;
  }
  if (kind != "cuda" && kind != "hip")
    throw Error("mesh '" + std::string(spec) + "': unknown device kind '" + kind + "' (emu:TARGET x SHAPE, cuda:0,1, hip:0,1 x 2)");
  if (rest.empty()) {
    for (int64_t i = 0; i < count.value_or(1); ++i) out.push_back(kind + ":" + std::to_string(i));
    return out;
  }
  std::set<std::string_view> seen;
  for (std::string_view r = rest;;) {
    const size_t comma = r.find(',');
    const std::string_view index = r.substr(0, comma);
    if (index.empty()) throw Error("mesh '" + std::string(spec) + "': an empty GPU index in '" + std::string(rest) + "'");
    if (!seen.insert(index).second) throw Error("mesh '" + std::string(spec) + "': GPU " + std::string(index) + " is listed twice");
    out.push_back(kind + ":" + std::string(index));
    if (comma == std::string_view::npos) break;
    r.remove_prefix(comma + 1);
  }
  if (count && static_cast<int64_t>(out.size()) != *count)
    throw Error("mesh '" + std::string(spec) + "': " + std::to_string(out.size()) + " devices listed for a mesh of " + std::to_string(*count));
  return out;
}

}  // namespace

std::string shape_text(std::span<const int64_t> shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

Mesh::Mesh(std::vector<std::unique_ptr<Device>> devices, std::vector<int64_t> shape) : devices_(std::move(devices)), shape_(std::move(shape)) {
  int64_t count = 1;
  for (int64_t d : shape_) count = d >= 1 && d <= kMaxMeshDevices && count <= kMaxMeshDevices ? count * d : 0;
  if (shape_.empty() || devices_.empty() || count != static_cast<int64_t>(devices_.size()))
    throw Error("mesh: a shape of " + shape_text(shape_) + " for " + std::to_string(devices_.size()) + " devices");
  for (const auto& d : devices_)
    if (d->arch() != devices_.front()->arch())
      throw Error("mesh: devices " + devices_.front()->name() + " and " + d->name() + " have different targets; a mesh kernel compiles once");
}

Mesh Mesh::open(std::string_view spec) {
  const size_t x = spec.find(" x ");
  const std::string_view devices = spec.substr(0, x);
  std::optional<std::vector<int64_t>> shape;
  int64_t count = 1;
  if (x != std::string_view::npos) {
    shape = parse_mesh_shape(spec.substr(x + 3), spec);
    for (int64_t d : *shape) count *= d;
  }
  const auto specs = device_specs(devices, shape ? std::optional(count) : std::nullopt, spec);
  if (!shape) shape = std::vector<int64_t>{static_cast<int64_t>(specs.size())};
  std::vector<std::unique_ptr<Device>> opened;
  for (const std::string& s : specs) opened.push_back(open_device(s));
  return Mesh(std::move(opened), std::move(*shape));
}

std::vector<int64_t> Mesh::coordinates(size_t linear) const {
  std::vector<int64_t> c(shape_.size());
  auto rest = static_cast<int64_t>(linear);
  for (size_t k = shape_.size(); k-- > 0;) {
    c[k] = rest % shape_[k];
    rest /= shape_[k];
  }
  return c;
}

std::string Mesh::name() const { return devices_.front()->name() + " x " + shape_text(shape_); }

}  // namespace weft::rt

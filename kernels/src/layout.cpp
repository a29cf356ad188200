#include "weft/kernels/layout.h"

#include <algorithm>
#include <bit>
#include <set>

#include "weft/dsl/error.h"

namespace weft::tile {
namespace {

int total(const std::vector<LayoutDim>& dims) {
  int n = 0;
  for (const LayoutDim& d : dims) n += d.bits;
  return n;
}

void check_width(const std::vector<LayoutDim>& dims, const char* side) {
  for (const LayoutDim& d : dims)
    if (d.bits < 0) throw Error("layout: " + std::string(side) + " dimension " + d.name + " has a negative size");
  if (total(dims) > 64) throw Error("layout: more than 64 " + std::string(side) + " bits");
}

// The bit position of dimension `name` within the packed form of `dims`, or -1.
int offset_of(const std::vector<LayoutDim>& dims, const std::string& name) {
  int at = 0;
  for (const LayoutDim& d : dims) {
    if (d.name == name) return at;
    at += d.bits;
  }
  return -1;
}

// Dimensions of a and b merged: a's order, then b's new ones; a shared one has both sizes added.
std::vector<LayoutDim> merged(const std::vector<LayoutDim>& a, const std::vector<LayoutDim>& b) {
  std::vector<LayoutDim> out = a;
  for (const LayoutDim& d : b) {
    auto it = std::find_if(out.begin(), out.end(), [&](const LayoutDim& x) { return x.name == d.name; });
    if (it == out.end()) out.push_back(d);
    else it->bits += d.bits;
  }
  return out;
}

// Moves a packed value of `from` into the packing of `to`, each dimension shifted up by
// `shift[name]` bits within its new place (b's part of a product).
uint64_t repack(uint64_t v, const std::vector<LayoutDim>& from, const std::vector<LayoutDim>& to, const std::map<std::string, int>& shift) {
  uint64_t out = 0;
  int at = 0;
  for (const LayoutDim& d : from) {
    if (d.bits == 0) continue;
    const uint64_t part = d.bits ? (v >> at) & ((d.bits == 64 ? 0 : (uint64_t{1} << d.bits)) - 1) : 0;
    auto s = shift.find(d.name);
    out |= part << (offset_of(to, d.name) + (s == shift.end() ? 0 : s->second));
    at += d.bits;
  }
  return out;
}

}  // namespace

Layout::Layout(std::vector<LayoutDim> in, std::vector<LayoutDim> out, const std::vector<Coords>& images) : in_(std::move(in)), out_(std::move(out)) {
  check_width(in_, "input");
  check_width(out_, "output");
  if (static_cast<int>(images.size()) != in_bits())
    throw Error("layout: " + std::to_string(images.size()) + " images for " + std::to_string(in_bits()) + " input bits");
  for (const Coords& c : images) {
    uint64_t packed = 0;
    for (const auto& [name, value] : c) {
      const int at = offset_of(out_, name);
      if (at < 0) throw Error("layout: an image names output dimension " + name + ", which the layout does not have");
      const int bits = std::find_if(out_.begin(), out_.end(), [&](const LayoutDim& d) { return d.name == name; })->bits;
      if (value < 0 || (bits < 63 && value >= (int64_t{1} << bits)))
        throw Error("layout: image value " + std::to_string(value) + " does not fit output dimension " + name + " of " + std::to_string(bits) + " bits");
      packed |= static_cast<uint64_t>(value) << at;
    }
    images_.push_back(packed);
  }
}

Layout Layout::identity(const std::string& in, const std::string& out, int bits) {
  std::vector<Coords> images;
  for (int i = 0; i < bits; ++i) images.push_back({{out, int64_t{1} << i}});
  return Layout({{in, bits}}, {{out, bits}}, images);
}

Layout Layout::zeros(const std::string& in, int bits, const std::string& out, int out_bits) {
  return Layout({{in, bits}}, {{out, out_bits}}, std::vector<Coords>(static_cast<size_t>(bits)));
}

Layout Layout::linear(std::vector<LayoutDim> in, std::vector<LayoutDim> out, const std::function<Coords(const Coords&)>& f) {
  const int n = total(in);
  if (n > 20) throw Error("layout: " + std::to_string(n) + " input bits are too many to check a function's linearity (at most 20)");
  auto unpack = [&](uint64_t x) {
    Coords c;
    int at = 0;
    for (const LayoutDim& d : in) {
      c[d.name] = static_cast<int64_t>((x >> at) & ((uint64_t{1} << d.bits) - 1));
      at += d.bits;
    }
    return c;
  };
  std::vector<Coords> images;
  for (int i = 0; i < n; ++i) images.push_back(f(unpack(uint64_t{1} << i)));
  Layout l(in, out, images);
  for (uint64_t x = 0; x < (uint64_t{1} << n); ++x) {
    const Coords want = l.apply(unpack(x));
    Coords got = f(unpack(x));
    for (const LayoutDim& d : out) got.try_emplace(d.name, 0);
    if (got != want) {
      std::string where;
      for (const auto& [name, value] : unpack(x)) where += (where.empty() ? "" : ", ") + name + " " + std::to_string(value);
      throw Error("layout: the function is not linear over GF(2) at (" + where + ")");
    }
  }
  return l;
}

int Layout::in_bits() const { return total(in_); }
int Layout::out_bits() const { return total(out_); }

Layout Layout::operator*(const Layout& b) const {
  std::vector<LayoutDim> in = merged(in_, b.in_), out = merged(out_, b.out_);
  check_width(in, "input");
  check_width(out, "output");
  std::map<std::string, int> out_shift;  // b's outputs sit above a's in a shared dimension
  for (const LayoutDim& d : b.out_) {
    const int a_bits = offset_of(out_, d.name) < 0 ? 0 : std::find_if(out_.begin(), out_.end(), [&](const LayoutDim& x) { return x.name == d.name; })->bits;
    out_shift[d.name] = a_bits;
  }
  // Input bits in the merged order: for each merged dimension, a's bits then b's.
  std::vector<uint64_t> images(static_cast<size_t>(total(in)), 0);
  auto place = [&](const Layout& l, const std::map<std::string, int>& in_shift, const std::map<std::string, int>& shift) {
    int at = 0;
    for (const LayoutDim& d : l.in_) {
      auto s = in_shift.find(d.name);
      const int base = offset_of(in, d.name) + (s == in_shift.end() ? 0 : s->second);
      for (int k = 0; k < d.bits; ++k) images[static_cast<size_t>(base + k)] = repack(l.images_[static_cast<size_t>(at + k)], l.out_, out, shift);
      at += d.bits;
    }
  };
  std::map<std::string, int> b_in_shift;
  for (const LayoutDim& d : b.in_) {
    auto it = std::find_if(in_.begin(), in_.end(), [&](const LayoutDim& x) { return x.name == d.name; });
    b_in_shift[d.name] = it == in_.end() ? 0 : it->bits;
  }
  place(*this, {}, {});
  place(b, b_in_shift, out_shift);
  return Layout(std::move(in), std::move(out), std::move(images));
}

Layout Layout::then(const Layout& b) const {
  for (const LayoutDim& d : out_) {
    auto it = std::find_if(b.in_.begin(), b.in_.end(), [&](const LayoutDim& x) { return x.name == d.name; });
    if (d.bits > 0 && (it == b.in_.end() || it->bits != d.bits))
      throw Error("layout: composing, output dimension " + d.name + " (" + std::to_string(d.bits) +
                  " bits) is not an input dimension of the same size of the second layout");
  }
  std::vector<uint64_t> images;
  for (uint64_t img : images_) images.push_back(b.map(repack(img, out_, b.in_, {})));
  return Layout(in_, b.out_, std::move(images));
}

uint64_t Layout::pack_in(const Coords& c) const {
  uint64_t packed = 0;
  for (const auto& [name, value] : c) {
    const int at = offset_of(in_, name);
    if (at < 0) throw Error("layout: no input dimension " + name);
    packed |= static_cast<uint64_t>(value) << at;
  }
  return packed;
}

uint64_t Layout::map(uint64_t x) const {
  uint64_t out = 0;
  for (size_t i = 0; i < images_.size(); ++i)
    if ((x >> i) & 1) out ^= images_[i];
  return out;
}

Layout::Coords Layout::unpack_out(uint64_t packed) const {
  Coords out;
  int at = 0;
  for (const LayoutDim& d : out_) {
    out[d.name] = d.bits ? static_cast<int64_t>((packed >> at) & ((d.bits == 64 ? 0 : (uint64_t{1} << d.bits)) - 1)) : 0;
    at += d.bits;
  }
  return out;
}

Layout::Coords Layout::apply(const Coords& in) const { return unpack_out(map(pack_in(in))); }

// Rank of the images over GF(2): each image reduced by the pivots found so far (one per leading bit).
int Layout::rank() const {
  uint64_t pivot[64] = {};
  int rank = 0;
  for (uint64_t v : images_)
    for (int b = 63; b >= 0 && v; --b) {
      if (!((v >> b) & 1)) continue;
      if (!pivot[b]) {
        pivot[b] = v;
        ++rank;
        break;
      }
      v ^= pivot[b];
    }
  return rank;
}

bool Layout::injective() const { return rank() == in_bits(); }
bool Layout::surjective() const { return rank() == out_bits(); }

// Gauss-Jordan over GF(2): rows are input bits with their images; reducing the images to unit
// vectors turns the tracked input combinations into the inverse's images.
Layout Layout::invert() const {
  if (!bijective()) throw Error("layout: only a bijective layout has an inverse (" + std::to_string(in_bits()) + " input bits, " +
                                std::to_string(out_bits()) + " output bits, rank " + std::to_string(rank()) + ")");
  const int n = in_bits();
  std::vector<uint64_t> image = images_, source(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) source[static_cast<size_t>(i)] = uint64_t{1} << i;
  for (int bit = 0; bit < n; ++bit) {
    int pivot = bit;
    while (!((image[static_cast<size_t>(pivot)] >> bit) & 1)) ++pivot;
    std::swap(image[static_cast<size_t>(pivot)], image[static_cast<size_t>(bit)]);
    std::swap(source[static_cast<size_t>(pivot)], source[static_cast<size_t>(bit)]);
    for (int r = 0; r < n; ++r)
      if (r != bit && ((image[static_cast<size_t>(r)] >> bit) & 1)) {
        image[static_cast<size_t>(r)] ^= image[static_cast<size_t>(bit)];
        source[static_cast<size_t>(r)] ^= source[static_cast<size_t>(bit)];
      }
  }
  return Layout(out_, in_, std::move(source));  // output bit `bit` comes from input combination source[bit]
}

int64_t Layout::contiguous(const std::string& in, const std::string& out) const {
  const int in_at = offset_of(in_, in), out_at = offset_of(out_, out);
  if (in_at < 0 || out_at < 0) return 1;
  const int in_size = std::find_if(in_.begin(), in_.end(), [&](const LayoutDim& d) { return d.name == in; })->bits;
  int k = 0;
  while (k < in_size && images_[static_cast<size_t>(in_at + k)] == uint64_t{1} << (out_at + k)) ++k;
  return int64_t{1} << k;
}

std::string Layout::table() const {
  return table(in_.empty() ? "" : in_[0].name, in_.size() > 1 ? in_[1].name : "");
}

std::string Layout::table(const std::string& rows_name, const std::string& cols_name) const {
  auto dim = [&](const std::string& name) {
    if (name.empty()) return LayoutDim{"", 0};
    auto it = std::find_if(in_.begin(), in_.end(), [&](const LayoutDim& d) { return d.name == name; });
    if (it == in_.end()) throw Error("layout: no input dimension " + name + " to tabulate");
    return *it;
  };
  auto cell = [&](const Coords& c) {
    std::string s = "(";
    bool first = true;
    for (const LayoutDim& d : out_) {
      s += (first ? "" : ", ") + std::to_string(c.at(d.name));
      first = false;
    }
    return s + ")";
  };
  std::string out;
  const LayoutDim rows = dim(rows_name), cols = dim(cols_name);
  for (int64_t r = 0; r < (int64_t{1} << rows.bits); ++r) {
    out += rows.name + " " + std::to_string(r) + ":";
    for (int64_t c = 0; c < (int64_t{1} << cols.bits); ++c) {
      Coords x{{rows.name, r}};
      if (!cols.name.empty()) x[cols.name] = c;
      out += " " + cell(apply(x));
    }
    out += "\n";
  }
  return out;
}

int bank_conflicts(const Layout& lanes, int element_bytes, int vector_bytes, int banks, int lanes_per_phase) {
  const auto& dims = lanes.in_dims();
  auto lane = std::find_if(dims.begin(), dims.end(), [](const LayoutDim& d) { return d.name == "lane"; });
  if (lane == dims.end()) throw Error("bank_conflicts: the layout has no lane dimension");
  const int64_t count = int64_t{1} << lane->bits;
  std::vector<std::vector<int64_t>> phases;
  for (int64_t l = 0; l < count; ++l) {
    if (l % lanes_per_phase == 0) phases.emplace_back();
    phases.back().push_back(l);
  }
  return bank_conflicts(lanes, element_bytes, vector_bytes, banks, phases);
}

int bank_conflicts(const Layout& lanes, int element_bytes, int vector_bytes, int banks, const std::vector<std::vector<int64_t>>& phases) {
  const auto& dims = lanes.in_dims();
  auto lane = std::find_if(dims.begin(), dims.end(), [](const LayoutDim& d) { return d.name == "lane"; });
  if (lane == dims.end()) throw Error("bank_conflicts: the layout has no lane dimension");
  const int64_t count = int64_t{1} << lane->bits;
  int worst = 1;
  for (const std::vector<int64_t>& phase : phases) {
    std::map<int64_t, std::set<int64_t>> dwords_in_bank;
    for (int64_t l : phase) {
      if (l < 0 || l >= count) throw Error("bank_conflicts: a phase names lane " + std::to_string(l) + " of " + std::to_string(count));
      const int64_t byte = lanes.apply({{"lane", l}}).at("offset") * element_bytes;
      for (int64_t b = byte / 4; b < (byte + vector_bytes + 3) / 4; ++b) dwords_in_bank[b % banks].insert(b);
    }
    for (const auto& [bank, dwords] : dwords_in_bank) worst = std::max(worst, static_cast<int>(dwords.size()));
  }
  return worst;
}

}  // namespace weft::tile

// Layout: where data lives, as a linear map over GF(2) (Triton's linear layouts).
//
// A layout maps named input dimensions (hardware coordinates: "register", "lane", "wave", or a
// shared-memory "offset") to named output dimensions (tile coordinates: "row", "col", or an
// "offset"). Every dimension has a size that is a power of two, 2^bits. The map is linear over
// GF(2): each input bit has an image (a value of every output dimension), and an input's image
// is the XOR of the images of its set bits. Swizzles (XOR of row bits into column bits), MFMA
// and mma operand layouts, blocked and strided ownership are all such maps.
//
// Example: 4 lanes x 2 registers holding a 2 x 4 tile, a lane's two registers in one row:
//
//   Layout l = Layout::identity("register", "col", 1) * Layout::identity("lane", "col", 1)
//            * Layout::identity("lane", "row", 1);
//
//            register 0   register 1
//   lane 0   (0, 0)       (0, 1)        (row, col)
//   lane 1   (0, 2)       (0, 3)
//   lane 2   (1, 0)       (1, 1)
//   lane 3   (1, 2)       (1, 3)
//
// Contracts (each tested by enumerating every input in tests/kernels/test_layout.cpp):
// - apply(x) = XOR of image(bit) over the set bits of x; dimensions absent from x are 0.
// - a * b: input and output dimensions of b are appended to a's; a dimension both have gets a's
//   bits as its low bits and b's above them. (a * b)(x) = a(x_low) concatenated with b(x_high).
// - a.then(b) = b(a(x)); a's output dimensions must be b's input dimensions, with equal sizes.
// - invert(): exists iff the layout is bijective (as many input as output bits, full rank);
//   l.then(l.invert()) is the identity on l's inputs.
// - contiguous(in, out): the largest 2^k such that bits 0..k-1 of `in` map to bits 0..k-1 of
//   `out` and nothing else, so 2^k consecutive values of `in` hold 2^k consecutive values of
//   `out` (the widest vector a lane moves at once, with out = the memory offset).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace weft::tile {

struct LayoutDim {
  std::string name;
  int bits = 0;  // the dimension has 2^bits values
  bool operator==(const LayoutDim&) const = default;
};

class Layout {
 public:
  using Coords = std::map<std::string, int64_t>;

  // `images[i]` is the image of input bit i, counting through the input dimensions in order
  // (dimension 0's bits first), each given as a value per output dimension.
  // Throws weft::Error if an image does not fit its output dimension or more than 64 bits are
  // used on either side.
  Layout(std::vector<LayoutDim> in, std::vector<LayoutDim> out, const std::vector<Coords>& images);

  // in bit i -> out bit i, for `bits` bits.
  static Layout identity(const std::string& in, const std::string& out, int bits);
  // `bits` input bits that select nothing (broadcast: every value maps to 0 of `out`).
  static Layout zeros(const std::string& in, int bits, const std::string& out, int out_bits = 0);
  // The layout that `f` is, given f as a function over every input (a formula from a manual):
  // the images are f at the single-bit inputs, and f is checked at every input against them.
  // Throws weft::Error naming the first input where f is not linear over GF(2) (f(x) is not the
  // XOR of f at x's bits), where f's value does not fit an output dimension, or when the inputs
  // are more than 2^20 to check.
  static Layout linear(std::vector<LayoutDim> in, std::vector<LayoutDim> out, const std::function<Coords(const Coords&)>& f);

  Layout operator*(const Layout& b) const;
  Layout then(const Layout& b) const;
  Layout invert() const;

  Coords apply(const Coords& in) const;
  bool injective() const;
  bool surjective() const;
  bool bijective() const { return injective() && surjective(); }
  int64_t contiguous(const std::string& in, const std::string& out) const;

  const std::vector<LayoutDim>& in_dims() const { return in_; }
  const std::vector<LayoutDim>& out_dims() const { return out_; }
  int in_bits() const;
  int out_bits() const;
  bool operator==(const Layout& o) const { return in_ == o.in_ && out_ == o.out_ && images_ == o.images_; }

  // One line per value of the first input dimension, one column per value of the second (if
  // any), each cell the output coordinates, as in the example above.
  std::string table() const;
  // The same with input dimension `rows` down and `cols` across (all other inputs 0).
  std::string table(const std::string& rows, const std::string& cols) const;

 private:
  Layout(std::vector<LayoutDim> in, std::vector<LayoutDim> out, std::vector<uint64_t> images)
      : in_(std::move(in)), out_(std::move(out)), images_(std::move(images)) {}
  uint64_t pack_in(const Coords& c) const;
  uint64_t map(uint64_t packed_in) const;
  Coords unpack_out(uint64_t packed) const;
  int rank() const;

  std::vector<LayoutDim> in_, out_;
  std::vector<uint64_t> images_;  // per input bit: the output, packed (output dimension 0 lowest)
};

// Bank conflicts of one shared-memory access by a wave: `lanes` maps "lane" (and nothing else
// varies) to "offset" in elements of `element_bytes`; each lane moves `vector_bytes` from its
// offset. The hardware serves `lanes_per_phase` lanes at a time from `banks` banks of 4 bytes;
// the result is the worst number of distinct dwords one bank serves in one phase (1: none).
int bank_conflicts(const Layout& lanes, int element_bytes, int vector_bytes, int banks, int lanes_per_phase);
// The same where the hardware's phases are given as sets of lanes (gfx950's ds_read_b128 serves
// lanes 0-3, 12-15, 20-23 and 24-27 together: see layouts.h, lds_read_phases).
int bank_conflicts(const Layout& lanes, int element_bytes, int vector_bytes, int banks, const std::vector<std::vector<int64_t>>& phases);

}  // namespace weft::tile

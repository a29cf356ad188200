// Layout's contracts (kernels/include/weft/kernels/layout.h), each checked by enumerating every
// input of random layouts against a brute-force statement of the contract. The seed is printed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <set>

#include "weft/dsl/error.h"
#include "weft/kernels/layout.h"

using weft::tile::Layout;
using weft::tile::LayoutDim;

namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 gen = [] {
    uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("WEFT_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::cerr << "layout tests: random seed " << seed << " (WEFT_TEST_SEED replays it)\n";
    return std::mt19937_64(seed);
  }();
  return gen;
}

// A layout with random images of the given dimensions.
Layout random_layout(const std::vector<LayoutDim>& in, const std::vector<LayoutDim>& out) {
  std::vector<Layout::Coords> images;
  for (const LayoutDim& d : in)
    for (int k = 0; k < d.bits; ++k) {
      Layout::Coords c;
      for (const LayoutDim& o : out) c[o.name] = static_cast<int64_t>(rng()() % (uint64_t{1} << o.bits));
      images.push_back(c);
    }
  return Layout(in, out, images);
}

// Every input of `dims`, as coordinates.
std::vector<Layout::Coords> every_input(const std::vector<LayoutDim>& dims) {
  std::vector<Layout::Coords> all{{}};
  for (const LayoutDim& d : dims) {
    std::vector<Layout::Coords> next;
    for (const auto& c : all)
      for (int64_t v = 0; v < (int64_t{1} << d.bits); ++v) {
        auto x = c;
        x[d.name] = v;
        next.push_back(x);
      }
    all = next;
  }
  return all;
}

// apply() from the definition: XOR of the images of the set bits.
Layout::Coords by_definition(const std::vector<LayoutDim>& in, const std::vector<Layout::Coords>& images, const std::vector<LayoutDim>& out,
                             const Layout::Coords& x) {
  Layout::Coords r;
  for (const LayoutDim& o : out) r[o.name] = 0;
  size_t i = 0;
  for (const LayoutDim& d : in)
    for (int k = 0; k < d.bits; ++k, ++i)
      if ((x.count(d.name) ? x.at(d.name) : 0) >> k & 1)
        for (const LayoutDim& o : out) r[o.name] ^= images[i].count(o.name) ? images[i].at(o.name) : 0;
  return r;
}

}  // namespace

TEST_CASE("layout: apply is the XOR of the images of the set bits, and the header's example") {
  const std::vector<LayoutDim> in{{"register", 2}, {"lane", 3}}, out{{"row", 3}, {"col", 2}};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Layout::Coords> images;
    for (int i = 0; i < 5; ++i) images.push_back({{"row", static_cast<int64_t>(rng()() % 8)}, {"col", static_cast<int64_t>(rng()() % 4)}});
    Layout l(in, out, images);
    for (const auto& x : every_input(in)) REQUIRE(l.apply(x) == by_definition(in, images, out, x));
  }
  Layout example = Layout::identity("register", "col", 1) * Layout::identity("lane", "col", 1) * Layout::identity("lane", "row", 1);
  for (int64_t lane = 0; lane < 4; ++lane)
    for (int64_t reg = 0; reg < 2; ++reg) {
      auto c = example.apply({{"lane", lane}, {"register", reg}});
      CHECK(c.at("row") == lane / 2);
      CHECK(c.at("col") == (lane % 2) * 2 + reg);
    }
}

TEST_CASE("layout: a * b concatenates dimensions, a's bits low in a shared one") {
  for (int trial = 0; trial < 20; ++trial) {
    Layout a = random_layout({{"register", 2}, {"lane", 2}}, {{"row", 2}, {"col", 3}});
    Layout b = random_layout({{"lane", 2}, {"wave", 1}}, {{"col", 1}, {"k", 2}});
    Layout p = a * b;
    CHECK(p.in_dims() == std::vector<LayoutDim>{{"register", 2}, {"lane", 4}, {"wave", 1}});
    CHECK(p.out_dims() == std::vector<LayoutDim>{{"row", 2}, {"col", 4}, {"k", 2}});
    for (const auto& x : every_input(p.in_dims())) {
      const auto lo = a.apply({{"register", x.at("register")}, {"lane", x.at("lane") & 3}});
      const auto hi = b.apply({{"lane", x.at("lane") >> 2}, {"wave", x.at("wave")}});
      const auto got = p.apply(x);
      REQUIRE(got.at("row") == lo.at("row"));
      REQUIRE(got.at("col") == (lo.at("col") | hi.at("col") << 3));
      REQUIRE(got.at("k") == hi.at("k"));
    }
  }
}

TEST_CASE("layout: a.then(b) is b after a, and mismatched dimensions are an error") {
  for (int trial = 0; trial < 20; ++trial) {
    Layout a = random_layout({{"lane", 3}, {"register", 2}}, {{"row", 2}, {"col", 3}});
    Layout b = random_layout({{"row", 2}, {"col", 3}}, {{"offset", 6}});
    Layout c = a.then(b);
    for (const auto& x : every_input(a.in_dims())) REQUIRE(c.apply(x) == b.apply(a.apply(x)));
  }
  Layout a = Layout::identity("lane", "row", 2), b = Layout::identity("row", "offset", 3);
  CHECK_THROWS_WITH_AS(a.then(b), doctest::Contains("output dimension row (2 bits)"), weft::Error);
}

TEST_CASE("layout: injective, surjective and invert agree with enumeration") {
  int bijections = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Layout l = random_layout({{"lane", 3}, {"register", 2}}, {{"row", 3}, {"col", 2}});
    std::set<std::pair<int64_t, int64_t>> seen;
    for (const auto& x : every_input(l.in_dims())) {
      auto c = l.apply(x);
      seen.insert({c.at("row"), c.at("col")});
    }
    const bool bijective = seen.size() == 32;
    REQUIRE(l.injective() == bijective);
    REQUIRE(l.surjective() == bijective);
    if (!bijective) {
      CHECK_THROWS_WITH_AS(l.invert(), doctest::Contains("only a bijective layout has an inverse"), weft::Error);
      continue;
    }
    ++bijections;
    Layout inv = l.invert();
    for (const auto& x : every_input(l.in_dims())) REQUIRE(inv.apply(l.apply(x)) == x);
    for (const auto& y : every_input(inv.in_dims())) REQUIRE(l.apply(inv.apply(y)) == y);
  }
  CHECK(bijections > 0);  // about 30% of random 5x5 matrices over GF(2) are invertible
  Layout wide = random_layout({{"lane", 3}}, {{"offset", 5}});
  std::set<int64_t> images;
  for (const auto& x : every_input(wide.in_dims())) images.insert(wide.apply(x).at("offset"));
  CHECK(wide.injective() == (images.size() == 8));
  CHECK_FALSE(wide.surjective());
}

TEST_CASE("layout: contiguous() is the widest run of consecutive values, by enumeration") {
  for (int trial = 0; trial < 100; ++trial) {
    // Half the trials start from a vector-friendly layout, so long runs occur.
    Layout l = trial % 2 ? random_layout({{"register", 3}, {"lane", 2}}, {{"offset", 5}})
                         : Layout::identity("register", "offset", static_cast<int>(trial % 4)) *
                               random_layout({{"register", 3 - static_cast<int>(trial % 4)}, {"lane", 2}}, {{"offset", 5 - static_cast<int>(trial % 4)}});
    int64_t want = 1;
    for (int64_t n = 2; n <= 8; n *= 2) {
      bool run = true;
      for (int64_t v = 0; v < n; ++v) run = run && l.apply({{"register", v}}).at("offset") == v;
      if (run) want = n;
    }
    REQUIRE(l.contiguous("register", "offset") == want);
  }
}

TEST_CASE("layout: bank conflicts of 16-byte reads of a bf16 16 x 32 tile, plain and XOR-swizzled") {
  // Lane l reads 8 bf16 at row l % 16, column (l / 16) * 8 (HipKittens' 16 x 32 tile).
  Layout lanes = Layout::identity("lane", "row", 4) * Layout::zeros("lane", 0, "col", 3) * Layout::identity("lane", "col", 2);
  REQUIRE(lanes.out_dims() == std::vector<LayoutDim>{{"row", 4}, {"col", 5}});
  // Row-major memory: offset = row * 32 + col.
  Layout row_major = Layout({{"row", 4}, {"col", 5}}, {{"offset", 9}},
                            {{{"offset", 32}}, {{"offset", 64}}, {{"offset", 128}}, {{"offset", 256}},
                             {{"offset", 1}}, {{"offset", 2}}, {{"offset", 4}}, {{"offset", 8}}, {{"offset", 16}}});
  // The swizzle: column bits 3-4 (the 16-byte chunk) XOR row bits 1-2.
  Layout swizzled = Layout({{"row", 4}, {"col", 5}}, {{"offset", 9}},
                           {{{"offset", 32}}, {{"offset", 64 ^ 8}}, {{"offset", 128 ^ 16}}, {{"offset", 256}},
                            {{"offset", 1}}, {{"offset", 2}}, {{"offset", 4}}, {{"offset", 8}}, {{"offset", 16}}});
  REQUIRE(swizzled.bijective());
  // ds_read_b128: 8 lanes a phase, 32 banks of 4 bytes.
  CHECK(weft::tile::bank_conflicts(lanes.then(row_major), 2, 16, 32, 8) == 4);
  CHECK(weft::tile::bank_conflicts(lanes.then(swizzled), 2, 16, 32, 8) == 1);
  // The swizzle keeps each lane's 8 elements contiguous: one 16-byte read.
  Layout per_lane = Layout::identity("register", "col", 3) * Layout::identity("lane", "row", 4) * Layout::identity("lane", "col", 2);
  CHECK(per_lane.then(swizzled).contiguous("register", "offset") == 8);
  CHECK_THROWS_WITH_AS(Layout({{"lane", 1}}, {{"row", 1}}, {{{"row", 2}}}), doctest::Contains("does not fit output dimension row"), weft::Error);
}

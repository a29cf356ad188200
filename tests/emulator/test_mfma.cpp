// MFMA semantics against logical matrices. The tests place matrix elements in registers with
// their own encoding, written in the other direction from mfma.cpp: from a register position to
// the element it holds (the calculator's "register to matrix element mapping"), and they decode
// narrow floats with weft's float_formats, not the emulator's decoder.
//
// The random inputs are fresh each run; a failure prints the seed, and WEFT_MFMA_SEED=<seed>
// reruns with the same inputs.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "weft/dsl/float_formats.h"
#include "weft/emulator/mfma.h"
#include "llvm_oracle.h"

using namespace weft;
using namespace weft::emu;

namespace {

constexpr int kWave = 64;
constexpr Arch kArchs[] = {Arch::Gfx942, Arch::Gfx950};
using Rng = std::mt19937_64;

// doctest prints a const char* as a pointer; these are strings.
std::string target(Arch arch) { return arch == Arch::Gfx942 ? "gfx942" : "gfx950"; }
std::string name(const MfmaOp& op) { return op.mnemonic; }

uint64_t run_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* s = std::getenv("WEFT_MFMA_SEED")) return std::strtoull(s, nullptr, 10);
    return (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  }();
  return seed;
}

// ---------------------------------------------------------------------------------------------
// The tests' register encoding: which logical element each register position holds.

int bits_of(MfmaInput type) {
  switch (type) {
    case MfmaInput::F32:
    case MfmaInput::XF32: return 32;
    case MfmaInput::F16:
    case MfmaInput::BF16: return 16;
    default: return 8;
  }
}

struct InputElement {
  int block, outer, k;  // outer: the row i of A, the column j of B
};

// The A or B element at element position e of `lane` (e = dword * elements_per_dword + the
// element's place in its dword, low bits first). Single-block ops, from the calculator:
// "A i: (lane % 16)", "A k: 4 * floor(lane / 16) + 2 * GPR_num + floor(GPR_bits / 16)" for
// 16x16x16_bf16, generally k = per_lane * floor(lane / outer_size) + e. Multi-block ops hold
// the whole k range in one lane and put the block above the row: block = floor(lane / outer_size).
InputElement input_element(const MfmaOp& op, int outer_size, int per_lane, int lane, int e) {
  if (op.blocks > 1) return {lane / outer_size, lane % outer_size, e};
  return {0, lane % outer_size, per_lane * (lane / outer_size) + e};
}

struct AccumElement {
  int block, i, j;
};

// The C or D element in dword `reg` of `lane`, per output size. The calculator's 32x32: "i:
// (8 * floor(GPR_num / 4) % 32) + 4 * floor(lane / 32) + (GPR_num % 4), j: (lane % 32)", with
// _2b's second block in dwords 16..31; 16x16: "i: 4 * floor(lane / 16) + (GPR_num % 4), j: (lane
// % 16)", _4b's blocks in successive groups of four dwords; 4x4x*_16b: dword i, the 16 blocks
// side by side in groups of four lanes (rocjitsu's output_loc_32, MMA-Sim's 4x4x1 probe).
AccumElement accum_element(const MfmaOp& op, int reg, int lane) {
  if (op.m == 32) return {reg / 16, 8 * (reg / 4 % 4) + 4 * (lane / 32) + reg % 4, lane % 32};
  if (op.m == 16) return {reg / 4, 4 * (lane / 16) + reg % 4, lane % 16};
  return {lane / 4, reg, lane % 4};
}

// Logical matrices of element codes: A[block][i][k], B[block][k][j], C and D[block][i][j].
struct Matrices {
  std::vector<uint32_t> a, b, c;
};

int a_index(const MfmaOp& op, int block, int i, int k) { return (block * op.m + i) * op.k + k; }
int b_index(const MfmaOp& op, int block, int k, int j) { return (block * op.k + k) * op.n + j; }
int c_index(const MfmaOp& op, int block, int i, int j) { return (block * op.m + i) * op.n + j; }

Matrices zero_matrices(const MfmaOp& op) {
  return {std::vector<uint32_t>(op.blocks * op.m * op.k), std::vector<uint32_t>(op.blocks * op.k * op.n),
          std::vector<uint32_t>(op.blocks * op.m * op.n)};
}

template <class Get>
std::vector<uint32_t> encode_input(const MfmaOp& op, MfmaInput type, int dwords, int outer_size, Get get) {
  const int bits = bits_of(type), per_dword = 32 / bits;
  std::vector<uint32_t> regs(dwords * kWave, 0);
  for (int reg = 0; reg < dwords; ++reg)
    for (int lane = 0; lane < kWave; ++lane)
      for (int sub = 0; sub < per_dword; ++sub) {
        const InputElement e = input_element(op, outer_size, dwords * per_dword, lane, reg * per_dword + sub);
        regs[reg * kWave + lane] |= get(e) << (sub * bits);
      }
  return regs;
}

std::vector<uint32_t> encode_a(const MfmaOp& op, const std::vector<uint32_t>& a) {
  return encode_input(op, op.a_type, op.a_dwords, op.m,
                      [&](InputElement e) { return a[a_index(op, e.block, e.outer, e.k)]; });
}

std::vector<uint32_t> encode_b(const MfmaOp& op, const std::vector<uint32_t>& b) {
  return encode_input(op, op.b_type, op.b_dwords, op.n,
                      [&](InputElement e) { return b[b_index(op, e.block, e.k, e.outer)]; });
}

std::vector<uint32_t> encode_accum(const MfmaOp& op, const std::vector<uint32_t>& c) {
  std::vector<uint32_t> regs(op.cd_dwords * kWave);
  for (int reg = 0; reg < op.cd_dwords; ++reg)
    for (int lane = 0; lane < kWave; ++lane) {
      const AccumElement e = accum_element(op, reg, lane);
      regs[reg * kWave + lane] = c[c_index(op, e.block, e.i, e.j)];
    }
  return regs;
}

std::vector<uint32_t> decode_accum(const MfmaOp& op, const std::vector<uint32_t>& regs) {
  std::vector<uint32_t> d(op.blocks * op.m * op.n);
  for (int reg = 0; reg < op.cd_dwords; ++reg)
    for (int lane = 0; lane < kWave; ++lane) {
      const AccumElement e = accum_element(op, reg, lane);
      d[c_index(op, e.block, e.i, e.j)] = regs[reg * kWave + lane];
    }
  return d;
}

// D as logical matrices, from C, A and B as logical matrices.
std::vector<uint32_t> run(const MfmaOp& op, Arch arch, const Matrices& m) {
  const std::vector<uint32_t> a = encode_a(op, m.a), b = encode_b(op, m.b), c = encode_accum(op, m.c);
  std::vector<uint32_t> d(op.cd_dwords * kWave, 0xdeadbeef);
  execute_mfma(op, arch, a.data(), b.data(), c.data(), d.data());
  return decode_accum(op, d);
}

// ---------------------------------------------------------------------------------------------
// Element values, from weft's float_formats.

FloatFormat format_of(MfmaInput type, Arch arch) {
  const bool fnuz = arch == Arch::Gfx942;
  switch (type) {
    case MfmaInput::F16: return FloatFormat::Float16;
    case MfmaInput::BF16: return FloatFormat::BFloat16;
    case MfmaInput::FP8: return fnuz ? FloatFormat::Fp8E4M3Fnuz : FloatFormat::Fp8E4M3;
    default: return fnuz ? FloatFormat::Fp8E5M2Fnuz : FloatFormat::Fp8E5M2;
  }
}

double value_of(MfmaInput type, Arch arch, uint32_t code) {
  switch (type) {
    case MfmaInput::F32: return std::bit_cast<float>(code);
    case MfmaInput::XF32: return std::bit_cast<float>(code & 0xffffe000u);  // tf32: the top 10 mantissa bits
    case MfmaInput::I8: return static_cast<int8_t>(code);
    default: return decode_float(format_of(type, arch), static_cast<uint16_t>(code));
  }
}

uint32_t code_of_one(MfmaInput type, Arch arch) {
  switch (type) {
    case MfmaInput::F32:
    case MfmaInput::XF32: return std::bit_cast<uint32_t>(1.0f);
    case MfmaInput::I8: return 1;
    default: return encode_float(format_of(type, arch), 1.0);
  }
}

uint32_t random_f32(Rng& rng, int exponent_spread) {
  std::uniform_int_distribution<int> exponent(127 - exponent_spread, 127 + exponent_spread);
  return static_cast<uint32_t>(rng() & 1) << 31 | static_cast<uint32_t>(exponent(rng)) << 23 | (rng() & 0x7fffff);
}

// A random finite element: f32 and bf16 over a few binades either side of 1, f16 and fp8 over
// their whole finite range (subnormals included), i8 over all of it.
uint32_t random_input(MfmaInput type, Arch arch, Rng& rng) {
  switch (type) {
    case MfmaInput::F32:
    case MfmaInput::XF32: return random_f32(rng, 8);
    case MfmaInput::BF16: return random_f32(rng, 16) >> 16;
    case MfmaInput::I8: return rng() & 0xff;
    default:
      for (;;) {
        const uint32_t code = rng() & (type == MfmaInput::F16 ? 0xffff : 0xff);
        if (std::isfinite(value_of(type, arch, code))) return code;
      }
  }
}

uint32_t random_accum(const MfmaOp& op, Rng& rng) {
  if (op.integer_accum) return static_cast<uint32_t>(std::uniform_int_distribution<int32_t>(-1 << 20, 1 << 20)(rng));
  return random_f32(rng, 8);
}

Matrices random_matrices(const MfmaOp& op, Arch arch, Rng& rng) {
  Matrices m = zero_matrices(op);
  for (uint32_t& x : m.a) x = random_input(op.a_type, arch, rng);
  for (uint32_t& x : m.b) x = random_input(op.b_type, arch, rng);
  for (uint32_t& x : m.c) x = random_accum(op, rng);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Reporting: one CHECK per op, naming the first wrong element.

class Mismatches {
 public:
  void add(int block, int i, int j, const std::string& got, const std::string& want) {
    if (count_++ == 0) {
      std::ostringstream s;
      s << "D[block " << block << "][" << i << "][" << j << "] = " << got << ", want " << want;
      first_ = s.str();
    }
  }
  int count() const { return count_; }
  std::string report() const { return std::to_string(count_) + " wrong elements; first: " + first_; }

 private:
  int count_ = 0;
  std::string first_;
};

std::string show(uint32_t bits, bool integer) {
  std::ostringstream s;
  if (integer)
    s << static_cast<int32_t>(bits);
  else
    s << std::bit_cast<float>(bits) << " (0x" << std::hex << bits << ")";
  return s.str();
}

std::vector<int> iota(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Which k each row (of A) or column (of B) of every block selects.
using Picks = std::vector<std::vector<int>>;

// Pass t of the identity: row r picks k = (r + t*rows) mod k, so the passes together use every k
// and, where rows >= k, row r picks r mod k.
std::vector<Picks> identity_passes(const MfmaOp& op, int rows) {
  std::vector<Picks> passes;
  for (int t = 0; t * rows < op.k || t == 0; ++t) {
    std::vector<int> pick(rows);
    for (int r = 0; r < rows; ++r) pick[r] = (r + t * rows) % op.k;
    passes.emplace_back(op.blocks, pick);
  }
  return passes;
}

// A random permutation where rows == k, otherwise a random k per row; different in every block.
Picks random_picks(const MfmaOp& op, int rows, Rng& rng) {
  Picks picks(op.blocks);
  for (std::vector<int>& pick : picks) {
    if (rows == op.k) {
      pick = iota(rows);
      std::shuffle(pick.begin(), pick.end(), rng);
    } else {
      pick.resize(rows);
      for (int& p : pick) p = std::uniform_int_distribution<int>(0, op.k - 1)(rng);
    }
  }
  return picks;
}

// C plus one element, with the single rounding an fp32 fused multiply-add by 1 gives.
uint32_t plus(const MfmaOp& op, Arch arch, uint32_t c, MfmaInput type, uint32_t code) {
  if (op.integer_accum) return c + static_cast<uint32_t>(static_cast<int32_t>(value_of(type, arch, code)));
  return std::bit_cast<uint32_t>(std::bit_cast<float>(c) + static_cast<float>(value_of(type, arch, code)));
}

// A's rows select rows of B: A[b][i][k] = (k == pick[b][i]), so D[b][i][j] = C + B[b][pick][j].
int check_a_selects(const MfmaOp& op, Arch arch, const Picks& picks, Rng& rng, Mismatches& wrong) {
  Matrices m = random_matrices(op, arch, rng);
  std::fill(m.a.begin(), m.a.end(), 0u);
  for (int blk = 0; blk < op.blocks; ++blk)
    for (int i = 0; i < op.m; ++i) m.a[a_index(op, blk, i, picks[blk][i])] = code_of_one(op.a_type, arch);
  const std::vector<uint32_t> d = run(op, arch, m);
  for (int blk = 0; blk < op.blocks; ++blk)
    for (int i = 0; i < op.m; ++i)
      for (int j = 0; j < op.n; ++j) {
        const uint32_t want = plus(op, arch, m.c[c_index(op, blk, i, j)], op.b_type,
                                   m.b[b_index(op, blk, picks[blk][i], j)]);
        const uint32_t got = d[c_index(op, blk, i, j)];
        if (got != want) wrong.add(blk, i, j, show(got, op.integer_accum), show(want, op.integer_accum));
      }
  return wrong.count();
}

// B's columns select columns of A: B[b][k][j] = (k == pick[b][j]), so D[b][i][j] = C + A[b][i][pick].
int check_b_selects(const MfmaOp& op, Arch arch, const Picks& picks, Rng& rng, Mismatches& wrong) {
  Matrices m = random_matrices(op, arch, rng);
  std::fill(m.b.begin(), m.b.end(), 0u);
  for (int blk = 0; blk < op.blocks; ++blk)
    for (int j = 0; j < op.n; ++j) m.b[b_index(op, blk, picks[blk][j], j)] = code_of_one(op.b_type, arch);
  const std::vector<uint32_t> d = run(op, arch, m);
  for (int blk = 0; blk < op.blocks; ++blk)
    for (int i = 0; i < op.m; ++i)
      for (int j = 0; j < op.n; ++j) {
        const uint32_t want = plus(op, arch, m.c[c_index(op, blk, i, j)], op.a_type,
                                   m.a[a_index(op, blk, i, picks[blk][j])]);
        const uint32_t got = d[c_index(op, blk, i, j)];
        if (got != want) wrong.add(blk, i, j, show(got, op.integer_accum), show(want, op.integer_accum));
      }
  return wrong.count();
}

// D against C + A x B summed in double. i8: exact, wrapping to 32 bits. f32: each of the k fp32
// roundings is within 2^-24 of the running sum, itself bounded by the sum of magnitudes, so
// 1e-5 of that bound covers k <= 64 steps.
void check_against_reference(const MfmaOp& op, Arch arch, const Matrices& m, const std::vector<uint32_t>& d,
                             Mismatches& wrong) {
  for (int blk = 0; blk < op.blocks; ++blk)
    for (int i = 0; i < op.m; ++i)
      for (int j = 0; j < op.n; ++j) {
        const uint32_t c = m.c[c_index(op, blk, i, j)], got = d[c_index(op, blk, i, j)];
        double sum = op.integer_accum ? static_cast<int32_t>(c) : std::bit_cast<float>(c);
        double magnitude = std::abs(sum);
        for (int k = 0; k < op.k; ++k) {
          const double p = value_of(op.a_type, arch, m.a[a_index(op, blk, i, k)]) *
                           value_of(op.b_type, arch, m.b[b_index(op, blk, k, j)]);
          sum += p;  // exact for i8: |sum| < 2^53
          magnitude += std::abs(p);
        }
        const bool right = op.integer_accum
                               ? got == static_cast<uint32_t>(static_cast<int64_t>(sum))
                               : std::abs(static_cast<double>(std::bit_cast<float>(got)) - sum) <= 1e-5 * magnitude;
        if (!right) wrong.add(blk, i, j, show(got, op.integer_accum), std::to_string(sum));
      }
}

// D for a single element pushed through: A[0][0][0] = code_a, B[0][0][0] = code_b, all else 0.
double through(const MfmaOp& op, Arch arch, uint32_t code_a, uint32_t code_b) {
  Matrices m = zero_matrices(op);
  m.a[a_index(op, 0, 0, 0)] = code_a;
  m.b[b_index(op, 0, 0, 0)] = code_b;
  const uint32_t d = run(op, arch, m)[c_index(op, 0, 0, 0)];
  return op.integer_accum ? static_cast<int32_t>(d) : std::bit_cast<float>(d);
}

double through_b(const MfmaOp& op, Arch arch, uint32_t code) {
  return through(op, arch, code_of_one(op.a_type, arch), code);
}
double through_a(const MfmaOp& op, Arch arch, uint32_t code) {
  return through(op, arch, code, code_of_one(op.b_type, arch));
}

bool same_value(double got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; }

// The code of +-2^e in `type`, if it has one.
std::optional<uint32_t> power_of_two(MfmaInput type, Arch arch, int e, bool negative = false) {
  const double v = std::ldexp(negative ? -1.0 : 1.0, e);
  uint32_t code;
  if (type == MfmaInput::F32 || type == MfmaInput::XF32)
    code = std::bit_cast<uint32_t>(static_cast<float>(v));
  else if (type == MfmaInput::I8)
    return std::nullopt;
  else
    code = encode_float(format_of(type, arch), v);
  if (value_of(type, arch, code) != v) return std::nullopt;
  return code;
}

// Codes for the k-order probe: C = 2^(24 - t), a first product 1 x 2^-t (half an ulp of C, a tie
// that leaves C), then 2^x x -2^(24 - t - x) = -C.
struct OrderProbe {
  uint32_t c, one_a, tiny_b, big_a, minus_big_b;
};

std::optional<OrderProbe> order_probe(const MfmaOp& op, Arch arch) {
  for (int t = 1; t <= 24; ++t) {
    const auto tiny = power_of_two(op.b_type, arch, -t);
    if (!tiny) continue;
    for (int x = -30; x <= 30; ++x) {
      const auto big = power_of_two(op.a_type, arch, x), minus_big = power_of_two(op.b_type, arch, 24 - t - x, true);
      if (big && minus_big)
        return OrderProbe{std::bit_cast<uint32_t>(std::ldexp(1.0f, 24 - t)), code_of_one(op.a_type, arch), *tiny, *big,
                          *minus_big};
    }
  }
  return std::nullopt;
}

bool has_fp8(const MfmaOp& op) {
  const auto fp8 = [](MfmaInput t) { return t == MfmaInput::FP8 || t == MfmaInput::BF8; };
  return fp8(op.a_type) || fp8(op.b_type);
}

}  // namespace

TEST_CASE("mfma_ops: what llvm-mc-22 assembles on each target") {
  for (Arch arch : kArchs) {
    INFO(target(arch));
    std::set<std::string> names;
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(name(op));
      CHECK(names.insert(op.mnemonic).second);
      CHECK(find_mfma(op.mnemonic, arch) == &op);
      // The registers hold exactly the block's elements.
      CHECK(op.a_dwords * kWave * (32 / bits_of(op.a_type)) == op.m * op.k * op.blocks);
      CHECK(op.b_dwords * kWave * (32 / bits_of(op.b_type)) == op.k * op.n * op.blocks);
      CHECK(op.cd_dwords * kWave == op.m * op.n * op.blocks);
      CHECK(op.integer_accum == (op.a_type == MfmaInput::I8));
    }
  }
  CHECK(mfma_ops(Arch::Gfx942).size() == 30);
  CHECK(mfma_ops(Arch::Gfx950).size() == 34);
  for (const char* gfx950_only : {"v_mfma_f32_16x16x32_bf16", "v_mfma_f32_32x32x16_f16", "v_mfma_i32_16x16x64_i8",
                                  "v_mfma_i32_32x32x32_i8"}) {
    CHECK(find_mfma(gfx950_only, Arch::Gfx942) == nullptr);
    CHECK(find_mfma(gfx950_only, Arch::Gfx950) != nullptr);
  }
  for (const char* gfx942_only : {"v_mfma_f32_16x16x8_xf32", "v_mfma_f32_32x32x4_xf32"}) {
    CHECK(find_mfma(gfx942_only, Arch::Gfx942) != nullptr);
    CHECK(find_mfma(gfx942_only, Arch::Gfx950) == nullptr);
  }
  CHECK(find_mfma("v_mfma_f32_16x16x16bf16_1k", Arch::Gfx942) == nullptr);  // an alias, not LLVM's name
  CHECK(find_mfma("v_mfma_f32_16x16x128_f8f6f4", Arch::Gfx950) == nullptr);  // not modelled
  const MfmaOp* op = find_mfma("v_mfma_f32_32x32x1_2b_f32", Arch::Gfx950);
  REQUIRE(op != nullptr);
  CHECK(op->m == 32);
  CHECK(op->k == 1);
  CHECK(op->blocks == 2);
  CHECK(op->cd_dwords == 32);
}

namespace {

// "v[first:first+n-1]" or "vN".
std::string registers(int first, int n) {
  return n == 1 ? "v" + std::to_string(first) : "v[" + std::to_string(first) + ":" + std::to_string(first + n - 1) + "]";
}

// The HWXDL resource cycles llvm-mca-22 gives each line of `lines` on `mcpu`, in order.
std::vector<std::string> matrix_core_cycles(const std::vector<std::string>& lines, const std::string& mcpu) {
  char dir_template[] = "/tmp/weft-mca-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::ofstream source(dir + "/m.s");
  for (const std::string& l : lines) source << l << "\n";
  source.close();
  const std::string report = weft::testing::run_command(std::string(WEFT_LLVM_MCA) + " -mtriple=amdgcn-amd-amdhsa -mcpu=" + mcpu +
                                                        " -iterations=1 " + dir + "/m.s 2>&1");
  std::filesystem::remove_all(dir);
  // "[6]   - HWXDL" names the column; "Resource pressure by instruction:" rows hold one value per
  // column ("-" for none) and then the instruction.
  const size_t named = report.find("- HWXDL");
  REQUIRE(named != std::string::npos);
  const size_t open = report.rfind('[', named);
  const int column = std::stoi(report.substr(open + 1));
  std::istringstream rows(report.substr(report.find("Resource pressure by instruction:")));
  std::vector<std::string> cycles;
  for (std::string row; std::getline(rows, row);) {
    std::istringstream fields(row);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x);
    if (f.size() > static_cast<size_t>(column) + 1 && f[static_cast<size_t>(column) + 1].starts_with("v_mfma"))
      cycles.push_back(f[static_cast<size_t>(column)]);
  }
  return cycles;
}

}  // namespace

TEST_CASE("mfma_ops: each op's matrix-core passes are LLVM 22's scheduling model's") {
  for (Arch arch : kArchs) {
    INFO(target(arch));
    std::vector<std::string> lines;
    for (const MfmaOp& op : mfma_ops(arch))
      lines.push_back(std::string(op.mnemonic) + " " + registers(0, op.cd_dwords) + ", " + registers(64, op.a_dwords) + ", " +
                      registers(80, op.b_dwords) + ", " + registers(0, op.cd_dwords));
    const std::vector<std::string> cycles = matrix_core_cycles(lines, target(arch));
    REQUIRE(cycles.size() == mfma_ops(arch).size());
    for (size_t i = 0; i < cycles.size(); ++i) {
      INFO(lines[i]);
      CHECK(std::stod(cycles[i]) == mfma_ops(arch)[i].passes);
    }
  }
}

TEST_CASE("the tests' own register maps place every element exactly once") {
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(target(arch) << " " << name(op));
      std::vector<uint32_t> a(op.blocks * op.m * op.k), b(op.blocks * op.k * op.n), c(op.blocks * op.m * op.n);
      for (int i = 0; i < static_cast<int>(c.size()); ++i) c[i] = i;
      CHECK(decode_accum(op, encode_accum(op, c)) == c);
      std::vector<int> a_hits(a.size()), b_hits(b.size());
      encode_input(op, op.a_type, op.a_dwords, op.m, [&](InputElement e) {
        ++a_hits[a_index(op, e.block, e.outer, e.k)];
        return 0u;
      });
      encode_input(op, op.b_type, op.b_dwords, op.n, [&](InputElement e) {
        ++b_hits[b_index(op, e.block, e.k, e.outer)];
        return 0u;
      });
      CHECK(std::ranges::all_of(a_hits, [](int h) { return h == 1; }));
      CHECK(std::ranges::all_of(b_hits, [](int h) { return h == 1; }));
    }
}

TEST_CASE("identity and selection matrices: D = C + the selected elements, bit-exact") {
  const uint64_t seed = run_seed();
  INFO("seed " << seed << " (rerun with WEFT_MFMA_SEED=" << seed << ")");
  Rng rng(seed);
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(target(arch) << " " << name(op));
      Mismatches a_wrong, b_wrong;
      for (const Picks& pass : identity_passes(op, op.m)) check_a_selects(op, arch, pass, rng, a_wrong);
      for (const Picks& pass : identity_passes(op, op.n)) check_b_selects(op, arch, pass, rng, b_wrong);
      CHECK_MESSAGE(a_wrong.count() == 0, "A = identity: " << a_wrong.report());
      CHECK_MESSAGE(b_wrong.count() == 0, "B = identity: " << b_wrong.report());
    }
}

TEST_CASE("permutation and random selection matrices: D = C + the selected elements, bit-exact") {
  const uint64_t seed = run_seed();
  INFO("seed " << seed << " (rerun with WEFT_MFMA_SEED=" << seed << ")");
  Rng rng(seed + 1);
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(target(arch) << " " << name(op));
      Mismatches a_wrong, b_wrong;
      for (int trial = 0; trial < 3; ++trial) {
        check_a_selects(op, arch, random_picks(op, op.m, rng), rng, a_wrong);
        check_b_selects(op, arch, random_picks(op, op.n, rng), rng, b_wrong);
      }
      CHECK_MESSAGE(a_wrong.count() == 0, "A selects: " << a_wrong.report());
      CHECK_MESSAGE(b_wrong.count() == 0, "B selects: " << b_wrong.report());
    }
}

TEST_CASE("random A, B, C against a double-precision reference") {
  const uint64_t seed = run_seed();
  INFO("seed " << seed << " (rerun with WEFT_MFMA_SEED=" << seed << ")");
  Rng rng(seed + 2);
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(target(arch) << " " << name(op));
      Mismatches wrong;
      for (int trial = 0; trial < 4; ++trial) {
        const Matrices m = random_matrices(op, arch, rng);
        check_against_reference(op, arch, m, run(op, arch, m), wrong);
      }
      CHECK_MESSAGE(wrong.count() == 0, wrong.report());
    }
}

// The model of mfma.h, element by element: each D is C followed by one fp32 fused multiply-add
// per k, in k order, of the decoded A and B elements. Raw random bits reach every code of every
// format (NaN, inf and subnormal inputs and results included), so the emulator's vectorized
// decoders and accumulate kernels must agree with it bit for bit; a NaN result need only be a
// NaN (its payload is the host's).
TEST_CASE("random register bits: D is C then an fp32 fma per k in k order, bit for bit") {
  const uint64_t seed = run_seed();
  INFO("seed " << seed << " (rerun with WEFT_MFMA_SEED=" << seed << ")");
  Rng rng(seed + 4);
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      if (op.integer_accum) continue;  // exact sums: "random A, B, C against a double-precision reference"
      INFO(target(arch) << " " << name(op));
      // An xf32 NaN stays a NaN (truncating its mantissa could make it an inf; see mfma.cpp).
      const auto element = [arch](MfmaInput type, uint32_t code) {
        if (type == MfmaInput::XF32 && std::isnan(std::bit_cast<float>(code))) return std::numeric_limits<float>::quiet_NaN();
        return static_cast<float>(value_of(type, arch, code));
      };
      Mismatches wrong;
      for (int trial = 0; trial < 4; ++trial) {
        Matrices m = zero_matrices(op);
        const uint32_t a_mask = bits_of(op.a_type) == 32 ? ~0u : (1u << bits_of(op.a_type)) - 1;
        const uint32_t b_mask = bits_of(op.b_type) == 32 ? ~0u : (1u << bits_of(op.b_type)) - 1;
        // Half the trials: raw bits; the others: finite inputs, so most results are numbers.
        const Matrices finite = random_matrices(op, arch, rng);
        for (size_t x = 0; x < m.a.size(); ++x) m.a[x] = trial % 2 ? finite.a[x] : static_cast<uint32_t>(rng()) & a_mask;
        for (size_t x = 0; x < m.b.size(); ++x) m.b[x] = trial % 2 ? finite.b[x] : static_cast<uint32_t>(rng()) & b_mask;
        for (uint32_t& x : m.c) x = static_cast<uint32_t>(rng() % 8 ? random_f32(rng, 20) : rng());
        const std::vector<uint32_t> d = run(op, arch, m);
        for (int blk = 0; blk < op.blocks; ++blk)
          for (int i = 0; i < op.m; ++i)
            for (int j = 0; j < op.n; ++j) {
              float want = std::bit_cast<float>(m.c[c_index(op, blk, i, j)]);
              for (int k = 0; k < op.k; ++k)
                want = std::fma(element(op.a_type, m.a[a_index(op, blk, i, k)]), element(op.b_type, m.b[b_index(op, blk, k, j)]), want);
              const uint32_t got = d[c_index(op, blk, i, j)];
              const bool right = std::isnan(want) ? std::isnan(std::bit_cast<float>(got)) : got == std::bit_cast<uint32_t>(want);
              if (!right) wrong.add(blk, i, j, show(got, false), show(std::bit_cast<uint32_t>(want), false));
            }
      }
      CHECK_MESSAGE(wrong.count() == 0, wrong.report());
    }
}

TEST_CASE("d may alias c") {
  const uint64_t seed = run_seed();
  INFO("seed " << seed << " (rerun with WEFT_MFMA_SEED=" << seed << ")");
  Rng rng(seed + 3);
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      INFO(target(arch) << " " << name(op));
      const Matrices m = random_matrices(op, arch, rng);
      const std::vector<uint32_t> a = encode_a(op, m.a), b = encode_b(op, m.b), c = encode_accum(op, m.c);
      std::vector<uint32_t> separate(c.size()), in_place = c;
      execute_mfma(op, arch, a.data(), b.data(), c.data(), separate.data());
      execute_mfma(op, arch, a.data(), b.data(), in_place.data(), in_place.data());
      CHECK(in_place == separate);
      // A and B zero: D is C.
      const std::vector<uint32_t> zeros(std::max(op.a_dwords, op.b_dwords) * kWave, 0);
      std::vector<uint32_t> d(c.size());
      execute_mfma(op, arch, zeros.data(), zeros.data(), c.data(), d.data());
      CHECK(d == c);
    }
}

TEST_CASE("fp8 and bf8 decode every code as the target's format") {
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      if (!has_fp8(op) || op.m != 16) continue;
      INFO(target(arch) << " " << name(op));
      int wrong_a = 0, wrong_b = 0;
      for (uint32_t code = 0; code < 256; ++code) {
        wrong_a += !same_value(through_a(op, arch, code), value_of(op.a_type, arch, code));
        wrong_b += !same_value(through_b(op, arch, code), value_of(op.b_type, arch, code));
      }
      CHECK(wrong_a == 0);
      CHECK(wrong_b == 0);
    }
}

TEST_CASE("element formats: known codes") {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  struct Known {
    Arch arch;
    const char* mnemonic;  // an op whose B operand has the format
    uint32_t code;
    double value;
  };
  const Known known[] = {
      // gfx942 fp8 = E4M3FNUZ: bias 8, max 240, 0x80 the only NaN, no inf.
      {Arch::Gfx942, "v_mfma_f32_16x16x32_fp8_fp8", 0x40, 1.0},
      {Arch::Gfx942, "v_mfma_f32_16x16x32_fp8_fp8", 0x7f, 240.0},
      {Arch::Gfx942, "v_mfma_f32_16x16x32_fp8_fp8", 0xff, -240.0},
      {Arch::Gfx942, "v_mfma_f32_16x16x32_fp8_fp8", 0x01, 0x1p-10},
      {Arch::Gfx942, "v_mfma_f32_16x16x32_fp8_fp8", 0x80, kNan},
      // gfx942 bf8 = E5M2FNUZ: bias 16, the all-ones exponent is a number.
      {Arch::Gfx942, "v_mfma_f32_32x32x16_fp8_bf8", 0x40, 1.0},
      {Arch::Gfx942, "v_mfma_f32_32x32x16_fp8_bf8", 0x7c, 32768.0},
      {Arch::Gfx942, "v_mfma_f32_32x32x16_fp8_bf8", 0x7f, 57344.0},
      {Arch::Gfx942, "v_mfma_f32_32x32x16_fp8_bf8", 0x01, 0x1p-17},
      {Arch::Gfx942, "v_mfma_f32_32x32x16_fp8_bf8", 0x80, kNan},
      // gfx950 fp8 = OCP E4M3FN: bias 7, max 448, S.1111.111 NaN, 0x80 = -0.
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x38, 1.0},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x78, 256.0},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x7e, 448.0},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x7f, kNan},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0xff, kNan},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x80, 0.0},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_bf8_fp8", 0x01, 0x1p-9},
      // gfx950 bf8 = OCP E5M2: bias 15, IEEE inf and NaN.
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0x3c, 1.0},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0x7b, 57344.0},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0x7c, kInf},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0xfc, -kInf},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0x7d, kNan},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf8_bf8", 0x01, 0x1p-16},
      // f16 and bf16, subnormals kept.
      {Arch::Gfx942, "v_mfma_f32_16x16x16_f16", 0x3c00, 1.0},
      {Arch::Gfx950, "v_mfma_f32_16x16x32_f16", 0x0001, 0x1p-24},
      {Arch::Gfx942, "v_mfma_f32_4x4x4_16b_f16", 0x7bff, 65504.0},
      {Arch::Gfx950, "v_mfma_f32_32x32x8_f16", 0xfc00, -kInf},
      {Arch::Gfx942, "v_mfma_f32_32x32x4_2b_f16", 0x7e00, kNan},
      {Arch::Gfx942, "v_mfma_f32_16x16x16_bf16", 0x3f80, 1.0},
      {Arch::Gfx950, "v_mfma_f32_32x32x16_bf16", 0x0001, 0x1p-133},
      {Arch::Gfx942, "v_mfma_f32_16x16x4_4b_bf16", 0x7f80, kInf},
      // f32 keeps its whole mantissa; xf32 truncates it to 10 bits (toward zero, not rounding).
      {Arch::Gfx942, "v_mfma_f32_16x16x4_f32", 0x3f801fff, std::bit_cast<float>(0x3f801fffu)},
      {Arch::Gfx950, "v_mfma_f32_4x4x1_16b_f32", 0x00000001, 0x1p-149},
      {Arch::Gfx942, "v_mfma_f32_16x16x8_xf32", 0x3f801fff, 1.0},
      {Arch::Gfx942, "v_mfma_f32_32x32x4_xf32", 0xbf801fff, -1.0},
      {Arch::Gfx942, "v_mfma_f32_16x16x8_xf32", 0x3f803000, 1.0 + 0x1p-10},
      {Arch::Gfx942, "v_mfma_f32_16x16x8_xf32", 0x7fc00000, kNan},
      // i8 is signed.
      {Arch::Gfx942, "v_mfma_i32_16x16x32_i8", 0x80, -128.0},
      {Arch::Gfx950, "v_mfma_i32_16x16x64_i8", 0xff, -1.0},
      {Arch::Gfx950, "v_mfma_i32_4x4x4_16b_i8", 0x7f, 127.0},
  };
  for (const Known& k : known) {
    INFO(target(k.arch) << " " << std::string(k.mnemonic) << " code 0x" << std::hex << k.code);
    const MfmaOp* op = find_mfma(k.mnemonic, k.arch);
    REQUIRE(op != nullptr);
    CHECK(same_value(through_b(*op, k.arch, k.code), k.value));
    if (op->a_type == op->b_type) CHECK(same_value(through_a(*op, k.arch, k.code), k.value));
  }
}

TEST_CASE("every op accumulates its k in the order of the layout") {
  // The sum is the same under any reordering of k applied to both A and B, so only the rounding
  // can tell a layout's k order: the probe puts at k1 a product that is lost if it comes first
  // and survives if it comes second. (i8 sums are exact; their k order cannot be seen.)
  for (Arch arch : kArchs)
    for (const MfmaOp& op : mfma_ops(arch)) {
      if (op.integer_accum) continue;
      INFO(target(arch) << " " << name(op));
      const std::optional<OrderProbe> probe = order_probe(op, arch);
      REQUIRE(probe.has_value());
      int out_of_order = 0;
      for (int k1 = 0; k1 + 1 < op.k; ++k1) {
        Matrices m = zero_matrices(op);
        std::fill(m.c.begin(), m.c.end(), probe->c);
        for (int blk = 0; blk < op.blocks; ++blk) {
          for (int i = 0; i < op.m; ++i) {
            m.a[a_index(op, blk, i, k1)] = probe->one_a;
            m.a[a_index(op, blk, i, k1 + 1)] = probe->big_a;
          }
          for (int j = 0; j < op.n; ++j) {
            m.b[b_index(op, blk, k1, j)] = probe->tiny_b;
            m.b[b_index(op, blk, k1 + 1, j)] = probe->minus_big_b;
          }
        }
        const std::vector<uint32_t> d = run(op, arch, m);
        const auto nonzero = [](uint32_t x) { return std::bit_cast<float>(x) != 0.0f; };
        out_of_order += static_cast<int>(std::ranges::count_if(d, nonzero));
      }
      CHECK(out_of_order == 0);
    }
}

TEST_CASE("i32 accumulation wraps") {
  for (Arch arch : kArchs) {
    const MfmaOp* op = find_mfma("v_mfma_i32_32x32x16_i8", arch);
    REQUIRE(op != nullptr);
    Matrices m = zero_matrices(*op);
    m.a[a_index(*op, 0, 5, 3)] = 0x7f;  // 127
    m.b[b_index(*op, 0, 3, 7)] = 0x7f;
    m.c[c_index(*op, 0, 5, 7)] = 0x7fffffff;
    const std::vector<uint32_t> d = run(*op, arch, m);
    CHECK(d[c_index(*op, 0, 5, 7)] == 0x7fffffffu + 127u * 127u);
  }
}

TEST_CASE("accumulation is a chain of fp32 fused multiply-adds in k order, from C") {
  for (Arch arch : kArchs) {
    const MfmaOp* op = find_mfma("v_mfma_f32_16x16x4_f32", arch);
    REQUIRE(op != nullptr);
    const uint32_t one = std::bit_cast<uint32_t>(1.0f);
    // C = 1, then + 2^-24 twice (each a tie that leaves 1), then - 1: 0. Exact or reordered sums
    // (C last, k descending, pairwise) give 2^-23.
    Matrices m = zero_matrices(*op);
    m.c[c_index(*op, 0, 2, 9)] = one;
    for (int k = 0; k < 4; ++k) m.a[a_index(*op, 0, 2, k)] = one;
    m.b[b_index(*op, 0, 0, 9)] = std::bit_cast<uint32_t>(0x1p-24f);
    m.b[b_index(*op, 0, 1, 9)] = std::bit_cast<uint32_t>(0x1p-24f);
    m.b[b_index(*op, 0, 2, 9)] = std::bit_cast<uint32_t>(-1.0f);
    CHECK(std::bit_cast<float>(run(*op, arch, m)[c_index(*op, 0, 2, 9)]) == 0.0f);
    // Fused: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is not rounded (to 1 + 2^-11) before C is added.
    Matrices f = zero_matrices(*op);
    f.a[a_index(*op, 0, 0, 0)] = std::bit_cast<uint32_t>(1.0f + 0x1p-12f);
    f.b[b_index(*op, 0, 0, 0)] = std::bit_cast<uint32_t>(1.0f + 0x1p-12f);
    f.c[c_index(*op, 0, 0, 0)] = std::bit_cast<uint32_t>(-(1.0f + 0x1p-11f));
    CHECK(std::bit_cast<float>(run(*op, arch, f)[c_index(*op, 0, 0, 0)]) == 0x1p-24f);
  }
}

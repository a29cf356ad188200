#include "weft/dsl/alu.h"

#include <bit>
#include <cmath>

namespace weft {
namespace {

// Bit operations are done on the two's-complement pattern of the value at its width.
using U = unsigned __int128;

std::optional<Wide> shift(Op op, DType dt, Wide x, Wide amount) {
  const int bits = dt.bits();
  if (amount < 0 || amount >= bits) return std::nullopt;
  if (op == Op::SHL) return wrap_to(dt, static_cast<Wide>(static_cast<U>(x) << static_cast<int>(amount)));
  // SHR: arithmetic for signed types (floor division by 2^amount), logical for unsigned.
  if (dt.is_signed()) {
    Wide d = Wide(1) << static_cast<int>(amount);
    Wide q = x / d;
    if (x % d != 0 && x < 0) --q;
    return q;
  }
  return wrap_to(dt, x >> static_cast<int>(amount));
}

std::optional<Wide> binary(Op op, DType dt, Wide a, Wide b) {
  switch (op) {
    case Op::ADD: return wrap_to(dt, a + b);
    case Op::SUB: return wrap_to(dt, a - b);
    case Op::MUL: return wrap_to(dt, static_cast<Wide>(static_cast<U>(a) * static_cast<U>(b)));
    case Op::IDIV: return b == 0 ? std::nullopt : std::optional<Wide>(wrap_to(dt, a / b));
    case Op::MOD: return b == 0 ? std::nullopt : std::optional<Wide>(wrap_to(dt, a % b));
    case Op::MAX: return a > b ? a : b;
    case Op::MIN: return a < b ? a : b;
    case Op::CMPLT: return Wide(a < b);
    case Op::CMPNE: return Wide(a != b);
    case Op::CMPEQ: return Wide(a == b);
    case Op::AND: return wrap_to(dt, static_cast<Wide>(static_cast<U>(a) & static_cast<U>(b)));
    case Op::OR: return wrap_to(dt, static_cast<Wide>(static_cast<U>(a) | static_cast<U>(b)));
    case Op::XOR: return wrap_to(dt, static_cast<Wide>(static_cast<U>(a) ^ static_cast<U>(b)));
    case Op::SHL:
    case Op::SHR: return shift(op, dt, a, b);
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<Wide> exec_int(Op op, DType operand, std::span<const Wide> args) {
  const DType dt = operand.element();
  switch (args.size()) {
    case 1:
      if (op == Op::NEG) return wrap_to(dt, -args[0]);
      if (op == Op::CAST) return wrap_to(dt, args[0]);
      if (op == Op::POPCOUNT && dt.is_unsigned()) return Wide(std::popcount(static_cast<uint64_t>(wrap_to(dt, args[0]))));
      return std::nullopt;
    case 2: return binary(op, dt, args[0], args[1]);
    case 3:
      if (op == Op::WHERE) return args[0] != 0 ? args[1] : args[2];
      if (op == Op::MULACC) return wrap_to(dt, static_cast<Wide>(static_cast<U>(args[0]) * static_cast<U>(args[1])) + args[2]);
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<double> exec_float(Op op, DType dtype, std::span<const double> a) {
  double r;
  switch (op) {
    case Op::ADD: r = a[0] + a[1]; break;
    case Op::SUB: r = a[0] - a[1]; break;
    case Op::MUL: r = a[0] * a[1]; break;
    case Op::FDIV: r = a[0] / a[1]; break;
    case Op::MAX: r = std::fmax(a[0], a[1]); break;
    case Op::MIN: r = std::fmin(a[0], a[1]); break;
    case Op::POW: r = std::pow(a[0], a[1]); break;
    case Op::NEG: r = -a[0]; break;
    case Op::RECIP: r = 1.0 / a[0]; break;
    case Op::SQRT: r = std::sqrt(a[0]); break;
    case Op::EXP2: r = std::exp2(a[0]); break;
    case Op::LOG2: r = std::log2(a[0]); break;
    case Op::SIN: r = std::sin(a[0]); break;
    case Op::TRUNC: r = std::trunc(a[0]); break;
    case Op::MULACC: r = std::fma(a[0], a[1], a[2]); break;
    case Op::WHERE: r = a[0] != 0 ? a[1] : a[2]; break;
    default: return std::nullopt;
  }
  return round_to(dtype, r);
}

bool compare_float(Op op, double a, double b) {
  if (op == Op::CMPLT) return a < b;
  if (op == Op::CMPEQ) return a == b;
  return a != b;
}

}  // namespace weft

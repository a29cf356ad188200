#include "weft/dsl/dtype.h"

#include <array>
#include <stdexcept>

namespace weft {
namespace {

struct ScalarInfo {
  std::string_view name;
  int bits;
  bool is_int, is_signed, is_float;
};

constexpr std::array<ScalarInfo, kScalarCount> kScalars{{
    {"void", 0, false, false, false},
    {"bool", 8, false, false, false},
    {"int8", 8, true, true, false},
    {"int16", 16, true, true, false},
    {"int32", 32, true, true, false},
    {"int64", 64, true, true, false},
    {"uint8", 8, true, false, false},
    {"uint16", 16, true, false, false},
    {"uint32", 32, true, false, false},
    {"uint64", 64, true, false, false},
    {"float16", 16, false, true, true},
    {"bfloat16", 16, false, true, true},
    {"float32", 32, false, true, true},
    {"float64", 64, false, true, true},
    {"float8_e4m3", 8, false, true, true},
    {"float8_e5m2", 8, false, true, true},
    {"float8_e4m3fnuz", 8, false, true, true},
    {"float8_e5m2fnuz", 8, false, true, true},
    {"index", 64, true, true, false},
}};

const ScalarInfo& info(Scalar s) { return kScalars[static_cast<size_t>(s)]; }

}  // namespace

bool DType::is_int() const { return info(scalar).is_int; }
bool DType::is_signed() const { return info(scalar).is_int && info(scalar).is_signed; }
bool DType::is_unsigned() const { return info(scalar).is_int && !info(scalar).is_signed; }
bool DType::is_float() const { return info(scalar).is_float; }
bool DType::is_fp8() const { return bits() == 8 && is_float(); }
int DType::bits() const { return info(scalar).bits; }

Wide DType::min_value() const {
  if (is_bool() || is_unsigned()) return 0;
  if (!is_signed()) throw std::logic_error("min_value of non-integral dtype " + name());
  return -(Wide(1) << (bits() - 1));
}

Wide DType::max_value() const {
  if (is_bool()) return 1;
  if (is_unsigned()) return (Wide(1) << bits()) - 1;
  if (!is_signed()) throw std::logic_error("max_value of non-integral dtype " + name());
  return (Wide(1) << (bits() - 1)) - 1;
}

std::optional<FloatFormat> DType::float_format() const {
  switch (scalar) {
    case Scalar::Float16: return FloatFormat::Float16;
    case Scalar::BFloat16: return FloatFormat::BFloat16;
    case Scalar::Fp8E4M3: return FloatFormat::Fp8E4M3;
    case Scalar::Fp8E5M2: return FloatFormat::Fp8E5M2;
    case Scalar::Fp8E4M3Fnuz: return FloatFormat::Fp8E4M3Fnuz;
    case Scalar::Fp8E5M2Fnuz: return FloatFormat::Fp8E5M2Fnuz;
    default: return std::nullopt;
  }
}

std::string DType::name() const {
  std::string n(info(scalar).name);
  if (lanes > 1) n += ".vec" + std::to_string(lanes);
  return n;
}

std::string_view scalar_name(Scalar s) { return info(s).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  int lanes = 1;
  if (auto dot = name.find(".vec"); dot != std::string_view::npos) {
    std::string digits(name.substr(dot + 4));
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    lanes = std::stoi(digits);
    if (lanes < 1) return std::nullopt;
    name = name.substr(0, dot);
  }
  for (int i = 0; i < kScalarCount; ++i)
    if (kScalars[i].name == name) return DType{static_cast<Scalar>(i), static_cast<uint16_t>(lanes)};
  return std::nullopt;
}

Wide wrap_to(DType dtype, Wide value) {
  DType e = dtype.element();
  if (e.is_bool()) return value != 0;
  if (!e.is_int()) throw std::logic_error("wrap_to on non-integral dtype " + e.name());
  const int bits = e.bits();
  using U = unsigned __int128;
  U mask = (U(1) << bits) - 1;
  U low = static_cast<U>(value) & mask;
  if (e.is_unsigned()) return static_cast<Wide>(low);
  U sign = U(1) << (bits - 1);
  return (low & sign) ? static_cast<Wide>(low) - (Wide(1) << bits) : static_cast<Wide>(low);
}

double round_to(DType dtype, double value) {
  DType e = dtype.element();
  if (e == dtypes::float64) return value;
  if (e == dtypes::float32) return static_cast<double>(static_cast<float>(value));
  // A cast to fp8 saturates (docs/ir.md, CAST); float16 and bfloat16 overflow to inf.
  const Overflow overflow = e.is_fp8() ? Overflow::Saturate : Overflow::NonFinite;
  if (auto fmt = e.float_format()) return decode_float(*fmt, encode_float(*fmt, value, overflow));
  throw std::logic_error("round_to on non-float dtype " + e.name());
}

std::string wide_to_string(Wide v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

}  // namespace weft

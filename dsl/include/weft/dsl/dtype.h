// Data types of IR values: a scalar kind and a vector width.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "weft/dsl/float_formats.h"

namespace weft {

// 128-bit integer used for exact value-range arithmetic (products of two 64-bit bounds fit).
using Wide = __int128;

enum class Scalar : uint8_t {
  Void,
  Bool,
  Int8, Int16, Int32, Int64,
  UInt8, UInt16, UInt32, UInt64,
  Float16, BFloat16, Float32, Float64,
  Fp8E4M3, Fp8E5M2,          // OCP formats (CDNA4, Hopper)
  Fp8E4M3Fnuz, Fp8E5M2Fnuz,  // CDNA3 formats
  Index,                     // the type of ranges and indices: a 64-bit signed integer until
                             // index lowering picks int32 or int64 from value ranges
};
inline constexpr int kScalarCount = static_cast<int>(Scalar::Index) + 1;

struct DType {
  Scalar scalar = Scalar::Void;
  uint16_t lanes = 1;  // vector width; 1 for a scalar

  constexpr bool operator==(const DType&) const = default;

  constexpr DType vec(int n) const { return DType{scalar, static_cast<uint16_t>(n)}; }
  constexpr DType element() const { return DType{scalar, 1}; }
  constexpr bool is_vector() const { return lanes > 1; }

  bool is_void() const { return scalar == Scalar::Void; }
  bool is_bool() const { return scalar == Scalar::Bool; }
  bool is_int() const;       // signed, unsigned or Index (not Bool)
  bool is_signed() const;    // signed integer or Index
  bool is_unsigned() const;
  bool is_float() const;     // any floating-point kind, fp8 included
  bool is_fp8() const;
  // Integer-like kinds whose values the range analysis tracks: ints, Index and Bool.
  bool is_integral() const { return is_int() || is_bool(); }

  int bits() const;          // bits of one element (Index counts as 64, Bool as 8)
  int itemsize() const { return (bits() + 7) / 8 * lanes; }

  // Smallest and largest value of an integral element type.
  Wide min_value() const;
  Wide max_value() const;

  // The narrow float format, for Float16, BFloat16 and the fp8 kinds.
  std::optional<FloatFormat> float_format() const;

  std::string name() const;  // "float32", "bfloat16.vec4", "index"
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void};
inline constexpr DType bool_{Scalar::Bool};
inline constexpr DType int8{Scalar::Int8};
inline constexpr DType int16{Scalar::Int16};
inline constexpr DType int32{Scalar::Int32};
inline constexpr DType int64{Scalar::Int64};
inline constexpr DType uint8{Scalar::UInt8};
inline constexpr DType uint16{Scalar::UInt16};
inline constexpr DType uint32{Scalar::UInt32};
inline constexpr DType uint64{Scalar::UInt64};
inline constexpr DType float16{Scalar::Float16};
inline constexpr DType bfloat16{Scalar::BFloat16};
inline constexpr DType float32{Scalar::Float32};
inline constexpr DType float64{Scalar::Float64};
inline constexpr DType fp8e4m3{Scalar::Fp8E4M3};
inline constexpr DType fp8e5m2{Scalar::Fp8E5M2};
inline constexpr DType fp8e4m3fnuz{Scalar::Fp8E4M3Fnuz};
inline constexpr DType fp8e5m2fnuz{Scalar::Fp8E5M2Fnuz};
inline constexpr DType index{Scalar::Index};
}  // namespace dtypes

std::string_view scalar_name(Scalar s);
// Parses a name as DType::name() prints it; nullopt if unknown.
std::optional<DType> parse_dtype(std::string_view name);

// Wraps an exact integer into the value set of an integral type (two's complement for signed
// and Index, modulo 2^bits for unsigned, nonzero -> 1 for Bool): C-like overflow semantics.
Wide wrap_to(DType dtype, Wide value);

// Rounds a double to the nearest value of a float element type (float32, float64, the narrow
// formats), as a cast in a kernel would: ties to even; float16 and bfloat16 overflow to inf,
// the fp8 formats saturate to their largest finite value (Overflow::Saturate).
double round_to(DType dtype, double value);

std::string wide_to_string(Wide v);

}  // namespace weft

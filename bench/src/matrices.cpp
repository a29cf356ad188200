#include "matrices.h"

#include <cmath>
#include <cstring>
#include <random>

#include "weft/dsl/error.h"
#include "weft/dsl/float_formats.h"

namespace weft::bench {

std::vector<uint8_t> random_matrix(DType dtype, int64_t rows, int64_t cols, uint64_t seed, std::vector<float>& values) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const size_t count = static_cast<size_t>(rows * cols);
  std::vector<uint8_t> bytes(count * static_cast<size_t>(dtype.itemsize()));
  values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const float v = dist(gen);
    if (dtype == dtypes::bfloat16 || dtype == dtypes::float16) {
      const uint16_t h = dtype == dtypes::bfloat16 ? float_to_bf16(v) : float_to_half(v);
      std::memcpy(&bytes[i * 2], &h, 2);
      values[i] = dtype == dtypes::bfloat16 ? bf16_to_float(h) : half_to_float(h);
    } else if (dtype == dtypes::float32) {
      std::memcpy(&bytes[i * 4], &v, 4);
      values[i] = v;
    } else if (dtype.is_fp8()) {
      bytes[i] = static_cast<uint8_t>(encode_float(*dtype.float_format(), v));
      values[i] = static_cast<float>(decode_float(*dtype.float_format(), bytes[i]));
    } else {
      throw Error("weft bench: no random inputs of " + dtype.name());
    }
  }
  return bytes;
}

std::vector<double> as_doubles(DType dtype, const std::vector<uint8_t>& bytes) {
  const size_t size = static_cast<size_t>(dtype.itemsize()), count = bytes.size() / size;
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (dtype == dtypes::float32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      out[i] = f;
    } else if (dtype == dtypes::bfloat16 || dtype == dtypes::float16) {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = dtype == dtypes::bfloat16 ? bf16_to_float(h) : half_to_float(h);
    } else {
      throw Error("weft bench: cannot read outputs of " + dtype.name());
    }
  }
  return out;
}

Check compare(const std::vector<double>& got, const std::vector<double>& want, double tolerance, std::string against) {
  Check c;
  c.tolerance = tolerance;
  c.against = std::move(against);
  if (got.size() != want.size()) throw Error("weft bench: comparing " + std::to_string(got.size()) + " values with " + std::to_string(want.size()));
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(want[i]));
  }
  c.max_error = scale > 0 ? diff / scale : diff;
  c.ok = c.max_error <= tolerance;
  return c;
}

}  // namespace weft::bench

#include "host_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "weft/dsl/float_formats.h"

namespace weft::moe::detail {

std::vector<uint8_t> random_values(DType dtype, size_t n, std::mt19937_64& gen, std::vector<double>& exact) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  exact.resize(n);
  for (double& x : exact) x = dtype == dtypes::bfloat16 ? bf16_to_float(float_to_bf16(u(gen))) : u(gen);
  return value_bytes(dtype, exact);
}

std::vector<double> read_values(DType dtype, const std::vector<uint8_t>& bytes) {
  std::vector<double> v(bytes.size() / static_cast<size_t>(dtype.itemsize()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == dtypes::bfloat16) {
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      v[i] = bf16_to_float(b);
    } else {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      v[i] = f;
    }
  }
  return v;
}

std::vector<uint8_t> value_bytes(DType dtype, const std::vector<double>& values) {
  std::vector<uint8_t> b(values.size() * static_cast<size_t>(dtype.itemsize()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == dtypes::bfloat16) {
      const uint16_t h = float_to_bf16(static_cast<float>(values[i]));
      std::memcpy(&b[i * 2], &h, 2);
    } else {
      const float f = static_cast<float>(values[i]);
      std::memcpy(&b[i * 4], &f, 4);
    }
  }
  return b;
}

namespace {
std::string element(const std::string& name, size_t i, int64_t row_length) {
  const auto n = static_cast<size_t>(row_length);
  return name + "[" + std::to_string(i / n) + (n > 1 ? ", " + std::to_string(i % n) : "") + "]";
}
}  // namespace

gemm::Check compare(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& tolerance, const std::string& name,
                    int64_t row_length) {
  gemm::Check c;
  c.count = want.size();
  if (got.size() != want.size()) {
    c.bad = c.count ? c.count : 1;
    c.first_bad = name + ": " + std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
    return c;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    const bool ok = err <= tolerance[i];  // false for NaN
    if (!std::isnan(err)) c.max_error = std::max(c.max_error, err);
    c.worst_ratio = std::max(c.worst_ratio, ok ? (tolerance[i] > 0 ? err / tolerance[i] : 0.0) : (std::isnan(err) ? INFINITY : err / tolerance[i]));
    if (ok) continue;
    if (!c.bad++) {
      std::ostringstream s;
      s.precision(9);
      s << element(name, i, row_length) << " = " << got[i] << ", expected " << want[i] << " (tolerance " << tolerance[i] << ")";
      c.first_bad = s.str();
    }
  }
  return c;
}

gemm::Check compare_bits(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, size_t element_bytes, const std::string& name,
                         int64_t row_length) {
  gemm::Check c;
  c.count = want.size() / element_bytes;
  if (got.size() != want.size()) {
    c.bad = c.count ? c.count : 1;
    c.first_bad = name + ": " + std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
    return c;
  }
  for (size_t i = 0; i < c.count; ++i) {
    if (std::memcmp(&got[i * element_bytes], &want[i * element_bytes], element_bytes) == 0) continue;
    c.worst_ratio = INFINITY;
    if (!c.bad++) {
      std::ostringstream s;
      s << element(name, i, row_length) << ": bytes";
      for (size_t b = 0; b < element_bytes; ++b) s << " " << std::hex << int(got[i * element_bytes + b]);
      s << ", expected";
      for (size_t b = 0; b < element_bytes; ++b) s << " " << std::hex << int(want[i * element_bytes + b]);
      c.first_bad = s.str();
    }
  }
  return c;
}

}  // namespace weft::moe::detail

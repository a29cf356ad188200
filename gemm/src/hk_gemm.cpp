#include "weft/gemm/hk_gemm.h"

#include "host_matrix.h"
#include "weft/kernels/tiles.h"

namespace weft::gemm {

using namespace tile;

HkGemmShape hk_gemm_shape(std::string_view arch) {
  if (arch != "gfx950" && arch != "gfx942") throw Error("hk_gemm: no schedule for target '" + std::string(arch) + "' (gfx950, gfx942)");
  return gemm_block_shape(arch);
}

UOp hk_gemm(std::string_view arch, DType output) { return hk_gemm(arch, output, hk_gemm_shape(arch)); }

UOp hk_gemm_fp8(std::string_view arch, DType output) {
  hk_gemm_shape(arch);  // a target hk_gemm has a schedule for
  const DType fp8 = mfma_fp8(arch);
  return hk_gemm(arch, output, gemm_block_shape(arch, fp8), fp8);
}

int64_t hk_gemm_k_multiple(DType input) { return 16 / input.itemsize(); }

UOp hk_gemm(std::string_view arch, DType output, const HkGemmShape& s, DType input) {
  if (output != dtypes::bfloat16 && output != dtypes::float32) throw Error("hk_gemm: the output is bfloat16 or float32, not " + output.name());
  hk_gemm_shape(arch);  // a target hk_gemm has a schedule for
  if (input != dtypes::bfloat16 && input != mfma_fp8(arch))
    throw Error("hk_gemm: the inputs are bfloat16 or " + mfma_fp8(arch).name() + " on " + std::string(arch) + ", not " + input.name());
  const UOp m = variable("M", 1, 1 << 20), n = variable("N", 1, 1 << 20), k = variable("K", hk_gemm_k_multiple(input), 1 << 20);
  const gl c = global(0, m, n, output), a = global(1, m, k, input), b = global(2, n, k, input);
  const Workgroup wg = gemm_workgroup(arch, s, {tiles_of(n, s.block_n), tiles_of(m, s.block_m)});
  const UOp row0 = wg.block(1) * s.block_m, col0 = wg.block(0) * s.block_n;
  const acc sum = gemm_block(wg, s, a, b, row0, col0, tiles_of(k, s.k_step));
  const UOp wave_row0 = row0 + wg.wave_row() * s.wave_m(), wave_col0 = col0 + wg.wave_col() * s.wave_n();
  return sink({"hk_gemm"}, {store(wg, c, sum, wave_row0, wave_col0)});
}

namespace {

void check_run(int64_t m, int64_t n, int64_t k, bool identity_b, DType input = dtypes::bfloat16) {
  const int64_t multiple = hk_gemm_k_multiple(input);
  if (m < 1 || n < 1 || k < multiple || k % multiple)
    throw Error("hk_gemm: M, N >= 1 and K >= " + std::to_string(multiple) + " a multiple of " + std::to_string(multiple) + " (" + input.name() +
                "); got M=" + std::to_string(m) + ", N=" + std::to_string(n) + ", K=" + std::to_string(k));
  if (identity_b && n != k) throw Error("run_hk_gemm: an identity B needs N == K");
}

}  // namespace

RunResult run_hk_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType output, bool identity_b, uint64_t seed, rt::CompileCache* cache) {
  check_run(m, n, k, identity_b);
  return run_transposed_product(device, hk_gemm(device.arch(), output), dtypes::bfloat16, m, n, k, output, identity_b, seed, cache);
}

RunResult run_hk_gemm(rt::Device& device, const HkGemmShape& shape, int64_t m, int64_t n, int64_t k, DType output, bool identity_b,
                      uint64_t seed, DType input) {
  check_run(m, n, k, identity_b, input);
  return run_transposed_product(device, hk_gemm(device.arch(), output, shape, input), input, m, n, k, output, identity_b, seed, nullptr);
}

}  // namespace weft::gemm

// hopper_gemm: C = A * B^T on an NVIDIA Hopper GPU (sm_90a), written with the tile layer's Hopper
// operations (kernels/tiles_hopper.h over dsl/builder.h's "Hopper" statements): TMA loads into a
// ring of shared-memory stages guarded by mbarriers, warpgroup MMAs (wgmma) from swizzled shared
// tiles, one producer warpgroup and two consumer warpgroups (warp specialization).
//
// A [M, K] and B [N, K] are bfloat16 or float8_e4m3fn and K-contiguous (B as cuBLAS's "T"
// operand, hk_gemm's B), C [M, N] is bfloat16 or float32, accumulation in fp32. M, N and K are
// kernel variables: any M, N >= 1 and K a multiple of 16 bytes of the input (bf16: K >= 8 a
// multiple of 8; fp8: K >= 16 a multiple of 16: a TMA row is a multiple of 16 bytes). Tiles past
// the edges are filled with zeros by TMA and the epilogue stores only elements inside C: by TMA
// stores (clipped at the edges, HopperStore::Tma, the default) where C's rows are a multiple of 16
// bytes, by masked stores of each thread's elements otherwise (HopperStore::Direct).
//
// The epilogue (HopperEpilogue) maps each fp32 sum before it is converted to C's dtype:
//   C[i, j] = activation(sum[i, j] * scale_a[i] * scale_b[j] + bias[j])
// with float32 scales (one each for the whole tensor, or one per row of A and per row of B, the
// fp8 recipes' "per-tensor" and "row-wise" scaling) and a float32 bias per column of C.
//
// The default schedule, HopperSchedule::Cooperative (docs/nvidia.md, "hopper_gemm"):
//   - persistent: CTAS workgroups of 3 warpgroups (the kernel variable CTAS, as many as the GPU
//     runs at once: hopper_gemm_ctas) walk the 128 x 256 blocks of C, workgroup w taking blocks
//     w, w + CTAS, ..., in L2-friendly order: groups of `group_rows` block rows, column by column
//     inside a group;
//   - warpgroup 0, warp 0 (the producer): for each block and K step of 128 bytes, wait until the
//     consumers released the stage (`empty`), announce its bytes and issue two TMA loads (A's
//     128-row box, B's 256-row box) that complete on the stage's `full` mbarrier; it runs up to
//     `stages` steps ahead, into the next block while the consumers store this one;
//   - warpgroups 1 and 2 (the consumers, 64 rows of the block each): wait for `full`, issue four
//     m64n256k16 (bf16) or m64n256k32 (fp8) wgmmas as one group (the block's first overwrites the
//     accumulator), wait until only that group is in flight and release the previous step's
//     stage; after the block's last step, wait for it, apply the epilogue, and convert and store
//     the 64 x 256 accumulator (128 fp32 registers a thread): with TMA stores, each warp writes
//     its 16 rows a 128-byte chunk of columns at a time into one of its two swizzled staging
//     boxes and TMA-stores the box, the stores running on into the next block.
// The other schedules change the block, the ring and who computes what (HopperSchedule,
// HopperGemmShape): Cooperative64B takes K steps of 64 bytes and keeps three MMA groups in
// flight, the ping-pong ones give each consumer its own blocks in turn. docs/PERF.md measures
// them all slower than Cooperative on an H100.
#pragma once

#include <cstdint>

#include "weft/gemm/matmul_relu.h"

namespace weft::gemm {

// How the two consumer warpgroups share the work (docs/nvidia.md, "hopper_gemm").
enum class HopperSchedule {
  // Both consumers on one 128 x 256 block of C, 64 rows each, through a ring of 4 stages of
  // 48 KiB: m64n256 wgmmas. The tensor cores idle while both store the block.
  Cooperative,
  // Each consumer its own 128 x 128 block (two m64n128 wgmmas a K slice), the CTA's blocks taken
  // in turn (consumer c the c-th, c + 2-th, ...): one consumer's epilogue runs while the other's
  // MMAs run. A ring of 6 stages of 32 KiB.
  PingPong,
  // As PingPong with 64 x 256 blocks (one m64n256 wgmma a K slice) and 4 stages of 40 KiB.
  PingPongWide,
  // As Cooperative with K steps of 64 bytes (two wgmma K slices, the 64-byte swizzle) in 8 stages
  // of 24 KiB, three MMA groups in flight (6 K slices queued, 120 KiB loading, against
  // Cooperative's 4 and 144 KiB), released half the bytes at a time.
  Cooperative64B,
};

// The block shape and ring of a schedule. A K step is k_step_bytes of each row (128: 64 bf16 or
// 128 fp8 elements, one 128-byte swizzle row, four wgmma K slices of 32 bytes; 64: two slices).
struct HopperGemmShape {
  int64_t block_m = 128, block_n = 256;  // C's block of one walk step
  int64_t stages = 4;
  bool ping_pong = false;  // each consumer its own blocks (true) or both on every block
  int64_t k_step_bytes = 128;  // 128 or 64, the ring's swizzle
  // The MMA groups (a K step's wgmmas) a consumer keeps in flight (wgmma.wait_group N): it
  // releases a stage N steps after issuing its MMAs, so N stages are held and stages - N loading.
  // Ping-pong consumers keep 1 (their block's last stage is released after the block's loop).
  int64_t mma_groups = 1;
  // Whether the producer's warpgroup lowers its register budget to producer_registers and the
  // consumers raise theirs to consumer_registers (setmaxnreg, CUTLASS's 40 / 232), at the start of
  // their roles.
  bool register_budgets = false;
  static constexpr int64_t producer_registers = 40, consumer_registers = 232;
  static constexpr int64_t consumers = 2;    // consumer warpgroups
  static constexpr int64_t group_rows = 8;   // block rows per L2 group of the rasterization
  static constexpr int64_t warpgroup = 128;  // threads
  static HopperGemmShape of(HopperSchedule schedule);
  int64_t consumer_rows() const { return ping_pong ? block_m : block_m / consumers; }  // of a block, one consumer's
  int64_t halves() const { return consumer_rows() / 64; }                               // m64 wgmmas a K slice
  int64_t stage_bytes() const { return (block_m + block_n) * k_step_bytes; }
};

// GELU is the tanh approximation (PyTorch's gelu(approximate="tanh"), cuBLASLt's GELU epilogue):
// x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))).
enum class Activation { None, Relu, Gelu };
enum class OperandScale {
  None,
  PerTensor,  // scale_a[1], scale_b[1]
  PerRow,     // scale_a[M] (A's rows), scale_b[N] (B's rows: C's columns)
};
struct HopperEpilogue {
  OperandScale scale = OperandScale::None;
  bool bias = false;  // bias[N], added after the scales
  Activation activation = Activation::None;
  bool any() const { return scale != OperandScale::None || bias || activation != Activation::None; }
};

// How the consumers write C.
enum class HopperStore {
  Tma,     // each warp stages chunks of its rows in shared memory and TMA-stores them while the
           // warpgroup starts its next block; C's rows must be a multiple of 16 bytes (N * C's
           // item size), TMA's rule for a tensor map
  Direct,  // each thread stores its elements, masked at C's edges: any N, no overlap
};

struct HopperGemmSpec {
  DType input = dtypes::bfloat16;   // A and B: bfloat16 or float8_e4m3fn
  DType output = dtypes::bfloat16;  // C: bfloat16 or float32
  HopperEpilogue epilogue;
  // > 0: the MoE grouped form (moe/grouped_gemm.h) for a routing plan of row blocks this tall (a
  // multiple of block_m): C [ROWS, N], A [ROWS, K] (the dispatched rows), B [E, N, K] (the
  // experts' weights, as [E * N, K]) and block_expert [ROWS / grouped_block_rows] int32 in slot
  // 3. Each block of C takes B's rows from row e * N on, e the expert of its plan block; a block
  // of expert -1 computes and stores nothing. One workgroup per block of C (not persistent: the
  // blocks that run are the plan's, known only on the device). The epilogue's per-column inputs
  // (bias, per-row scale_b) are per expert column, [E * N], indexed like B's rows.
  int64_t grouped_block_rows = 0;
  // Tma by default (0.86-0.87x cuBLAS on every bf16 shape of docs/PERF.md against 0.48-0.76x
  // with Direct, H100, session 18); for_columns picks Direct where C's rows cannot take it. The
  // grouped form takes either: its N is a kernel variable, so a launch with TMA stores and an N
  // whose rows are not 16-byte multiples is refused by the launch (the tensor map's rule).
  HopperStore store = HopperStore::Tma;
  // CTAs per thread-block cluster, 1 or 2. With 2, the CTAs of a cluster take two blocks of one
  // block column (rows 2u and 2u + 1) and share B's box: each loads half of it (128 rows) by TMA
  // multicast into both CTAs' stages, and releases a stage on both CTAs' empty barriers. That
  // halves B's reads from L2. On an H100 it runs at 0.94-1.01x cluster 1 (docs/PERF.md, session
  // 20: the kernel is not bound by L2 bandwidth), so 1 stays the default.
  int64_t cluster = 1;
  // Cooperative or ping-pong (HopperSchedule); the grouped form and clusters run either Cooperative.
  HopperSchedule schedule = HopperSchedule::Cooperative;
  // setmaxnreg in the roles (HopperGemmShape::register_budgets).
  bool register_budgets = false;
  HopperGemmShape shape() const {
    HopperGemmShape s = HopperGemmShape::of(schedule);
    s.register_budgets = register_budgets;
    return s;
  }
  // This spec with the store that C's N columns allow: Direct where N * C's item size is not a
  // multiple of 16 bytes (a tensor map cannot describe such rows), `store` otherwise.
  HopperGemmSpec for_columns(int64_t n) const {
    HopperGemmSpec s = *this;
    if ((n * output.itemsize()) % 16 != 0) s.store = HopperStore::Direct;
    return s;
  }
};

// The buffer slots: 0 C, 1 A, 2 B, (the grouped form: 3 block_expert), then the epilogue's in
// this order where present (-1: absent).
struct HopperGemmSlots {
  int64_t bias = -1, scale_a = -1, scale_b = -1;
};
HopperGemmSlots hopper_gemm_slots(const HopperEpilogue& epilogue, bool grouped = false);

// The kernel (NVIDIA sm_90a), with kernel variables M, N, K and CTAS (the grouped form: ROWS, N,
// K and E). Throws weft::Error for an input or output dtype it does not take, and for a grouped
// form whose block rows are not a multiple of block_m.
UOp hopper_gemm(const HopperGemmSpec& spec);
inline UOp hopper_gemm(DType output) { return hopper_gemm(HopperGemmSpec{dtypes::bfloat16, output, {}}); }

// The persistent grid for an M x N product of `spec` on `device`: one workgroup per
// multiprocessor, at most one per block of C (a cluster's walk unit: `cluster` blocks of a block
// column), a multiple of the cluster (HopperGemmSpec::cluster). Throws weft::Error for a device
// that does not report its multiprocessors.
int64_t hopper_gemm_ctas(const rt::Device& device, const HopperGemmSpec& spec, int64_t m, int64_t n);

// Throws weft::Error naming the device unless it is an sm_90 (Hopper) GPU.
void check_hopper_device(const rt::Device& device);

// The smallest K and the multiple K must be of, for `input` (16 bytes).
int64_t hopper_gemm_k_multiple(DType input);

// The inputs run_hopper_gemm draws.
enum class HopperInputs {
  Uniform,   // A and B uniform in [-1, 1], rounded to the input dtype
  Integers,  // A and B uniform integers in [-3, 3]: every product and partial sum is exact, so
             // C is exact (fp32) or the exact sum rounded once (bf16) even with fp8's shortened
             // accumulation; the check allows only the output's and the epilogue's rounding
  Identity,  // a random A and the identity B (N == K): without an epilogue C is A, bit for bit
};

// Compiles and runs hopper_gemm on `inputs`, random scales and bias, and checks C against a
// double-precision reference of the product and the epilogue. Throws weft::Error for sizes it
// cannot take and on a device that is not sm_90.
RunResult run_hopper_gemm(rt::Device& device, const HopperGemmSpec& spec, int64_t m, int64_t n, int64_t k, HopperInputs inputs, uint64_t seed,
                          rt::CompileCache* cache = nullptr);
inline RunResult run_hopper_gemm(rt::Device& device, int64_t m, int64_t n, int64_t k, DType output, bool identity_b, uint64_t seed,
                                 rt::CompileCache* cache = nullptr) {
  return run_hopper_gemm(device, HopperGemmSpec{dtypes::bfloat16, output, {}}, m, n, k, identity_b ? HopperInputs::Identity : HopperInputs::Uniform,
                         seed, cache);
}

}  // namespace weft::gemm

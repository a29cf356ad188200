// Flash attention's forward pass, written with the tile layer: O = softmax(Q K^T * scale) V for
// every (batch, head), with an optional causal mask, never forming the Sq x Sk score matrix
// (FlashAttention-2's online softmax: each workgroup keeps its query rows' running maximum and
// sum in registers while it walks the keys block by block).
//
//   const UOp kernel = attention::flash_attention("gfx950", {.head_dim = 128, .causal = true});
//   // slots: 0 O, 1 Q [BH * SQ, d]; 2 K, 3 V [BH * SK, d]; 4 LSE [BH * SQ] with .lse;
//   // variables BH, SQ, SK
//
// docs/attention.md describes the schedule and what limits it.
#pragma once

#include <cstdint>
#include <string_view>

#include "weft/gemm/matmul_relu.h"
#include "weft/kernels/tiles.h"

namespace weft::attention {

// What the kernel computes.
struct FlashAttentionSpec {
  int64_t head_dim = 128;  // d: 64 or 128
  // Query i attends keys j <= i only: PyTorch's is_causal (the mask aligned at the top left, so
  // with SK > SQ the last keys are never attended).
  bool causal = false;
  double scale = 0;  // the softmax scale; 0 means 1 / sqrt(head_dim)
  // Also write each query row's log-sum-exp, log(sum_j exp(s_ij)) of the scaled (and masked)
  // logits s, natural log, float32: what a backward pass recomputes P from (FlashAttention's
  // softmax_lse). Slot 4.
  bool lse = false;
  // Grouped-query attention: query heads per K and V head (1: multi-head attention). Query head
  // hq of the [BH * SQ, d] Q reads K/V head hq / kv_group of K and V, which hold ceil(BH /
  // kv_group) heads (heads numbered batch-major, b * H + h, and kv_group dividing H: PyTorch's
  // enable_gqa).
  int64_t kv_group = 1;
  double softmax_scale() const;
};

// The schedule of one workgroup: query_block query rows of one (batch, head), as `waves` waves
// stacked down the rows (each wave owns query_block / waves rows and every key, so a softmax
// row never leaves its wave), walking the keys key_block at a time through `stages` staged
// shared tiles of K and V. Shared tiles in `swizzle`.
struct FlashAttentionShape {
  int64_t query_block, key_block, stages, waves, wave_size;
  tile::SharedSwizzle swizzle;
  int64_t wave_rows() const { return query_block / waves; }
};

// The schedule for `arch` (gfx950, gfx942, sm_XY) and head dimension d: 64 query rows as 4 waves
// (or warps) of 16, two stages of 64 keys; 32 keys on gfx942 when d = 128 (its 64 KiB of LDS).
// Throws weft::Error for another target or head dimension.
FlashAttentionShape flash_attention_shape(std::string_view arch, int64_t head_dim);

// The kernel for `arch`. Buffers (bfloat16, row-major, the rows of head h of batch b at
// (b * H + h) * S ..): slot 0 O [BH * SQ, d], 1 Q [BH * SQ, d], 2 K [ceil(BH / kv_group) * SK, d],
// 3 V [ceil(BH / kv_group) * SK, d], and with spec.lse 4 LSE [BH * SQ] (float32). Variables BH (batch x heads, at most 65535),
// SQ, SK (any >= 1). Each head is a row window of its tensor
// (tile::row_window), so a head never reads another head's rows, and rows past a head's end
// read as zeros and are masked out of the softmax. Grid: (ceil(SQ / query_block), BH).
// Accumulates in fp32; P is rounded to bf16 for the P * V product (as FlashAttention does).
UOp flash_attention(std::string_view arch, const FlashAttentionSpec& spec);

// Fresh random Q, K (in [-2, 2]) and V (in [-1, 1]) drawn from `seed`, a poisoned O (and LSE), a
// launch on `device`, and a check of O against a double-precision softmax, element by element
// (tolerance: bf16 rounding of P and of O), and of LSE within fp32 rounding of the logits.
gemm::RunResult run_flash_attention(rt::Device& device, const FlashAttentionSpec& spec, int64_t heads, int64_t sq, int64_t sk, uint64_t seed,
                                    rt::CompileCache* cache = nullptr);

}  // namespace weft::attention

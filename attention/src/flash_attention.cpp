// The flash-attention forward kernel (flash_attention.h): one workgroup per block of query rows
// of one head, walking that head's keys in blocks through a two-stage pipeline of K and V tiles.
#include "weft/attention/flash_attention.h"

#include <cmath>

#include "weft/kernels/pipeline.h"

namespace weft::attention {

using namespace tile;

double FlashAttentionSpec::softmax_scale() const { return scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }

FlashAttentionShape flash_attention_shape(std::string_view arch, int64_t head_dim) {
  if (head_dim != 64 && head_dim != 128)
    throw Error("flash_attention: a head dimension of " + std::to_string(head_dim) + "; the kernel takes 64 or 128");
  if (arch.starts_with("sm_")) return {64, 64, 2, 4, 32, SharedSwizzle::swizzle_64b};
  if (arch == "gfx950") return {64, 64, 2, 4, 64, SharedSwizzle::st_16x32};
  // gfx942's 64 KiB of LDS: Q (16 KiB at d = 128), two stages of K and V and P.
  if (arch == "gfx942") return {64, head_dim == 128 ? 32 : 64, 2, 4, 64, SharedSwizzle::st_16x32};
  throw Error("flash_attention: no schedule for target '" + std::string(arch) + "' (gfx950, gfx942, sm_XY)");
}

namespace {

UOp blocks_of(const UOp& n, int64_t block) { return (n + (block - 1)) / block; }

// The query block's rows as the A operand of S = Q K^T, one read per wave before the key loop
// (the barrier that names the reads issues them there; without it they would be written where
// first used, inside the loop, and repeated every key block).
tile::rt resident_queries(const Workgroup& wg, const FlashAttentionShape& s, const st& q_smem, const gl& q, const UOp& q0) {
  const UOp index0 = constant(Wide(0));
  const UOp filled = load(wg, q_smem, index0, q, q0, index0);
  const UOp landed = wait_counts({.vm = 0}, {group({filled, async_commit({filled})})});
  const tile::rt rows = load(wg, q_smem.after({barrier({landed}, BarrierFence::None)}), index0, MatrixOperand::A, s.wave_rows(), wg.wave_row());
  return rows.after({barrier(rows.parts, BarrierFence::None)});
}

}  // namespace

UOp flash_attention(std::string_view arch, const FlashAttentionSpec& spec) {
  const FlashAttentionShape s = flash_attention_shape(arch, spec.head_dim);
  if (spec.kv_group < 1) throw Error("flash_attention: a kv_group of " + std::to_string(spec.kv_group) + "; query heads per K/V head is at least 1");
  const int64_t d = spec.head_dim, qb = s.query_block, kb = s.key_block, wr = s.wave_rows();
  const DType bf16 = dtypes::bfloat16;
  const UOp heads = variable("BH", 1, 65535).cast(dtypes::index);  // a grid dimension (CUDA: y <= 65535)
  const UOp q_len = variable("SQ", 1, 1 << 20).cast(dtypes::index), k_len = variable("SK", 1, 1 << 20).cast(dtypes::index);
  const UOp width = constant(Wide(d)), index0 = constant(Wide(0));
  const gl o = global(0, heads * q_len, width, bf16), q = global(1, heads * q_len, width, bf16);
  // Grouped-query attention: query heads g * kv_group .. share K and V head g. Rounded up, so
  // that every query head's K/V head lies inside K and V (a launch checks their sizes).
  const UOp kv_heads = blocks_of(heads, spec.kv_group);
  const gl k = global(2, kv_heads * k_len, width, bf16), v = global(3, kv_heads * k_len, width, bf16);
  const Workgroup wg(std::string(arch), {blocks_of(q_len, qb), heads}, s.waves, 1, s.wave_size);
  // This workgroup's head: row windows, so that rows past the head's end read zeros.
  const UOp head = wg.block(1);
  const gl qh = row_window(q, head * q_len, q_len), oh = row_window(o, head * q_len, q_len);
  const UOp kv_head = head / spec.kv_group;
  const gl kh = row_window(k, kv_head * k_len, k_len), vh = row_window(v, kv_head * k_len, k_len);
  const UOp q0 = wg.block(0) * qb, wave_q0 = q0 + wg.wave_row() * wr;

  const st q_smem = shared(qb, d, bf16, s.swizzle);
  const st k_smem = shared(kb, d, bf16, s.swizzle, s.stages), v_smem = shared(kb, d, bf16, s.swizzle, s.stages);
  const st p_smem = shared(qb, kb, bf16, s.swizzle);
  const tile::rt queries = resident_queries(wg, s, q_smem, qh, q0);

  // The running state, in registers across the key loop. Every row sees key 0 in the first
  // block (causal or not), so its maximum is finite from the first step on and exp2(-inf - max)
  // is an exact 0: masked keys and the initial state contribute nothing.
  const acc o_state = zero(accumulator(wg, wr, d), wg);
  const row_state max_state = hold(fill_rows(o_state, -INFINITY)), sum_state = hold(fill_rows(o_state, 0.0));
  // Causal: the key blocks up to the block's last query row.
  const UOp key_blocks = spec.causal ? min(blocks_of(k_len, kb), blocks_of(q0 + qb, kb)) : blocks_of(k_len, kb);
  const double log2_scale = spec.softmax_scale() * M_LOG2E;  // softmax in base 2: 2^(x scale log2 e)

  const UOp loop = pipelined<UOp>(wg, key_blocks, s.stages, [&](const PipelineStep& p) {
    return StepBody<UOp>{
        {fill(wg, k_smem, p.fill_stage, kh, p.fill_step * kb, index0), fill(wg, v_smem, p.fill_stage, vh, p.fill_step * kb, index0)},
        [&, p](const std::vector<UOp>& ready) {
          std::vector<UOp> body;  // every effect of the step, in order: the loop is ended around them
          const auto kept = [&](const acc& c) {
            body.push_back(c.written());
            return c;
          };
          // S = Q K^T in log2 units, keys past the head's end (and after the query, causal) at -inf.
          const tile::rt keys = load(wg, k_smem.after(ready), p.stage, MatrixOperand::B, kb, index0);
          const acc scores = kept(mma_ABt(wg, kept(zero(accumulator(wg, wr, kb), wg)), queries, keys, {}));
          const acc logits = kept(map_at(wg, scores, wave_q0, p.step * kb, [&](const UOp& x, const UOp& row, const UOp& col) {
            UOp live = col < k_len;
            if (spec.causal) live = live & (col <= row);
            return live.where(x * log2_scale, constant(-INFINITY, dtypes::float32));
          }));
          // The online softmax: a new maximum rescales what was summed so far by 2^(old - new).
          const rv old_max = read(max_state.after({p.step})), old_sum = read(sum_state.after({p.step}));
          const rv new_max = map(old_max, row_max(wg, logits), [](const UOp& a, const UOp& b) { return max(a, b); });
          const rv rescale = map(old_max, new_max, [](const UOp& a, const UOp& b) { return exp2(a - b); });
          const acc probs = kept(exp2(sub_row(logits, new_max)));
          const rv new_sum = map(map(old_sum, rescale, [](const UOp& a, const UOp& b) { return a * b; }), row_sum(wg, probs),
                                 [](const UOp& a, const UOp& b) { return a + b; });
          // O = O * rescale + P V: P leaves the MMA in the C layout and feeds the next as an A
          // operand (as bf16): straight from its registers where the C layout is the A layout
          // (NVIDIA's mma.sync), else through shared memory (CDNA's MFMA). V (keys x d) is read
          // as the col-major B operand.
          const auto p_operand = [&] {
            if (accumulator_feeds_operand(wg, bf16, MatrixOperand::A)) return as_operand(wg, probs, bf16, MatrixOperand::A);
            const UOp p_stored = store(wg, p_smem, index0, probs, wg.wave_row() * wr, index0);
            body.push_back(p_stored);
            return load(wg, p_smem.after({p_stored}), index0, MatrixOperand::A, wr, wg.wave_row());
          };
          const tile::rt p_tile = p_operand();
          const tile::rt values = load(wg, v_smem.after(ready), p.stage, Major::col, d, index0, MatrixOperand::B);
          const acc o_new = kept(mma_AB(wg, kept(mul_row(o_state.after({p.step}), rescale)), p_tile, values, {}));
          body.insert(body.end(), {assign(o_state, o_new), assign(max_state, new_max), assign(sum_state, new_sum)});
          return group(body).end({p.step});
        }};
  });
  // The last steps' fills (zeros past the keys) are still in flight: no copy outlives the kernel.
  const UOp drained = wait_counts({.vm = 0}, {loop});
  const rv sum = read(sum_state.after({loop}));
  const acc out = div_row(o_state.after({loop, drained}), sum);
  std::vector<UOp> stores{store(wg, oh, out, wave_q0, index0)};
  if (spec.lse) {
    // log(sum_j e^(s_j)) = (max + log2(sum)) * ln 2: the running state is in log2 units.
    const gl lse = global(4, heads * q_len, constant(Wide(1)), dtypes::float32);
    const rv natural = map(read(max_state.after({loop})), sum, [](const UOp& m, const UOp& l) { return (m + log2(l)) * M_LN2; });
    stores.push_back(store(wg, row_window(lse, head * q_len, q_len), natural, wave_q0, index0));
  }
  return sink({"flash_attention"}, stores);
}

}  // namespace weft::attention

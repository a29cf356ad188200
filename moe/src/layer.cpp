// The MoE layer's forward on device buffers (layer.h): its kernels compiled once, launched in
// order with no host synchronization between them.
#include "weft/moe/layer.h"

#include <string>

#include "launch_util.h"

namespace weft::moe {

using detail::expect_array;

namespace {

constexpr int64_t kMaxWidth = 32768;  // 2F within the grouped GEMM's N of at most 2^16

void check_width(const char* name, int64_t v) {
  if (v < 8 || v > kMaxWidth || v % 8)
    throw Error(std::string("moe layer: ") + name + " must be a multiple of 8 in [8, " + std::to_string(kMaxWidth) +
                "] (the grouped GEMM's K is read in 16-byte vectors), got " + std::to_string(v));
}

rt::OwnedArray poisoned(rt::Device& device, int64_t elements, const char* label) {
  return rt::OwnedArray(device, rt::upload(device, dtypes::bfloat16, std::vector<uint8_t>(static_cast<size_t>(elements * 2), 0xCD), label));
}

void add(rt::CompileTimes& sum, const rt::CompileTimes& t) {
  sum.lower += t.lower;
  sum.render += t.render;
  sum.optimize += t.optimize;
  sum.codegen += t.codegen;
  sum.link += t.link;
  sum.load += t.load;
  sum.cached = sum.cached && t.cached;
}

}  // namespace

void MoeLayerConfig::validate() const {
  route.validate();
  shape().validate();
  check_width("hidden (D)", hidden);
  check_width("ffn (F)", ffn);
}

MoeLayerBuffers allocate_layer(rt::Device& device, const MoeLayerConfig& config) {
  config.validate();
  const int64_t rows = config.shape().max_rows(), d = config.hidden, f = config.ffn;
  return {allocate_plan(device, config.shape()), poisoned(device, rows * d, "Xs"), poisoned(device, rows * 2 * f, "H"),
          poisoned(device, rows * f, "A"), poisoned(device, rows * d, "Ys")};
}

namespace {
// The config, validated before any kernel is built from it.
const MoeLayerConfig& validated(const MoeLayerConfig& c) {
  c.validate();
  return c;
}
}  // namespace

MoeLayer::MoeLayer(rt::Device& device, const MoeLayerConfig& config, rt::CompileCache* cache)
    : config_(validated(config)),
      router_(compile_router(device, config.route, config.block_rows, cache)),
      dispatch_(device, config.shape(), config.hidden, dtypes::bfloat16, cache),
      gemm_(device, config.shape(), cache),
      activation_(device, config.shape(), config.ffn, cache),
      combine_(device, config.shape(), config.hidden, dtypes::bfloat16, dtypes::bfloat16, cache) {
  // Both products' kernels now, not at the first forward (on sm_90 an N of rows that are not
  // 16-byte multiples takes a second form of the grouped GEMM).
  gemm_.kernel_for(device, 2 * config.ffn);
  gemm_.kernel_for(device, config.hidden);
}

rt::CompileTimes MoeLayer::compile_times() const {
  rt::CompileTimes t;
  t.cached = true;
  for (const rt::CompiledKernel* k : {&router_.route, &router_.align.count, &router_.align.place, &dispatch_.kernel(), &activation_.kernel(),
                                      &combine_.kernel()})
    add(t, k->times());
  for (const rt::CompiledKernel* k : gemm_.compiled()) add(t, k->times());
  return t;
}

void MoeLayer::forward(rt::Device& device, const rt::DeviceArray& x, const rt::DeviceArray& logits, const rt::DeviceArray* bias,
                       const rt::DeviceArray& w1, const rt::DeviceArray& w2, const rt::DeviceArray& y, const MoeLayerBuffers& b) const {
  const MoeShape s = config_.shape();
  const int64_t T = s.tokens, E = s.experts, R = s.max_rows(), D = config_.hidden, F = config_.ffn;
  const DType bf16 = dtypes::bfloat16;
  // Every buffer before the first launch, so that a wrong one launches nothing.
  expect_array("layer", x, "X [T, D]", bf16, T * D);
  expect_array("layer", logits, "logits [T, E]", config_.route.logits, T * E);
  if (config_.route.scoring == Scoring::SigmoidGroupedTopK) {
    if (!bias) throw Error("moe layer: SigmoidGroupedTopK needs the correction bias [E] (float32)");
    expect_array("layer", *bias, "correction_bias [E]", dtypes::float32, E);
  }
  expect_array("layer", w1, "W1 [E, 2F, D]", bf16, E * 2 * F * D);
  expect_array("layer", w2, "W2 [E, D, F]", bf16, E * D * F);
  expect_array("layer", y, "Y [T, D]", bf16, T * D);
  expect_array("layer", b.xs, "Xs [max_rows, D]", bf16, R * D);
  expect_array("layer", b.h, "H [max_rows, 2F]", bf16, R * 2 * F);
  expect_array("layer", b.a, "A [max_rows, F]", bf16, R * F);
  expect_array("layer", b.ys, "Ys [max_rows, D]", bf16, R * D);
  expect_array("layer", b.plan.workspace, "align's workspace", dtypes::int32, align_workspace(s));

  launch_router(device, router_, logits, bias, b.plan);
  dispatch_.launch(device, x, b.plan.row_token, b.xs);
  gemm_.launch(device, 2 * F, D, b.h, b.xs, w1, b.plan.block_expert);
  activation_.launch(device, b.h, b.plan.row_token, b.a);
  gemm_.launch(device, D, F, b.ys, b.a, w2, b.plan.block_expert);
  combine_.launch(device, b.ys, b.plan.dest_row, b.plan.weights, y);
}

}  // namespace weft::moe

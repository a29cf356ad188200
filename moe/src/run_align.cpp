// align's host side (align.h): the plan's device buffers, the two launches in order, and
// run_align's bit-exact comparison with plan_reference.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>

#include "launch_util.h"
#include "weft/moe/align.h"

namespace weft::moe {

using detail::fetch;
using detail::poisoned;

namespace {

template <class T>
void compare_field(gemm::Check& check, const char* name, const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    if (check.bad++ == 0) check.first_bad = std::string(name) + " has " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size());
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    ++check.count;
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 && check.bad++ == 0)
      check.first_bad = std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  }
}

// k distinct experts per token, as `inputs` says.
std::vector<int32_t> draw_choices(const MoeShape& s, AlignInputs inputs, std::mt19937_64& gen) {
  std::vector<int32_t> pool(static_cast<size_t>(s.experts));
  std::iota(pool.begin(), pool.end(), 0);
  if (inputs == AlignInputs::FewExperts) {  // the first k and the last k experts only
    std::vector<int32_t> few;
    for (int64_t j = 0; j < s.top_k; ++j) few.push_back(static_cast<int32_t>(j)), few.push_back(static_cast<int32_t>(s.experts - 1 - j));
    std::sort(few.begin(), few.end());
    few.erase(std::unique(few.begin(), few.end()), few.end());
    pool = few;
  }
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < s.tokens; ++t) {
    if (inputs != AlignInputs::OneExpert) std::shuffle(pool.begin(), pool.end(), gen);
    ids.insert(ids.end(), pool.begin(), pool.begin() + s.top_k);
  }
  return ids;
}

}  // namespace

PlanBuffers allocate_plan(rt::Device& device, const MoeShape& s) {
  s.validate();
  PlanBuffers b;
  b.expert_ids = poisoned(device, dtypes::int32, s.choices(), "expert_ids");
  b.weights = poisoned(device, dtypes::float32, s.choices(), "weights");
  b.counts = poisoned(device, dtypes::int32, s.experts, "counts");
  b.offsets = poisoned(device, dtypes::int32, s.experts + 1, "offsets");
  b.dest_row = poisoned(device, dtypes::int32, s.choices(), "dest_row");
  b.row_token = poisoned(device, dtypes::int32, s.max_rows(), "row_token");
  b.row_weight = poisoned(device, dtypes::float32, s.max_rows(), "row_weight");
  b.block_expert = poisoned(device, dtypes::int32, s.max_blocks(), "block_expert");
  const std::vector<uint8_t> zeros(static_cast<size_t>(align_workspace(s) * 4), 0);  // route_counting adds into it
  b.workspace = rt::OwnedArray(device, rt::upload(device, dtypes::int32, zeros, "align_workspace"));
  return b;
}

RoutingPlan download_plan(rt::Device& device, const MoeShape& s, const PlanBuffers& b) {
  (void)s;
  RoutingPlan p;
  p.expert_ids = fetch<int32_t>(device, b.expert_ids);
  p.weights = fetch<float>(device, b.weights);
  p.counts = fetch<int32_t>(device, b.counts);
  p.offsets = fetch<int32_t>(device, b.offsets);
  p.dest_row = fetch<int32_t>(device, b.dest_row);
  p.row_token = fetch<int32_t>(device, b.row_token);
  p.row_weight = fetch<float>(device, b.row_weight);
  p.block_expert = fetch<int32_t>(device, b.block_expert);
  return p;
}

AlignKernels compile_align(rt::Device& device, const MoeShape& s, rt::CompileCache* cache) {
  return {s, rt::CompiledKernel::compile(device, align_count(s), cache), rt::CompiledKernel::compile(device, align_place(s, device.arch()), cache)};
}

void launch_align(rt::Device& device, const AlignKernels& k, const PlanBuffers& b) {
  const rt::DeviceArray count_args[] = {b.workspace, b.expert_ids};
  k.count.launch(device, count_args);
  launch_align_place(device, k, b);
}

void launch_align_place(rt::Device& device, const AlignKernels& k, const PlanBuffers& b) {
  const rt::DeviceArray place_args[] = {b.counts, b.offsets, b.dest_row, b.row_token, b.row_weight, b.block_expert, b.workspace, b.expert_ids, b.weights};
  k.place.launch(device, place_args);
}

gemm::Check compare_plans(const RoutingPlan& got, const RoutingPlan& want) {
  gemm::Check c;
  compare_field(c, "expert_ids", got.expert_ids, want.expert_ids);
  compare_field(c, "weights", got.weights, want.weights);
  compare_field(c, "counts", got.counts, want.counts);
  compare_field(c, "offsets", got.offsets, want.offsets);
  compare_field(c, "dest_row", got.dest_row, want.dest_row);
  compare_field(c, "row_token", got.row_token, want.row_token);
  compare_field(c, "row_weight", got.row_weight, want.row_weight);
  compare_field(c, "block_expert", got.block_expert, want.block_expert);
  return c;
}

gemm::Check check_workspace_ready(rt::Device& device, const MoeShape& s, const PlanBuffers& b) {
  const AlignWorkspace w(s.choices(), s.experts);
  const std::vector<int32_t> work = fetch<int32_t>(device, b.workspace);
  gemm::Check c;
  auto expect = [&](bool ok, const std::string& what) {
    ++c.count;
    if (!ok && c.bad++ == 0) c.first_bad = "align's workspace after a run: " + what;
  };
  const int32_t parity = work[static_cast<size_t>(w.fill_parity_index())], filled = work[static_cast<size_t>(w.filled_parity_index())];
  expect(parity == 0 || parity == 1, "fill parity " + std::to_string(parity) + ", expected 0 or 1");
  expect(filled == 1 - parity, "filled parity " + std::to_string(filled) + ", expected " + std::to_string(1 - parity) +
                                   " (the run's histogram; the fill parity names the other)");
  if (parity != 0 && parity != 1) return c;
  const int64_t next = parity * w.histogram_elements();
  for (int64_t i = 0; i < w.histogram_elements(); ++i)
    if (work[static_cast<size_t>(next + i)] != 0) {
      expect(false, "histogram " + std::to_string(parity) + " (the next run's) holds " + std::to_string(work[static_cast<size_t>(next + i)]) +
                        " at " + std::to_string(i) + ", expected zeros");
      break;
    }
  return c;
}

gemm::RunResult run_align(rt::Device& device, const MoeShape& s, uint64_t seed, rt::CompileCache* cache, AlignInputs inputs) {
  s.validate();
  gemm::RunResult r;
  const AlignKernels kernels = compile_align(device, s, cache);
  r.compile = kernels.place.times();
  std::mt19937_64 gen(seed);
  const PlanBuffers b = allocate_plan(device, s);
  // Twice on the same buffers, each run on choices of its own: the second fills the other
  // histogram, and align_place must read that one (AlignWorkspace).
  for (int run = 0; run < 2; ++run) {
    const std::vector<int32_t> ids = draw_choices(s, inputs, gen);
    std::vector<float> weights(ids.size());
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (float& w : weights) w = unit(gen);
    device.copy_to_device(b.expert_ids.get().buffer, {reinterpret_cast<const uint8_t*>(ids.data()), ids.size() * 4});
    device.copy_to_device(b.weights.get().buffer, {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4});
    const auto reference_start = std::chrono::steady_clock::now();
    const RoutingPlan want = plan_reference(s, ids, weights);
    if (run == 0) r.reference_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - reference_start).count();
    const auto t = std::chrono::steady_clock::now();
    launch_align(device, kernels, b);
    device.synchronize();
    if (run == 0) r.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const std::string context = "run " + std::to_string(run + 1) + ": ";
    r.check.merge(compare_plans(download_plan(device, s, b), want), context);
    r.check.merge(check_workspace_ready(device, s, b), context);
  }
  return r;
}

}  // namespace weft::moe

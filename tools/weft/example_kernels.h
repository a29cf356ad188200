// Example kernels the `weft` tool can print and, later, run. Each builds a complete SINK.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "weft/dsl/uop.h"

namespace weft::examples {

struct Example {
  std::string name;
  std::string summary;
  // The kernel's graph for a target ("gfx950", "gfx942"); most kernels ignore it.
  std::function<UOp(const std::string& target)> build;
  // Whether `weft run` can run it (it has a host entry point with inputs and a reference).
  bool runnable = false;
  // For kernels with sizes (`--size M,N,K`): the graph at those sizes; empty for kernels whose
  // shape is fixed.
  std::function<UOp(const std::string& target, const std::vector<int64_t>& size)> build_sized = {};
};

const std::vector<Example>& all();
const Example* find(const std::string& name);
// The names of the runnable kernels, comma-separated.
std::string runnable_names();

}  // namespace weft::examples

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
  std::function<UOp()> build;
};

const std::vector<Example>& all();
const Example* find(const std::string& name);

}  // namespace weft::examples

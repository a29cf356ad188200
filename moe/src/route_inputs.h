// The inputs run_route and run_router draw (route.h's RouteInputs), shared by both.
#pragma once

#include <cstdint>
#include <vector>

#include "weft/moe/route.h"

namespace weft::moe {

struct RouteData {
  std::vector<double> logits, bias;       // the exact values the device holds
  std::vector<uint8_t> logits_bytes, bias_bytes;  // as config.logits and float32
};
RouteData draw_route_inputs(const RouteConfig& config, RouteInputs inputs, uint64_t seed);

}  // namespace weft::moe

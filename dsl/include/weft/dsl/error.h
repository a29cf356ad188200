// The exception type of every user-facing weft error: bad graphs, bad shapes, bad arguments.
#pragma once

#include <stdexcept>
#include <string>

namespace weft {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace weft

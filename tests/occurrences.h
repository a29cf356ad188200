// How many times a text holds a string (overlapping matches counted): the render tests count
// instructions and statements in generated code.
#pragma once

#include <cstddef>
#include <string>

namespace weft::testing {

inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace weft::testing

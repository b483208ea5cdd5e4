// A position in a source file. Every diagnostic and every step points back to one; kept apart
// from the sources themselves (core/dsl/source.hpp) so that the step graph and the backends can
// name locations without the parser's types.
#pragma once
#include <cstdint>

namespace sg {

// line and col are 1-based, col counts bytes; file indexes the SourceManager (0: "<unknown>").
struct Loc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
};

}  // namespace sg

#include "core/graph/layout.hpp"

namespace sg {

std::string layout_problem(const std::string& letters, size_t extents) {
  std::string seen;
  for (char c : letters) {
    if (std::string("bshd2").find(c) == std::string::npos)
      return std::string("layout letter '") + c + "' is none of b (batch), s (sequence rows), h (heads), d (head dim), 2 (K and V)";
    if (seen.find(c) != std::string::npos) return std::string("layout letter '") + c + "' appears twice";
    seen += c;
  }
  if (seen.find('s') == std::string::npos || seen.find('d') == std::string::npos)
    return "a layout names at least the rows (s) and the head dim (d)";
  if (letters.back() != 'd') return "a layout ends in d: a row's head-dim elements are contiguous (the kernels read rows)";
  bool fused = letters.size() >= 2 && letters.compare(letters.size() - 2, 2, "2d") == 0;
  if (extents == letters.size() || (fused && extents + 1 == letters.size())) return "";
  return "layout " + letters + " has " + std::to_string(letters.size()) + " letters but the shape " + std::to_string(extents) + " extents" +
         (fused ? std::string(" (or ") + std::to_string(letters.size() - 1) + " with 2d fused as one extent of 2·dim)" : "");
}

}  // namespace sg

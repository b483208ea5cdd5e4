// Drops a dependency a -> s when another dependency b of s already depends directly on a: the
// order is kept through b. Keeps reachability (so every execution order, and the interpreter's
// result, stays the same) and makes graphs smaller to print, simulate and verify.
#include <algorithm>

#include "core/graph/passes.hpp"

namespace sg {

void prune_deps(StepGraph& g, Diagnostics& diags) {
  (void)diags;
  std::vector<uint32_t> keep;
  uint32_t out = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    uint32_t b = g.dep_off_[s], e = g.dep_off_[s + 1];
    keep.assign(g.deps_.begin() + b, g.deps_.begin() + e);
    if (keep.size() > 1 && keep.size() <= 64) {
      std::vector<uint32_t> kept;
      for (uint32_t a : keep) {
        bool implied = false;
        for (uint32_t other : keep) {
          if (other == a) continue;
          const uint32_t* ob = g.deps_begin(other);
          const uint32_t* oe = g.deps_end(other);
          if (std::binary_search(ob, oe, a)) {
            implied = true;
            break;
          }
        }
        if (!implied) kept.push_back(a);
      }
      keep.swap(kept);
    }
    g.dep_off_[s] = out;
    for (uint32_t d : keep) g.deps_[out++] = d;
  }
  g.dep_off_[g.size()] = out;
  g.deps_.resize(out);
}

}  // namespace sg

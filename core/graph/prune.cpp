// Drops a dependency a -> s when another dependency b of s already depends directly on a: the
// order is kept through b. Keeps reachability (so every execution order, and the interpreter's
// result, stays the same) and makes graphs smaller to print, simulate and verify.
#include <algorithm>

#include "core/graph/passes.hpp"

namespace sg {

void prune_deps(StepGraph& g, Diagnostics& diags) {
  (void)diags;
  // Compacts in place. Lists of earlier steps are read in their pruned form, so s's start offset
  // must be moved before looking at them: the list of step s-1 ends where s's list begins. (A
  // dependency pruned from b's list is implied in b through another path, so checking b's
  // pruned list only keeps more edges, never loses a path.)
  std::vector<uint32_t> keep, kept;
  uint32_t out = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    keep.assign(g.deps_.begin() + g.dep_off_[s], g.deps_.begin() + g.dep_off_[s + 1]);
    g.dep_off_[s] = out;
    if (keep.size() > 1 && keep.size() <= 64) {
      kept.clear();
      for (uint32_t a : keep) {
        bool implied = false;
        for (uint32_t other : keep)
          if (other != a && std::binary_search(g.deps_begin(other), g.deps_end(other), a)) {
            implied = true;
            break;
          }
        if (!implied) kept.push_back(a);
      }
      keep.swap(kept);
    }
    for (uint32_t d : keep) g.deps_[out++] = d;
  }
  g.dep_off_[g.size()] = out;
  g.deps_.resize(out);
}

}  // namespace sg

// Drops a dependency a -> s when another dependency b of s already depends directly on a: the
// order is kept through b. Keeps reachability (so every execution order, and the interpreter's
// result, stays the same) and makes graphs smaller to print, simulate and verify.
#include <algorithm>

#include "core/graph/passes.hpp"

namespace sg {

void prune_deps(StepGraph& g, Diagnostics& diags) {
  (void)diags;
  // Lists of earlier steps are read in their pruned form (edit_deps rewrites in step order). A
  // dependency pruned from b's list is implied in b through another path, so checking b's
  // pruned list only keeps more edges, never loses a path.
  std::vector<StepId> kept;
  g.edit_deps([&](StepId, std::vector<StepId>& keep) {
    if (keep.size() <= 1 || keep.size() > 64) return;
    kept.clear();
    for (StepId a : keep) {
      bool implied = false;
      for (StepId other : keep) {
        auto d = g.deps(other);
        if (other != a && std::binary_search(d.begin(), d.end(), a)) {
          implied = true;
          break;
        }
      }
      if (!implied) kept.push_back(a);
    }
    keep.swap(kept);
  });
}

}  // namespace sg

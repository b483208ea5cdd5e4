// A shift of the ranks proved from the schedule's text, without looking at its step graph
// (issue 32; docs/sim.md, "Symmetry").
//
// translation_invariant (symmetry.hpp) checks a shift step by step on the whole graph: at a
// training step's scale that check alone is a fifth of the run. Where a schedule is SPMD (its
// ranks' work in `on r in …` blocks, its global statements collectives over groups the shift maps
// onto themselves), the shift can be proved from the text instead: the body of each `on` block
// is run once per class representative r0 with r abstract, r = r0 + m·inner for every m < count
// (the moved digit m), and every value is tracked as a function of m:
//   - invariant: the same for every m (loop bounds, branches, chunk indices, sizes, flops, tags);
//   - linear: v0 + c·m (r itself, r ± k, r / k and r % k where k divides c, ...);
//   - modular: (v0 + c·m) mod K (a ring's neighbour (r + 1) % N).
// The proof holds when every branch, bound, chunk index, size and tag is invariant and every
// peer, root and group member is the representative's own moved: linear with c = inner and the
// moved digit 0 at r0, or modular with c = inner and K = N = inner·count. Then rank r0 + m·inner
// runs the representative's program with every rank in it moved m times: the same steps, peers
// moved, in the same order, so the elaborated graph maps onto itself (matching is first-in
// first-out per pair and tag, collectives by their order on each group, hazards on a rank's own
// chunks). Anything else is not proved (a choreographic transfer, a call, a wildcard receive, a
// rank written as a number, a value the rules above do not cover), and the caller checks the
// graph instead: the proof is a sufficient condition, never a guess.
//
// It covers the graph as elaborated and passed (collectives as steps), not an expansion of its
// collectives: a group the shift maps onto itself with its members rotated (a data-parallel
// group under the data-parallel shift) is one instance either way, but an algorithm's roles in
// it (a tree's root) would move.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/ast.hpp"
#include "core/graph/symmetry.hpp"

namespace sg {

struct ShiftProofInput {
  const Program* program = nullptr;
  const Schedule* schedule = nullptr;
  uint32_t nranks = 0;
  std::vector<std::pair<std::string, int64_t>> params;  // the top parameters' values (StepGraph::params)
  struct Buffer {
    std::string name;
    uint32_t chunks = 0, dims = 1;
  };
  std::vector<Buffer> buffers;     // each declared buffer's chunks and dimensions
  uint64_t max_work = 20'000'000;  // statements to visit before giving up
};

// "" when the shift `s` is proved to map the graph onto itself, given that the shifts of `group`
// already do (then one representative of the group's classes stands for its class: see the
// .cpp); else why not.
std::string prove_shift(const ShiftProofInput& in, const RankSymmetry& group, const RankShift& s);

}  // namespace sg

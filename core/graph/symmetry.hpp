// Ranks a step graph cannot tell apart, and the graph with one rank per class (issue 32's
// symmetry; docs/sim.md, "Symmetry").
//
// The symmetry looked for is a translation of the ranks: r -> r + k (mod N), k a proper divisor
// of N. It holds when every rank's program is its image's in everything a simulation times: the
// i-th step of rank r and the i-th step of rank r + k (RankPositions: the i-th send of a statement
// is the i-th send of that statement) agree in kind, flags, statement, bytes,
// flops and protocol costs, and their dependencies, wait handles, peers and matched steps are
// the images of each other's. A ring's rotations (k = 1), the same local rank of identical nodes
// (k = GPUs a node) and identical replicas of a data-parallel job (k = one replica's ranks) are
// such translations. It is checked step by step, never assumed from a schedule's name; whether
// the platform also cannot tell the ranks apart is the simulator's question (sim/symmetry.hpp).
//
// Under a translation every class {r, r + k, r + 2k, ...} behaves alike, shifted: the same steps
// at the same times. The quotient graph holds the steps of ranks 0 … k-1, one per class of steps;
// a message from a representative to any rank is taken by the representative of its receiver's
// class (the same receive step, at the same time, as the receiver's own).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg {

// Each step's place among its rank's steps, ordered by statement and kind and then program order:
// what a translation maps a step by (the i-th step of rank r to the i-th step of rank r + k).
struct RankPositions {
  StepGraph::RankIndex index;
  std::vector<uint32_t> pos;  // per step
  uint32_t count(uint32_t rank) const { return static_cast<uint32_t>(index.off[rank + 1] - index.off[rank]); }
  StepId at(uint32_t rank, uint32_t p) const { return index.steps[index.off[rank] + p]; }
};
RankPositions rank_positions(const StepGraph& g);

// Why no translation can be checked on this graph ("" when one can): a wildcard receive or a
// message matched at run time, a collective left unexpanded, a step that never becomes ready, a
// one-rank graph.
std::string translation_refusal(const StepGraph& g);

// Whether r -> r + k (mod g.nranks) maps the graph onto itself (see the top). `why`: the first
// difference found, where not.
bool translation_invariant(const StepGraph& g, const RankPositions& rp, uint32_t k, std::string& why);

struct Quotient {
  StepGraph graph;          // the steps of ranks 0 … shift-1, in the full graph's order
  uint32_t shift = 0;       // k
  uint32_t nranks = 0;      // N, the full graph's ranks
  uint64_t full_steps = 0;  // the full graph's steps
  // Per step of `graph`: a send's destination rank in the full graph (the graph's own peer is
  // that rank's representative, dst % shift); a step's own rank otherwise.
  std::vector<uint32_t> dst;
  StepGraph::RankIndex index;  // graph's steps by rank in the full graph's RankPositions order
  uint32_t copies() const { return shift ? nranks / shift : 1; }
  // The step of `graph` that stands for step s of the full graph g (its class's representative).
  StepId step_of(const StepGraph& g, const RankPositions& rp, StepId s) const {
    return index.steps[index.off[g.rank(s) % shift] + rp.pos[s]];
  }
};

// The quotient of g under the translation by k (translation_invariant(g, rp, k, …) holds).
Quotient quotient_graph(const StepGraph& g, const RankPositions& rp, uint32_t k);

}  // namespace sg

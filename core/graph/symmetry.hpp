// Ranks a step graph cannot tell apart, and the graph with one rank per class (issue 32's
// symmetry; docs/sim.md, "Symmetry").
//
// The symmetry looked for is a shift of the ranks (RankShift): write rank r as
// (o·M + m)·I + i with i < I and m < M; the shift moves m to m + 1 (mod M) and keeps o and i. With
// I·M = N it is r -> r + I (mod N): a ring's rotations (I = 1), the same GPU of identical nodes
// (I = GPUs a node). With I·M < N it moves blocks of I ranks round inside each group of I·M:
// the data-parallel replicas inside each pipeline stage of a training step (I = tp·cp,
// M = dp). It holds when every rank's program is its image's in everything a simulation times:
// the i-th step of rank r and the i-th step of its image (RankPositions: the i-th send of a
// statement is the i-th send of that statement) agree in kind, flags, statement, bytes, flops
// and protocol costs, their dependencies, wait handles, peers and matched steps are the images
// of each other's, and each rank's sends and its local work keep their order. It is checked step
// by step, never assumed from a schedule's name; whether the platform also cannot tell the ranks
// apart is the simulator's question (sim/symmetry.hpp).
//
// Under a shift every class of ranks (the M ranks that differ in m only) behaves alike, shifted:
// the same steps at the same times. The quotient graph holds the steps of the representatives
// (m = 0), one per class of steps, its ranks numbered o·I + i; a message from a representative
// to any rank is taken by the representative of its receiver's class (the same receive step, at
// the same time, as the receiver's own).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/step_graph.hpp"

namespace sg {

// r = (o·count + m)·inner + i; the shift moves m to m + 1 (mod count).
struct RankShift {
  uint32_t inner = 1, count = 0, nranks = 0;
  uint32_t digit(uint32_t r) const { return (r / inner) % count; }  // m
  // Rank r moved j times.
  uint32_t moved(uint32_t r, uint32_t j = 1) const { return r - digit(r) * inner + (digit(r) + j) % count * inner; }
  // How many times `from` moves to become `to` (two ranks of one class).
  uint32_t times(uint32_t from, uint32_t to) const { return (digit(to) + count - digit(from)) % count; }
  uint32_t classes() const { return nranks / count; }
  // The class of rank r (the quotient's rank: o·inner + i) and the class's representative (m = 0).
  uint32_t class_of(uint32_t r) const { return r / (inner * count) * inner + r % inner; }
  uint32_t representative(uint32_t c) const { return c / inner * (inner * count) + c % inner; }
  // "a shift by 4 ranks", "a shift by 4 ranks inside each 32".
  std::string describe() const;
};

// Shifts on digits of their own, moving at once (they commute): the group they generate, its
// elements numbered e < size() (shift k moved (e / the counts before k) % count_k times). Ranks
// in a class differ in those digits only; the class's representative has them all 0.
struct RankSymmetry {
  std::vector<RankShift> shifts;  // by inner, ascending; no two share a digit
  uint32_t nranks = 0;
  bool none() const { return shifts.empty(); }
  uint32_t size() const;  // the group's elements: the product of the counts
  uint32_t classes() const { return nranks / size(); }
  bool representative_rank(uint32_t r) const;
  uint32_t moved(uint32_t r, uint32_t e) const;
  uint32_t times(uint32_t from, uint32_t to) const;  // the element that moves `from` to `to` (one class)
  uint32_t class_of(uint32_t r) const;
  uint32_t representative(uint32_t c) const;
  // Whether `s` moves digits none of these shifts moves, and the group with it.
  bool disjoint(const RankShift& s) const;
  RankSymmetry with(const RankShift& s) const;
  std::string describe() const;  // "a shift by 1 rank inside each 8 and a shift by 8 ranks inside each 64"
};

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
// message matched at run time, a collective some member never issues, a step that never becomes ready, a
// one-rank graph.
std::string translation_refusal(const StepGraph& g);

// Whether the shift maps the graph onto itself (see the top). `why`: the first difference found,
// where not.
bool translation_invariant(const StepGraph& g, const RankPositions& rp, const RankShift& shift, std::string& why);

// The shifts to try on N ranks, fewest classes first: every (inner, count) with inner·count
// dividing N and count >= 2.
std::vector<RankShift> candidate_shifts(uint32_t nranks);

struct Quotient {
  StepGraph graph;  // the representatives' steps, in the full graph's order; rank c is class c
  RankSymmetry shift;
  uint64_t full_steps = 0;  // the full graph's steps
  // Per step of `graph`: a send's destination rank in the full graph (the graph's own peer is
  // that rank's class); otherwise the step's own rank in the full graph.
  std::vector<uint32_t> dst;
  StepGraph::RankIndex index;  // graph's steps by class, in the full graph's RankPositions order
  // Collective steps left unexpanded: graph's instances are the classes' parts of the full
  // graph's (an instance's members, each as the step of its class's representative that stands
  // for it, once each). Per entry of graph.instance_steps, the full graph's step it is: the
  // representative's own, whose member place in its own instance gives its time where the
  // collectives are costed alone (RuntimeOptions::collective_times).
  std::vector<StepId> instance_full;
  // The step of `graph` that stands for step s of the full graph g (its class's representative).
  StepId step_of(const StepGraph& g, const RankPositions& rp, StepId s) const {
    return index.steps[index.off[shift.class_of(g.rank(s))] + rp.pos[s]];
  }
};

// The quotient of g under the group (translation_invariant(g, rp, s, …) holds for each of its shifts).
Quotient quotient_graph(const StepGraph& g, const RankPositions& rp, const RankSymmetry& shift);

}  // namespace sg

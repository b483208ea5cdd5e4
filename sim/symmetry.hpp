// Simulating one rank per class of ranks alike (issue 32, item 2; docs/sim.md, "Symmetry").
//
// Ranks r and r + k are alike when the step graph cannot tell them apart (a translation by k maps
// it onto itself: core/graph/symmetry.hpp) and neither can the platform: every message's route,
// translated by k, has the same latency and bottleneck bandwidth, stays inside a node or between
// nodes as it did, and starts and ends on the images of its links under one permutation of the
// links. Then every class of ranks behaves alike, shifted, and the analytic engine simulates the
// quotient graph: ranks 0 … k-1, each message on its own route, each port standing for its class
// of links (flows on the links of one class are the same flows, translated, at the same times).
// The time, the slowest rank, its breakdown, messages, bytes and link loads are the full
// simulation's; nothing is assumed from a schedule's name.
//
// The classes must be proved, else every rank is simulated and the result says why: a translation
// that fixes a port (two ranks of one class behind one NIC: the quotient would lose the flows'
// sharing), a link that is the sending port of some messages and the receiving port of others
// (a torus's), a wildcard receive, a collective some member never issues, an engine other than α-β
// analytic (SimGrid, LogGP), a trace (it shows every rank). A quotient that deadlocks is simulated
// again in full, for the report of who waits for whom.
#pragma once
#include <string>

#include "sim/sim.hpp"

namespace sg::sim {

struct SymmetryUse {
  bool used = false;    // the quotient was simulated
  RankSymmetry shift;   // the ranks alike (used)
  uint32_t nranks = 0;  // N
  uint64_t quotient_steps = 0;
  bool by_text = false;               // used, and its shifts proved from the schedule's text (core/graph/shift_proof.hpp)
  bool one_program = false;           // used, from rank 0's program alone (simulate_one_class)
  bool representatives_only = false;  // used, from the representatives' programs alone (simulate_representatives)
  std::string why_not;                // not used: why
  // One line for the report: "4,096 ranks in 1 class (alike under a shift by 1 rank): simulated 1"
  // or "none: <why>; simulated all 4,096 ranks".
  std::string line() const;
};

// simulate(), on the quotient graph where the classes are proved (o.symmetry and the α-β analytic
// engine), else on the full graph; `use` says which and why.
SimResult simulate_symmetric(const StepGraph& g, const Platform& p, const SimOptions& o, SymmetryUse& use);

// One rank's program for all (issue 32, item 1; docs/sim.md, "Symmetry"): where the schedule's
// text proves that a shift by one rank maps it onto itself (core/graph/shift_proof.hpp) and the
// platform cannot tell the ranks apart, every rank is rank 0 moved, so the job is one class and
// rank 0's program (elaborated alone: ElabOptions::only_rank = 0) is the whole quotient. Its
// transfers are matched as the quotient's are: the i-th send of a statement is taken by the i-th
// receive of that statement (its receiver's, moved back to rank 0). For choreographies without
// collectives (a ring), on the α-β analytic engine. The full graph is never built.
//
// Whether `one` (rank 0's program) can stand for the job on this platform ("" if so, else why not).
// `port` (if given): the engine's ports for the classes of links, where it can.
std::string one_class_refusal(const StepGraph& one, const Platform& p, const SimOptions& o, std::vector<uint32_t>* port = nullptr);
// simulate() of the job from rank 0's program; false (use untouched) where it cannot (then the
// caller builds the full graph): a refusal above, or a quotient that deadlocks (the report of who
// waits for whom needs every rank).
bool simulate_one_class(const StepGraph& one, const Platform& p, const SimOptions& o, SymmetryUse& use, SimResult& out);

// The representatives' programs for all (issue 32; docs/sim.md, "Symmetry"): the shifts the
// schedule's text proves, grown as the graph's search grows them (fewest classes first, each on
// digits of its own), give classes of ranks; where the platform cannot tell a class's ranks apart,
// only the representatives' programs are elaborated (ElabOptions::only_ranks) and simulated as
// the quotient, their collective instances standing for the full ones (each member for one step
// on each rank of its class). For MPI-style programs (`on` blocks) whose messages stay among the
// representatives, with the collectives costed once per shape (--collectives memo, whose costs
// of the instances not built are compared: CollectiveMemo::images_alike).
RankSymmetry text_shifts(const StepGraph& g);
// Whether `part` (built for `group`'s representatives) can stand for the job ("" if so).
std::string representatives_refusal(const StepGraph& part, const RankSymmetry& group, const Platform& p, const SimOptions& o,
                                    std::vector<uint32_t>* port = nullptr);
// simulate() of the job from `part`; false (use untouched) where it cannot: a refusal above, or a
// quotient that deadlocks.
bool simulate_representatives(const StepGraph& part, const RankSymmetry& group, const Platform& p, const SimOptions& o, SymmetryUse& use,
                              SimResult& out);

// What simulating every rank keeps beside the graph, a step: the runtime's state and the
// successor lists (about 16 and 8 bytes), or the symmetry search's positions (8) and the
// quotient. An expanded train_step at N = 512 peaked at 63 bytes a step against the graph's 30.
constexpr uint64_t kSimBytesPerStep = 32;

// Whether the engine may simulate one rank a class (then the state for every rank is not
// needed unless the classes are not found): "" if it may, else why not.
std::string engine_refusal(const SimOptions& o);

}  // namespace sg::sim

// Collectives costed once per shape (`sim --collectives memo`): instead of expanding every
// collective instance into its algorithm's point-to-point steps, each instance is timed by that
// algorithm run alone on the instance's own hosts (core/graph/collective_alone.hpp, expanded as
// the full graph would be: the same --algo, Open MPI's or NCCL's pick, NCCL's protocol costs),
// with every member entering at once. Instances of the same shape share one such run: the same
// kind, operation, root, member count, bytes and node layout (so the same algorithm), and routes
// between their members that the run cannot tell apart (each pair the algorithm sends on has the
// same latency, bandwidth and links, up to renaming the links, and the same node boundary).
//
// In the job's run (sim/runtime.hpp, CollectiveTimes), an instance completes on member k at the
// last member's entry plus member k's time alone; with the analytic engine (α-β), slowed where
// its ports are shared with other traffic (its members' messages alone are recorded for that:
// CollectiveTimes::uses; sim/analytic.cpp, "Collectives on shared ports"). Exact for a collective
// that runs alone with its members entering together (a test holds it to the expansion at 1e-9 on
// every library algorithm); not modelled, and said so in the report: an early member's progress
// before the last one enters, and (shared ports) how sharing slows a collective inside: as a
// whole, at its most crowded port's share.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "core/graph/step_graph.hpp"
#include "sim/platform.hpp"
#include "sim/runtime.hpp"
#include "sim/sim.hpp"

namespace sg::sim {

// One shape simulated: what it is, how it ran alone, how many instances took its times.
struct MemoShape {
  CollKind kind = CollKind::Barrier;
  uint32_t members = 0;
  uint64_t bytes = 0;  // per member
  std::string line;    // "allreduce over 8 ranks, 64 MiB: ring_allreduce (Open MPI's choice …)"
  uint64_t instances = 0;
  uint64_t steps = 0;    // of its expansion
  double seconds = 0;    // alone: its last member's exit
  double wall_s = 0;     // simulating it
  std::string symmetry;  // its run's symmetry line
};

struct CollectiveMemo {
  CollectiveTimes times;
  std::vector<MemoShape> shapes;
  uint64_t instances = 0;       // costed (complete, consistent, two members or more)
  uint64_t expanded_steps = 0;  // the steps the expansion would have added (every instance's)
  double wall_s = 0;
  // With `stands_for` (a representatives' build): whether every instance's images under its
  // shifts have its shape and its members' times are their images' (else the full graph is needed).
  bool images_alike = true;
  std::string images_why;
  // memo_collectives returned false because a run alone failed or deadlocked: the simulation's
  // failure (exit 3), not bad input.
  bool run_failed = false;
};

// Times every collective instance of `g` (collectives not expanded) as above, simulating each
// shape with `o`'s engine and options on platform `p`. False with errors in `diags`: where an
// instance cannot be expanded (bad input), or where a run alone fails or deadlocks ("costing …
// alone: …" at the collective's statement; then out.run_failed is set).
// With `stands_for`, `g` holds the representatives' programs of that symmetry
// (StepGraph::built_ranks): each instance is counted as the full instances it stands for, and its
// images are compared (CollectiveMemo::images_alike).
bool memo_collectives(const StepGraph& g, Session& s, const AlgoChoice& choice, const Platform& p, const SimOptions& o, CollectiveMemo& out,
                      Diagnostics& diags, const RankSymmetry* stands_for = nullptr);

}  // namespace sg::sim

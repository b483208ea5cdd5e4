// Expansion: every collective instance of a step graph replaced by the point-to-point steps of
// a library algorithm (schedules/*.sched), so that a simulator times the traffic a real MPI
// library would send. The algorithm per instance is the user's (`--algo`) or Open MPI 4.1's
// default for that size and group (algorithm_choice.hpp).
//
// For an instance over group G (n members) whose members pass b bytes each:
// - the algorithm is elaborated for N = n with `size` = b (and `root` = the root's index in G
//   where it takes one); its rank k runs on G's member k, in place of member k's collective step;
// - on each member an entry step (a `wait` with no handles: it costs nothing) takes over the
//   collective step's dependencies, the algorithm's first steps there depend on it, and an exit
//   step (the same kind) depends on the algorithm's last steps there; whatever depended on the
//   collective step depends on the exit step. So the expansion sits exactly where the
//   collective was in each member's program, and is ordered like it;
// - the algorithm's buffers become buffers of their own, named after the instance
//   ("allreduce#3.data"), with the algorithm's chunk counts and byte sizes and the element type
//   of the collective's buffer; its `init`s and `expect`s come along on them, so the reference
//   interpreter can still check that the algorithm did its job on its own data. Its choreographic
//   transfers stay matched pairs; its MPI (`on`-block) point-to-point steps get a communicator of
//   their own per instance, so they never match the program's own sends and receives;
// - every step of the expansion carries the collective statement's source location, so a
//   simulated critical path names the user's line.
//
// Values are not carried through expansions: the user's data never reaches the algorithm's
// buffers, and the collective no longer writes the user's chunks. The user's postconditions are
// kept but no longer hold where a collective moved the data; an expanded graph is for timing,
// not for `check`.
//
// Instances that are incomplete (a member never issues the collective) or inconsistent (the
// members disagree on kind, root, op or size) are kept as collective steps: they are deadlocks,
// and the simulator reports them as such. A group of one member needs no communication: its
// step becomes a single no-op step.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/algorithm_choice.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// What happened to one collective instance of the input graph.
struct ExpandedInstance {
  uint32_t instance = 0;  // index into the input graph's instances
  CollKind kind = CollKind::Barrier;
  uint32_t group = 0;  // the input graph's group id
  uint32_t members = 0;
  uint64_t bytes = 0;  // per member
  bool expanded = false;
  std::string schedule;  // the library schedule that replaced it ("" when kept or n = 1)
  std::string why;       // "--algo", Open MPI's choice, a fallback, or why it was kept
  uint64_t steps = 0;    // steps the expansion added (markers included)
  // Expanded: per member (in group order), the step of the new graph where its part begins and
  // the one where it ends (one and the same no-op step for a group of one).
  std::vector<StepId> entry, exit;
};

struct ExpandReport {
  std::vector<ExpandedInstance> instances;
  uint64_t expanded = 0, kept = 0;
  uint64_t too_big_steps = 0;  // refused past the memory limit: the steps it would have had
};

// The most members of group `g` on one node of `gpus_per_node` ranks (ranks gpus·k … gpus·k +
// gpus - 1), or 0 when the platform has no nodes: the node layout the expansion gives NCCL's
// choice for an instance over g.
uint32_t gpus_in_group(const GroupInfo& g, uint32_t gpus_per_node);

// How the expansion gets its graphs: handed in by the pipeline (core/pipeline.hpp,
// `library_instantiation`), so that a graph transform never calls back into the pipeline that
// calls it.
struct Instantiation {
  // A library algorithm's graph for `t` with `o`, through the passes; its diagnostics in `diags`
  // (kept apart from the user's); null where it fails.
  std::function<std::unique_ptr<StepGraph>(const Target& t, const ElabOptions& o, Diagnostics& diags)> algorithm;
  // The passes over the expanded graph (match, collectives, prune, validate); false with errors in `diags`.
  std::function<bool(StepGraph& g, Diagnostics& diags)> passes;
};

// Returns the expanded graph, which has been through `inst.passes`, or null after reporting an
// error to `diags`. `g` must have been through the pipeline (its instances formed) and hold
// every rank (not only_rank). The algorithms are loaded through `s` and instantiated by
// `inst.algorithm` (their diagnostics stay out of `diags` unless an algorithm fails for another
// reason than refusing the group size). A refused group size falls back to another algorithm of
// the kind, with a note at the collective's statement. `max_memory` (0: no limit) refuses an
// expansion whose estimated size exceeds it, counting `consumer_per_step` bytes a step more for
// what the graph's consumer keeps (the simulator's state).
std::unique_ptr<StepGraph> expand_collectives(const StepGraph& g, Session& s, const AlgoChoice& choice, const Instantiation& inst,
                                              Diagnostics& diags, ExpandReport* report = nullptr, uint64_t max_memory = 0,
                                              uint64_t consumer_per_step = 0);

}  // namespace sg

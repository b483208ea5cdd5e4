// Writers for the step graph: text (for people and --dump-after), JSON (for tools), DOT (for
// Graphviz), stats (a summary) and GOAL (LogGOPSim's schedule format). All stream; none builds
// the whole output in memory.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// max_steps > 0 prints only the first max_steps steps (and says how many were left out).
void write_text(std::ostream& os, const StepGraph& g, const SourceManager& sm, uint64_t max_steps = 0);
void write_json(std::ostream& os, const StepGraph& g, const SourceManager& sm);
void write_dot(std::ostream& os, const StepGraph& g, const SourceManager& sm);

struct GraphStats {
  uint64_t steps = 0, deps = 0;
  uint64_t by_kind[7] = {};
  uint64_t transfers = 0;       // matched send/receive pairs (choreographic + MPI)
  uint64_t bytes_moved = 0;     // bytes sent over all sends
  uint64_t max_rank_steps = 0;  // the busiest rank's step count
  uint64_t rounds = 0;          // longest chain of steps, counting each message as one hop
  bool rounds_converged = true;
  uint64_t memory = 0;  // bytes the graph holds
  uint64_t collective_instances = 0;
  uint64_t incomplete_instances = 0;
};
GraphStats compute_stats(const StepGraph& g);
void write_stats(std::ostream& os, const StepGraph& g, const GraphStats& s);
void write_stats_json(std::ostream& os, const StepGraph& g, const GraphStats& s);

// GOAL, the text schedule format of LogGOPSim (github.com/spcl/LogGOPSim, read by its txt2bin):
// one `rank R { … }` block per rank, a send step -> `send Nb to P tag T`, a receive ->
// `recv Nb from P tag T`, copy / reduce / compute / wait -> `calc` (compute on `cpu 1`),
// dependencies -> `requires` (after the step completed) or `irequires` (after a nonblocking step
// started). Times are in ns, LogGOPSim's unit for L, o, g, G and O. docs/stepgraph.md has the
// whole mapping.
struct GoalOptions {
  double ns_per_flop = 0.001;  // compute steps: ceil(flops × this) ns (default: 1 TFLOP/s)
  double ns_per_byte = 0.1;    // copy, reduce, reducing receives: ceil(bytes × this) ns (10 GB/s)
};
constexpr uint32_t kGoalAnyTag = 0xffffffffu;   // written as `tag -1`
constexpr uint32_t kGoalMpiTagBase = 1u << 31;  // tags of messages matched MPI's way (wildcards)
// The GOAL tag of every send and receive, decided before anything is written.
struct GoalPlan {
  std::vector<uint32_t> tag;  // per step; sends and receives only
  uint64_t exact_messages = 0, mpi_messages = 0;
  uint32_t mpi_tags = 0;  // distinct (communicator, tag) pairs among the latter
};
// False (with an error per step that cannot be exported in diags) when the graph holds a
// collective step, an unmatched send or receive, a wildcard LogGOPSim cannot express, or only
// one rank's program.
bool plan_goal(const StepGraph& g, GoalPlan& plan, Diagnostics& diags);
void write_goal(std::ostream& os, const StepGraph& g, const GoalPlan& plan, const GoalOptions& o);

// A compact one-line description of a step ("send data[3] to r1"), used by reports.
std::string describe_step(const StepGraph& g, StepId s);
// The same without the front end's label of its statement.
std::string describe_step_only(const StepGraph& g, StepId s);
// The parameter values an instance was built with, for a command's header: "size = 67,108,864,
// mp = 4" (every value exact, with thousands separators, so a suffix read otherwise than meant
// shows: seq = 131,072, not 128,000); "" when the schedule has none.
std::string parameter_values(const StepGraph& g);
// "file:line" of a step's statement.
std::string step_where(const StepGraph& g, const SourceManager& sm, StepId s);

}  // namespace sg

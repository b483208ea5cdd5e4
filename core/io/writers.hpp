// Writers for the step graph: text (for people and --dump-after), JSON (for tools), DOT (for
// Graphviz) and stats (a summary). All stream; none builds the whole output in memory.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>

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
  uint64_t memory = 0;          // bytes the graph holds
  uint64_t collective_instances = 0;
  uint64_t incomplete_instances = 0;
};
GraphStats compute_stats(const StepGraph& g);
void write_stats(std::ostream& os, const StepGraph& g, const GraphStats& s);
void write_stats_json(std::ostream& os, const StepGraph& g, const GraphStats& s);

// A compact one-line description of a step ("send data[3] to r1"), used by reports.
std::string describe_step(const StepGraph& g, StepId s);
// "file:line" of a step's statement.
std::string step_where(const StepGraph& g, const SourceManager& sm, StepId s);

}  // namespace sg

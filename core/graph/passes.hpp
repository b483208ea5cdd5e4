// The pass pipeline after elaboration. Each pass is one free function in its own file; the
// pipeline can print the graph after any of them (--dump-after PASS).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// match_p2p.cpp: pairs local-view (MPI) sends and receives: fixed pairs where matching is
// deterministic, candidate sets where a receive uses a wildcard.
void match_p2p(StepGraph& g, Diagnostics& diags);
// check_totals.cpp: refuses an instance whose buffers or moved bytes come to more than 4 EiB, so that
// every byte total downstream is exact in 64 bits.
void check_totals(StepGraph& g, Diagnostics& diags);
// group_collectives.cpp: forms collective instances (the k-th collective of every member of a group)
// and marks incomplete or inconsistent ones.
void group_collectives(StepGraph& g, Diagnostics& diags);
// warn_unused_buffers.cpp: warns about a buffer no step reads or writes and no postcondition covers.
void warn_unused_buffers(StepGraph& g, Diagnostics& diags);
// prune_deps.cpp: drops dependencies implied by another dependency of the same step.
void prune_deps(StepGraph& g, Diagnostics& diags);
// (expand_collectives.hpp, run on request after these: a new graph with every collective
// replaced by a library algorithm, which goes through these passes again.)
// validate.cpp: checks the graph's internal invariants (ids in range, dependencies backward and
// on the same rank, matches symmetric). Failures throw InternalError (core/base/errors.hpp).
void validate(StepGraph& g, Diagnostics& diags);

struct Pass {
  const char* name;
  const char* what;
  void (*run)(StepGraph&, Diagnostics&);
};
// In pipeline order.
const std::vector<Pass>& passes();
// "parse", "elaborate" and every pass name: what --dump-after accepts.
std::vector<std::string> dump_points();

// Runs every pass in order; after each, calls dump(name) when name is in dump_after (or
// dump_after holds "all"). Stops at the first pass that reports an error.
bool run_passes(StepGraph& g, Diagnostics& diags, const std::vector<std::string>& dump_after,
                const std::function<void(const std::string&)>& dump);

}  // namespace sg

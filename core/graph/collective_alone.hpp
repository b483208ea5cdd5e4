// One collective instance of a step graph on its own: a graph of n ranks (the instance's n
// members, member k as rank k) whose only steps are the members' collective steps, over one
// group of every rank, with the same kind, operation, root (as its index in the group), chunk
// ranges and buffers. Expanded like the graph it comes from (expand_collectives), it is the
// traffic that instance's algorithm sends, alone: what sim/memo_collectives.hpp times once per
// shape and reuses for every instance of that shape.
#pragma once
#include <memory>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// The instance `instance` of `g` (through the pass pipeline: its instances formed) alone, through
// the pass pipeline itself. It must be complete and consistent; null (with an error in `diags`)
// if the passes refuse it.
std::unique_ptr<StepGraph> collective_alone(const StepGraph& g, uint32_t instance, Diagnostics& diags);

}  // namespace sg

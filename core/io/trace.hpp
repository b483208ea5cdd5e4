// Chrome trace (the JSON "Trace Event Format" that Perfetto and chrome://tracing open) of a
// timed run of a step graph: one track per rank, a slice per step, a flow arrow per message.
#pragma once
#include <iosfwd>
#include <vector>

#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

// starts / ends: per step, in seconds (NaN: the step never ran). partners: per send, the receive
// that took it (kNoStep where unknown; empty: the graph's own matches).
void write_chrome_trace(std::ostream& os, const StepGraph& g, const SourceManager& sm, const std::vector<double>& starts,
                        const std::vector<double>& ends, const std::vector<StepId>& partners = {});

}  // namespace sg

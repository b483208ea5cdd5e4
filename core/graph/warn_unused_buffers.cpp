// The `unused` pass: a buffer that no step reads or writes and no postcondition covers is
// declared for nothing. Usually a typo or a leftover (a staging buffer the schedule stopped
// using; an input the steps never read): a warning at its declaration, never an error. Skipped
// for one rank's program (exec elaborates each rank alone: another rank may use it), at N = 1 (a
// staging buffer of a collective is idle when there is nobody to talk to) and for an expanded
// graph (the graph as written was checked; its collectives, now replaced, used the buffers).
#include <vector>

#include "core/graph/passes.hpp"

namespace sg {

void warn_unused_buffers(StepGraph& g, Diagnostics& diags) {
  if (g.partial() || g.nranks < 2 || g.size() == 0 || g.expansion) return;
  std::vector<bool> used(g.buffers.size(), false);
  std::vector<Range> rs;
  for (StepId s = 0; s < g.size(); ++s) {
    rs.clear();
    g.reads(s, rs);
    g.writes(s, rs);
    for (const Range& r : rs)
      if (r.buf < used.size() && r.cnt) used[r.buf] = true;
  }
  for (const Expectation& x : g.expects)
    for (const Range& r : x.bufs)
      if (r.buf < used.size()) used[r.buf] = true;
  for (size_t b = 0; b < g.buffers.size(); ++b)
    if (!used[b] && g.buffers[b].loc.valid())
      diags.warning(g.buffers[b].loc,
                    "buffer '" + g.buffers[b].name + "' is declared, but no step reads or writes it and no postcondition covers it");
}

}  // namespace sg

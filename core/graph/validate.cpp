// Internal invariants of a step graph. A failure here is a bug in stepgraph, not in the
// schedule: it is thrown as an InternalError (core/base/errors.hpp), never added to the user's
// diagnostics, and names the first few broken invariants.
#include <algorithm>

#include "core/base/errors.hpp"
#include "core/graph/passes.hpp"

namespace sg {

void validate(StepGraph& g, Diagnostics& diags) {
  (void)diags;  // nothing here is the user's to fix
  std::string found;
  Loc first;
  uint32_t bugs = 0;
  auto bug = [&](StepId s, const std::string& what) {
    if (bugs++ == 0) first = s < g.size() ? g.loc(s) : Loc{};
    if (bugs <= 5) found += (found.empty() ? "" : "; ") + std::string("step #") + std::to_string(s) + ": " + what;
  };
  if (!g.dep_offsets_cover_steps()) internal_error("step graph invalid: dependency offsets do not cover every step");
  uint32_t nbuf = static_cast<uint32_t>(g.buffers.size());
  for (StepId s = 0; s < g.size() && bugs < 1000; ++s) {
    if (g.rank(s) >= g.nranks) bug(s, "rank out of range");
    Range r = g.range(s);
    if (r.cnt && (r.buf >= nbuf || uint64_t{r.lo} + r.cnt > g.buffers[r.buf].chunks)) bug(s, "chunk range out of bounds");
    StepId prev = kNoStep;
    for (StepId d : g.deps(s)) {
      if (d >= s) bug(s, "a dependency on a later step");
      else if (g.rank(d) != g.rank(s)) bug(s, "a dependency on another rank's step");
      if (prev != kNoStep && prev >= d) bug(s, "dependencies not sorted");
      prev = d;
    }
    StepKind k = g.kind(s);
    if ((k == StepKind::Send || k == StepKind::Recv) && !g.local(s) && g.only_rank < 0) {
      StepId m = g.ref(s);
      if (m >= g.size() || g.ref(m) != s || g.kind(m) == k) bug(s, "choreographic match is not symmetric");
    }
    if ((k == StepKind::Send || k == StepKind::Recv) && g.local(s)) {
      if (g.ref(s) >= g.p2p.size()) bug(s, "p2p info out of range");
      else {
        StepId m = g.p2p_info(s).match;
        if (m != kNoStep && (m >= g.size() || g.p2p_info(m).match != s)) bug(s, "MPI match is not symmetric");
      }
    }
    if (k == StepKind::Collective && g.ref(s) >= g.colls.size()) bug(s, "collective info out of range");
    if (k == StepKind::Compute && g.ref(s) >= g.computes.size()) bug(s, "compute info out of range");
  }
  if (bugs)
    internal_error("step graph invalid after the passes: " + found + (bugs > 5 ? "; and " + std::to_string(bugs - 5) + " more" : ""),
                   first);
}

}  // namespace sg

// The totals pass: the bytes an instance moves and holds, summed exactly (128-bit), must stay
// within kMaxBytes (4 EiB) so that every total printed downstream (bytes moved, per rank, per
// link, bus bandwidth) is exact in 64 bits. Before this pass, --set size=8388607TiB at N = 4
// printed 18,446,737,476,639,784,960 bytes moved: the true total wrapped at 2^64.
#include "core/base/checked.hpp"
#include "core/base/sizes.hpp"
#include "core/graph/passes.hpp"

namespace sg {

void check_totals(StepGraph& g, Diagnostics& diags) {
  u128 held = 0;
  for (const BufferInfo& b : g.buffers) held += static_cast<u128>(b.chunk_bytes) * b.chunks;
  held *= g.only_rank >= 0 ? 1 : g.nranks;  // (a representatives' build: the whole job's)
  if (held > kMaxBytes && !g.buffers.empty()) {
    const BufferInfo& big = g.buffers.front();
    diags.error(big.loc, "the buffers of all " + std::to_string(g.nranks) +
                             " ranks come to more than 2^62 bytes (4 EiB): totals past that overflow 64-bit arithmetic; choose a smaller "
                             "size or fewer ranks");
    return;
  }
  // Every step's data, counted once per step: a message twice (its send and its receive), a
  // collective once per member. Any total a backend sums is part of this one.
  u128 moved = 0;
  for (StepId s = 0; s < g.size(); ++s) {
    Range r = g.range(s);
    if (r.cnt) moved += g.range_bytes(r);
    if (g.kind(s) == StepKind::Collective && g.coll(s).into.cnt) moved += g.range_bytes(g.coll(s).into);
    if (moved > kMaxBytes) {
      diags.error(g.loc(s), "the data this instance moves comes to more than 2^62 bytes (4 EiB) by this statement (N = " +
                                std::to_string(g.nranks) + "): totals past that overflow 64-bit arithmetic; choose a smaller size");
      return;
    }
  }
}

}  // namespace sg

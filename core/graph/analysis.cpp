#include "core/graph/analysis.hpp"

#include <algorithm>
#include <unordered_map>

namespace sg {

GraphCost analyze_cost(const StepGraph& g) {
  GraphCost out;
  out.ranks.assign(g.nranks, RankCost{});
  // Which buffers are inputs or outputs.
  std::vector<uint8_t> named(g.buffers.size(), 0);
  for (const InitRule& r : g.inits) named[r.range.buf] = 1;
  for (const Expectation& x : g.expects)
    for (const Range& r : x.bufs) named[r.buf] = 1;
  for (uint32_t b = 0; b < g.buffers.size(); ++b)
    if (!named[b]) out.extra_buffers.push_back(b);

  for (StepId s = 0; s < g.size(); ++s) {
    RankCost& c = out.ranks[g.rank(s)];
    switch (g.kind(s)) {
      case StepKind::Send: {
        uint64_t b = g.range_bytes(g.range(s));
        c.bytes_sent += b;
        ++c.messages_sent;
        uint32_t p = g.peer(s);
        if (p < g.nranks) {  // a wildcard-free peer; otherwise the receive counts it
          out.ranks[p].bytes_received += b;
          ++out.ranks[p].messages_received;
        }
        break;
      }
      case StepKind::Recv:
        if (g.flags(s) & kFlagReduce) c.reduced_bytes += g.range_bytes(g.range(s));
        break;
      case StepKind::Reduce: c.reduced_bytes += g.range_bytes(g.range(s)); break;
      case StepKind::Compute: {
        const ComputeInfo& ci = g.compute(s);
        c.flops += ci.flops;
        if (ci.kind != ComputeKind::Generic) {
          ++c.tiles;
          c.tile_work += ci.mask == Mask::Causal ? 0.5 : 1.0;
        }
        break;
      }
      case StepKind::Collective: out.has_collectives = true; break;
      default: break;
    }
  }

  // Peak extra memory per rank: live ranges of extra chunks in program order.
  if (!out.extra_buffers.empty()) {
    std::vector<uint8_t> extra(g.buffers.size(), 0);
    for (uint32_t b : out.extra_buffers) extra[b] = 1;
    StepGraph::RankIndex ix = g.rank_index();
    std::vector<Range> acc;
    for (uint32_t r = 0; r < g.nranks; ++r) {
      // chunk key -> (first, last) position in the rank's program
      std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> live;
      for (uint64_t i = ix.off[r]; i < ix.off[r + 1]; ++i) {
        StepId s = ix.steps[i];
        acc.clear();
        g.reads(s, acc);
        g.writes(s, acc);
        for (const Range& x : acc) {
          if (!extra[x.buf]) continue;
          for (uint32_t k = 0; k < x.cnt; ++k) {
            uint64_t key = (uint64_t{x.buf} << 32) | (x.lo + k);
            auto [it, fresh] = live.try_emplace(key, i, i);
            if (!fresh) it->second.second = i;
          }
        }
      }
      // Sweep: +bytes at a chunk's first use, -bytes after its last.
      std::vector<std::pair<uint64_t, int64_t>> ev;
      ev.reserve(live.size() * 2);
      for (const auto& [key, span] : live) {
        auto bytes = static_cast<int64_t>(g.buffers[key >> 32].chunk_bytes);
        ev.emplace_back(span.first * 2, bytes);
        ev.emplace_back(span.second * 2 + 1, -bytes);
      }
      std::sort(ev.begin(), ev.end());
      int64_t cur = 0, peak = 0;
      for (const auto& e : ev) {
        cur += e.second;
        peak = std::max(peak, cur);
      }
      out.ranks[r].peak_extra_bytes = static_cast<uint64_t>(peak);
    }
  }

  for (bool by_flops : {true, false}) {
    double sum = 0, mx = 0;
    for (const RankCost& c : out.ranks) {
      double w = by_flops ? c.flops : c.tile_work;
      sum += w;
      mx = std::max(mx, w);
    }
    if (sum > 0) {
      out.imbalance = mx / (sum / g.nranks);
      break;
    }
  }
  return out;
}

}  // namespace sg

#include "core/graph/match_queues.hpp"

#include <map>
#include <tuple>

namespace sg {

P2PEnds p2p_ends(const StepGraph& g) {
  P2PEnds ends;
  for (StepId s = 0; s < g.size(); ++s) {
    if (!g.local(s) || (g.kind(s) != StepKind::Send && g.kind(s) != StepKind::Recv)) continue;
    const P2PInfo& p = g.p2p_info(s);
    if (g.kind(s) == StepKind::Send) ends[{p.peer, p.comm}].first.push_back(s);
    else ends[{g.rank(s), p.comm}].second.push_back(s);
  }
  return ends;
}

std::vector<StepId> queue_partners(const StepGraph& g) {
  std::vector<StepId> out(g.size(), kNoStep);
  for (const auto& [dst, sr] : p2p_ends(g)) {
    std::vector<StepId> wild;
    std::map<std::pair<uint32_t, int32_t>, std::pair<std::vector<StepId>, std::vector<StepId>>> queues;
    for (StepId m : sr.first) queues[{g.rank(m), g.p2p_info(m).tag}].first.push_back(m);
    for (StepId r : sr.second) {
      if (g.flags(r) & (kFlagAnySource | kFlagAnyTag)) {
        wild.push_back(r);
        out[r] = kQueueContested;
      } else {
        queues[{g.p2p_info(r).peer, g.p2p_info(r).tag}].second.push_back(r);
      }
    }
    for (const auto& [queue, ms_rs] : queues) {
      const auto& [ms, rs] = ms_rs;
      bool contested = false;
      for (StepId w : wild) {
        const P2PInfo& p = g.p2p_info(w);
        if ((p.peer == kAnyRank || p.peer == queue.first) && (p.tag == kAnyTag || p.tag == queue.second)) contested = true;
      }
      for (size_t k = 0; k < ms.size(); ++k) out[ms[k]] = contested ? kQueueContested : k < rs.size() ? rs[k] : kNoStep;
      for (size_t k = 0; k < rs.size(); ++k) out[rs[k]] = contested ? kQueueContested : k < ms.size() ? ms[k] : kNoStep;
    }
  }
  return out;
}

}  // namespace sg

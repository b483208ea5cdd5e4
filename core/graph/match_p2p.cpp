// Pairs local-view sends and receives the way MPI does: by (source, tag, communicator), in
// order per pair (non-overtaking). Where a destination has no wildcard receive on a
// communicator, the k-th receive from s with tag t takes the k-th send from s to it with tag
// t, so the pairs are fixed. Where it has one, every receive there gets the set of sends it
// could take (the verifier decides among them) and a fixed pair only if that set has one send.
#include <algorithm>
#include <map>
#include <tuple>

#include "core/graph/match_queues.hpp"
#include "core/graph/passes.hpp"

namespace sg {

void match_p2p(StepGraph& g, Diagnostics& diags) {
  if (g.only_rank >= 0) return;
  g.p2p_matched = true;
  if (g.p2p.empty()) return;
  P2PEnds ends = p2p_ends(g);  // (dst, comm) -> sends to it and receives at it, in program order
  g.candidates.clear();
  for (auto& [key, sr] : ends) {
    auto& [sends, recvs] = sr;
    bool wild = std::any_of(recvs.begin(), recvs.end(), [&](StepId r) { return g.flags(r) & (kFlagAnySource | kFlagAnyTag); });
    if (!wild) {
      // Fixed pairs per (source, tag) channel.
      std::map<std::pair<uint32_t, int32_t>, std::vector<StepId>> chan_sends;
      for (StepId s : sends) chan_sends[{g.rank(s), g.p2p_info(s).tag}].push_back(s);
      std::map<std::pair<uint32_t, int32_t>, size_t> next;
      for (StepId r : recvs) {
        const P2PInfo& rp = g.p2p_info(r);
        auto ch = std::make_pair(rp.peer, rp.tag);
        auto& list = chan_sends[ch];
        size_t& k = next[ch];
        if (k >= list.size()) continue;  // unmatched: the verifier reports it
        StepId s = list[k++];
        g.p2p[g.ref(r)].match = s;
        g.p2p[g.ref(s)].match = r;
        uint64_t sb = g.range_bytes(g.range(s)), rb = g.range_bytes(g.range(r));
        if (sb != rb) {
          auto& d = diags.error(g.loc(r), "message size mismatch: rank " + std::to_string(g.rank(r)) + " receives " + std::to_string(rb) +
                                              " bytes into " + g.range_name(g.range(r)) + " but rank " + std::to_string(g.rank(s)) +
                                              " sends " + std::to_string(sb) + " bytes from " + g.range_name(g.range(s)));
          d.notes.push_back({g.loc(s), "the matching send"});
        }
      }
      continue;
    }
    // Candidate sets.
    for (StepId r : recvs) {
      P2PInfo& rp = g.p2p[g.ref(r)];
      rp.cand_off = static_cast<uint32_t>(g.candidates.size());
      for (StepId s : sends)
        if (p2p_compatible(g, r, s)) g.candidates.push_back(s);
      rp.cand_cnt = static_cast<uint32_t>(g.candidates.size()) - rp.cand_off;
      rp.match = kNoStep;
    }
  }
}

}  // namespace sg

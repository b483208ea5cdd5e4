// Deadlock analysis shared by both engines: from a stuck state (which steps started and
// completed, what matched what), each stuck rank's first blocked step, what it waits for, and a
// wait-for cycle between ranks if there is one.
#include "verify/wait_for.hpp"

#include <set>

#include "core/io/writers.hpp"
#include "verify/static_checks.hpp"

namespace sg::verify {

namespace {


// What the frontier step of a stuck rank waits for: the ranks, and a phrase.
std::pair<std::vector<uint32_t>, std::string> waits_for(const StepGraph& g, const ExecState& r, StepId s,
                                                        SendMode mode) {
  std::vector<uint32_t> ranks;
  std::string why;
  auto peers_of_recv = [&](StepId rv) {
    std::set<uint32_t> out;
    const P2PInfo& p = g.p2p_info(rv);
    if (p.peer != kAnyRank) {
      out.insert(p.peer);
    } else {
      for (StepId x = 0; x < g.size(); ++x)
        if (g.kind(x) == StepKind::Send && g.local(x) && r.partner[x] == kNoStep && compatible(g, rv, x)) out.insert(g.rank(x));
    }
    return out;
  };
  switch (g.kind(s)) {
    case StepKind::Recv: {
      if (!g.local(s)) {
        StepId m = g.ref(s);
        ranks.push_back(g.rank(m));
        why = "waits for rank " + std::to_string(g.rank(m)) + " to send #" + std::to_string(m);
        break;
      }
      auto ps = peers_of_recv(s);
      ranks.assign(ps.begin(), ps.end());
      const P2PInfo& p = g.p2p_info(s);
      why = "waits for a message from " + (p.peer == kAnyRank ? std::string("any rank") : "rank " + std::to_string(p.peer)) +
            (p.tag == kAnyTag ? std::string(" (any tag)") : " (tag " + std::to_string(p.tag) + ")");
      break;
    }
    case StepKind::Send: {
      const P2PInfo& p = g.p2p_info(s);
      ranks.push_back(p.peer);
      why = "waits for rank " + std::to_string(p.peer) + " to post a matching receive (" + mode_name(mode) + ")";
      break;
    }
    case StepKind::Wait:
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) {
        if (r.status[*h] & kStepCompleted) continue;
        if (g.kind(*h) == StepKind::Recv) {
          auto ps = peers_of_recv(*h);
          ranks.assign(ps.begin(), ps.end());
        } else {
          ranks.push_back(g.p2p_info(*h).peer);
        }
        why = "waits for its " + std::string(g.kind(*h) == StepKind::Send ? "isend" : "irecv") + " #" + std::to_string(*h) +
              " (" + describe_step(g, *h) + ") to complete";
        break;
      }
      break;
    case StepKind::Collective: {
      const CollInfo& c = g.coll(s);
      const Instance& in = g.instances[c.instance];
      const GroupInfo& gr = g.groups[in.group];
      if (!in.consistent) {
        why = std::string("is in ") + coll_name(c.kind) + " #" + std::to_string(c.seq) +
              " of its group, where the members issued different collectives (kind, root, op or size)";
        for (uint32_t k = 0; k < in.steps_cnt; ++k) {
          StepId x = g.instance_steps[in.steps_off + k];
          if (g.rank(x) != g.rank(s)) ranks.push_back(g.rank(x));
        }
        break;
      }
      std::vector<uint32_t> missing;
      for (uint32_t k = 0; k < gr.count; ++k) {
        uint32_t m = gr.member(k);
        bool here = false;
        for (uint32_t i = 0; i < in.steps_cnt; ++i) {
          StepId x = g.instance_steps[in.steps_off + i];
          if (g.rank(x) == m && (r.status[x] & kStepIssued)) here = true;
        }
        if (!here) missing.push_back(m);
      }
      ranks = missing;
      why = std::string("waits in ") + coll_name(c.kind) + " #" + std::to_string(c.seq) + " for rank";
      why += missing.size() == 1 ? " " : "s ";
      for (size_t i = 0; i < missing.size() && i < 8; ++i) why += (i ? ", " : "") + std::to_string(missing[i]);
      if (missing.size() > 8) why += ", …";
      if (!in.complete) why += " (the instance has no step for some member: a missing participant)";
      break;
    }
    default: why = "cannot run"; break;
  }
  return {ranks, why};
}

}  // namespace

Counterexample build_deadlock(const StepGraph& g_, const ExecState& r, SendMode mode_) {

    Counterexample cx;
    cx.verdict = Verdict::Deadlock;
    // Each rank's frontier: its first step, in program order, that did not complete (a started
    // nonblocking operation does not hold its rank).
    std::vector<StepId> frontier(g_.nranks, kNoStep);
    for (StepId s = 0; s < g_.size(); ++s) {
      uint32_t rk = g_.rank(s);
      if (frontier[rk] != kNoStep || (r.status[s] & kStepCompleted)) continue;
      if (g_.nonblocking(s) && (r.status[s] & kStepIssued)) continue;
      frontier[rk] = s;
    }
    std::vector<std::vector<uint32_t>> edges(g_.nranks);
    for (uint32_t rk = 0; rk < g_.nranks; ++rk) {
      StepId s = frontier[rk];
      if (s == kNoStep) continue;
      auto [ranks, why] = waits_for(g_, r, s, mode_);
      edges[rk] = ranks;
      if (cx.steps.size() < 16) cx.steps.push_back(cx_step(g_, s, "stuck", why));
    }
    // A wait-for cycle among the stuck ranks.
    std::vector<int> color(g_.nranks, 0), parent(g_.nranks, -1);
    std::vector<uint32_t> cycle;
    for (uint32_t start = 0; start < g_.nranks && cycle.empty(); ++start) {
      if (frontier[start] == kNoStep || color[start]) continue;
      std::vector<std::pair<uint32_t, size_t>> st{{start, 0}};
      color[start] = 1;
      while (!st.empty() && cycle.empty()) {
        auto& [u, k] = st.back();
        if (k < edges[u].size()) {
          uint32_t v = edges[u][k++];
          if (v >= g_.nranks || frontier[v] == kNoStep) continue;
          if (color[v] == 1) {
            // Found: v … u -> v.
            for (size_t i = 0; i < st.size(); ++i)
              if (st[i].first == v) {
                for (size_t j = i; j < st.size(); ++j) cycle.push_back(st[j].first);
                break;
              }
            cycle.push_back(v);
          } else if (color[v] == 0) {
            color[v] = 1;
            st.emplace_back(v, 0);
          }
        } else {
          color[u] = 2;
          st.pop_back();
        }
      }
    }
    cx.cycle = cycle;
    std::vector<uint32_t> stuck;
    for (uint32_t rk = 0; rk < g_.nranks; ++rk)
      if (frontier[rk] != kNoStep) stuck.push_back(rk);
    cx.summary = std::to_string(stuck.size()) + " rank" + (stuck.size() == 1 ? "" : "s") + " can never go on";
    if (!cycle.empty()) {
      cx.reason = "wait-for cycle:";
      for (size_t i = 0; i < cycle.size(); ++i) cx.reason += (i ? " -> rank " : " rank ") + std::to_string(cycle[i]);
    } else {
      // No cycle: the chain ends at ranks that finished (or never issue what is awaited).
      std::set<uint32_t> done;
      for (uint32_t rk = 0; rk < g_.nranks; ++rk)
        for (uint32_t v : edges[rk])
          if (v < g_.nranks && frontier[v] == kNoStep) done.insert(v);
      cx.reason = "no cycle: the stuck ranks wait for ";
      if (done.empty()) cx.reason += "operations that nothing will issue";
      else {
        cx.reason += "rank";
        cx.reason += done.size() == 1 ? " " : "s ";
        size_t i = 0;
        for (uint32_t v : done) cx.reason += (i++ ? ", " : "") + std::to_string(v);
        cx.reason += done.size() == 1 ? ", which has finished its program" : ", which have finished their programs";
      }
    }
    return cx;
  }


}  // namespace sg::verify

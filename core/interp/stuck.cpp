// Where a run stopped, and why: each rank that cannot finish, its first blocked step and what it
// waits for, and a wait-for cycle between ranks if there is one. `check` prints it for its one
// run; the verifier's deadlock counterexamples are built from it.
#include "core/interp/stuck.hpp"

#include <set>

#include "core/io/writers.hpp"

namespace sg {

const char* mode_name(SendMode m) {
  switch (m) {
    case SendMode::Eager: return "eager";
    case SendMode::Rendezvous: return "rendezvous";
    case SendMode::Bounded: return "bounded";
  }
  return "eager";
}

namespace {

// What the frontier step of a stuck rank waits for: the ranks, and a phrase.
std::pair<std::vector<uint32_t>, std::string> waits_for(const StepGraph& g, const std::vector<uint8_t>& status,
                                                        const std::vector<StepId>& partner, StepId s, SendMode mode) {
  std::vector<uint32_t> ranks;
  std::string why;
  auto peers_of_recv = [&](StepId rv) {
    std::set<uint32_t> out;
    const P2PInfo& p = g.p2p_info(rv);
    if (p.peer != kAnyRank) {
      out.insert(p.peer);
    } else {
      for (StepId x = 0; x < g.size(); ++x)
        if (g.kind(x) == StepKind::Send && g.local(x) && partner[x] == kNoStep && p2p_compatible(g, rv, x)) out.insert(g.rank(x));
    }
    return out;
  };
  if (const NeverReady* n = g.never_ready_entry(s)) return {ranks, n->why};
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
      why = mode == SendMode::Bounded
                ? "waits for a slot: rank " + std::to_string(p.peer) + " has not received the " + std::to_string(g.connection_slots) +
                      " messages ahead of it on the connection (bounded)"
                : "waits for rank " + std::to_string(p.peer) + " to post a matching receive (" + mode_name(mode) + ")";
      break;
    }
    case StepKind::Wait:
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) {
        if (status[*h] & kStepCompleted) continue;
        if (g.kind(*h) == StepKind::Recv) {
          auto ps = peers_of_recv(*h);
          ranks.assign(ps.begin(), ps.end());
        } else {
          ranks.push_back(g.p2p_info(*h).peer);
        }
        why = "waits for its " + std::string(g.kind(*h) == StepKind::Send ? "isend" : "irecv") + " #" + std::to_string(*h) + " (" +
              describe_step(g, *h) + ") to complete";
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
          if (g.rank(x) == m && (status[x] & kStepIssued)) here = true;
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

StuckState analyze_stuck(const StepGraph& g, const std::vector<uint8_t>& status, const std::vector<StepId>& partner, SendMode mode) {
  StuckState out;
  // Each rank's frontier: its first step, in program order, that did not complete (a started
  // nonblocking operation does not hold its rank).
  std::vector<StepId> frontier(g.nranks, kNoStep);
  for (StepId s = 0; s < g.size(); ++s) {
    uint32_t rk = g.rank(s);
    if (frontier[rk] != kNoStep || (status[s] & kStepCompleted)) continue;
    if (g.nonblocking(s) && (status[s] & kStepIssued)) continue;
    frontier[rk] = s;
  }
  // A step that never becomes ready is the cause, whatever comes before it in program order (an
  // MSCCL gpu's thread blocks interleave there): the rank is shown stuck at it.
  for (const NeverReady& n : g.never_ready)
    if (!(status[n.step] & kStepCompleted) && (frontier[g.rank(n.step)] == kNoStep || !g.never_ready_step(frontier[g.rank(n.step)])))
      frontier[g.rank(n.step)] = n.step;
  std::vector<std::vector<uint32_t>> edges(g.nranks);
  for (uint32_t rk = 0; rk < g.nranks; ++rk) {
    StepId s = frontier[rk];
    if (s == kNoStep) continue;
    auto [ranks, why] = waits_for(g, status, partner, s, mode);
    edges[rk] = ranks;
    const NeverReady* n = g.never_ready_entry(s);
    out.ranks.push_back({rk, s, ranks, why, n ? n->cause : Loc{}});
  }
  // A wait-for cycle among the stuck ranks (depth-first search, colouring the ranks on the stack).
  std::vector<int> color(g.nranks, 0);
  for (uint32_t start = 0; start < g.nranks && out.cycle.empty(); ++start) {
    if (frontier[start] == kNoStep || color[start]) continue;
    std::vector<std::pair<uint32_t, size_t>> st{{start, 0}};
    color[start] = 1;
    while (!st.empty() && out.cycle.empty()) {
      auto& [u, k] = st.back();
      if (k < edges[u].size()) {
        uint32_t v = edges[u][k++];
        if (v >= g.nranks || frontier[v] == kNoStep) continue;
        if (color[v] == 1) {
          for (size_t i = 0; i < st.size(); ++i)
            if (st[i].first == v) {
              for (size_t j = i; j < st.size(); ++j) out.cycle.push_back(st[j].first);
              break;
            }
          out.cycle.push_back(v);
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
  std::set<uint32_t> done;
  for (uint32_t rk = 0; rk < g.nranks; ++rk)
    for (uint32_t v : edges[rk])
      if (v < g.nranks && frontier[v] == kNoStep) done.insert(v);
  out.awaited_finished.assign(done.begin(), done.end());
  return out;
}

}  // namespace sg

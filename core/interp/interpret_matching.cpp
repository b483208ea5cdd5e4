// The reference interpreter's MPI matching: messages delivered to a rank, posted receives taking
// them in MPI's order (non-overtaking, earliest posted receive first), deferred wildcard
// receives resolved one at a time (with the state fingerprint that prunes repeated states),
// and the size-mismatch text. Apart from the step semantics that post sends and receives;
// members of the Interp of interpret_impl.hpp.
#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/interp/interpret_impl.hpp"

namespace sg {

namespace interp_detail {

bool Interp::matches(StepId recv, const Msg& m) const {
  const P2PInfo& p = g_.p2p_info(recv);
  return p.comm == m.comm && (p.peer == kAnyRank || p.peer == m.src) && (p.tag == kAnyTag || p.tag == m.tag);
}

bool Interp::wildcard(StepId r) const { return g_.flags(r) & (kFlagAnySource | kFlagAnyTag); }
bool Interp::deferred(StepId r) const { return o_.choose && wildcard(r); }

void Interp::deliver(uint32_t dst, Msg m) {
  unexpected_[dst].push_back(std::move(m));
  progress(dst);
}

// MPI matching at one rank: a message goes to the earliest posted receive it matches, a
// receive takes the earliest message it matches. A deferred wildcard receive takes nothing
// until it is resolved, and holds back every message it could take from later receives.
void Interp::progress(uint32_t rank) {
  auto& posted = posted_[rank];
  auto& q = unexpected_[rank];
  bool again = true;
  while (again) {
    again = false;
    for (size_t i = 0; i < posted.size() && !again; ++i) {
      StepId r = posted[i];
      if (deferred(r)) continue;
      std::vector<uint32_t> blocked_src;  // sources whose first message for r is held back
      for (auto it = q.begin(); it != q.end(); ++it) {
        if (!matches(r, *it)) continue;
        if (std::find(blocked_src.begin(), blocked_src.end(), it->src) != blocked_src.end()) continue;
        // Non-overtaking: r may take only the first message of a source it matches; if an
        // earlier wildcard holds that one back, r takes nothing from that source yet.
        if (held_back(posted, i, *it)) {
          blocked_src.push_back(it->src);
          continue;
        }
        Msg m = std::move(*it);
        q.erase(it);
        posted.erase(posted.begin() + static_cast<std::ptrdiff_t>(i));
        finish_recv(r, m);
        again = true;
        break;
      }
    }
  }
}

// Whether an earlier posted deferred wildcard receive could take m (then m is not for us yet).
bool Interp::held_back(const std::deque<StepId>& posted, size_t before, const Msg& m) const {
  for (size_t j = 0; j < before; ++j)
    if (deferred(posted[j]) && matches(posted[j], m)) return true;
  return false;
}

// At a fixpoint: one pending deferred wildcard receive takes one of its eligible messages, the
// pair `choose` picks among all of them. Returns false when there is none.
bool Interp::choose_wildcard_sender() {
  std::vector<std::pair<StepId, StepId>> opts;  // (receive, send)
  std::vector<size_t> idx;                      // the message's place in its queue
  for (uint32_t rank = 0; rank < g_.nranks; ++rank) {
    auto& posted = posted_[rank];
    auto& q = unexpected_[rank];
    for (size_t i = 0; i < posted.size(); ++i) {
      StepId r = posted[i];
      if (!deferred(r)) continue;
      // Eligible: the earliest message from each source that r matches, not held back by an
      // earlier deferred receive.
      std::vector<uint32_t> seen_src;
      for (size_t k = 0; k < q.size(); ++k) {
        const Msg& m = q[k];
        if (!matches(r, m)) continue;
        if (std::find(seen_src.begin(), seen_src.end(), m.src) != seen_src.end()) continue;
        seen_src.push_back(m.src);  // only a source's first message for r is eligible
        if (held_back(posted, i, m)) continue;
        opts.emplace_back(r, m.send);
        idx.push_back(k);
      }
    }
  }
  if (opts.empty()) return false;
  if (opts.size() > 1 && o_.fresh_state) {
    auto [a, b] = fingerprint();
    if (!o_.fresh_state(a, b)) {
      pruned_ = true;
      return false;
    }
  }
  size_t pick = opts.size() == 1 ? 0 : o_.choose(opts);
  if (pick >= opts.size()) pick = 0;
  StepId best = opts[pick].first;
  uint32_t rank = g_.rank(best);
  auto& q = unexpected_[rank];
  Msg m = std::move(q[idx[pick]]);
  q.erase(q.begin() + static_cast<std::ptrdiff_t>(idx[pick]));
  auto& posted = posted_[rank];
  posted.erase(std::find(posted.begin(), posted.end(), best));
  finish_recv(best, m);
  progress(rank);
  return true;
}

// Two independent 64-bit hashes of everything the rest of the run depends on: step status,
// chunk values, queued messages (with their payloads) and posted receives, in order.
struct Interp::Fingerprint {
  uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
  void put(uint64_t x) {
    a = mix64(a ^ x);
    b = mix64(b + x * 0x9e3779b97f4a7c15ULL);
  }
  void put(const Value& v) {
    put(v.defined ? 0x5bd1e995u : 0x1b873593u);
    for (const Run& r : v.runs) {
      put((uint64_t{static_cast<uint8_t>(r.kind)} << 8) | static_cast<uint8_t>(r.mask));
      put((uint64_t{r.buf} << 32) | r.fixed);
      put((uint64_t{r.lo} << 32) | r.hi);
      put(r.count);
    }
    put(v.runs.size());
  }
};

std::pair<uint64_t, uint64_t> Interp::fingerprint() const {
  Fingerprint f;
  for (size_t i = 0; i < st_.size(); i += 8) {
    uint64_t w = 0;
    for (size_t k = i; k < i + 8 && k < st_.size(); ++k) w = (w << 8) | st_[k];
    f.put(w);
  }
  state_.fold_values([&](const Value& v) { f.put(v); });
  for (uint32_t r = 0; r < g_.nranks; ++r) {
    f.put(0xfeed0000u + r);
    for (StepId x : posted_[r]) f.put(x);
    f.put(0xbeef);
    for (const Msg& m : unexpected_[r]) {
      f.put(m.send);
      for (const Value& v : m.payload) f.put(v);
    }
  }
  // Choreographic payloads waiting for their receive: an unordered map, folded by a sum.
  uint64_t ia = 0, ib = 0;
  for (const auto& [r, vals] : inbox_) {
    Fingerprint e;
    e.put(r);
    for (const Value& v : vals) e.put(v);
    ia += e.a;
    ib += e.b;
  }
  f.put(ia);
  f.put(ib);
  return {f.a, f.b};
}

uint64_t Interp::mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void Interp::finish_recv(StepId r, const Msg& m) {
  // MPI matches by source, tag and communicator only: a wildcard (or a receive beside one,
  // whose pairs the match pass leaves open) can take a message of another size.
  if (g_.range_bytes(g_.range(r)) != g_.range_bytes(g_.range(m.send))) {
    Issue is = Issue::of_run(IssueKind::SizeMismatch, g_.rank(r), r, size_mismatch_text(g_, r, m.send));
    is.send = m.send;
    issues_.push_back(std::move(is));
  }
  apply(g_.rank(r), g_.range(r), m.payload, g_.flags(r) & kFlagReduce, r);
  partner_[r] = m.send;
  partner_[m.send] = r;
  complete(r);
  complete(m.send);  // under rendezvous a send completes when matched (no-op when eager)
  if (o_.mode == SendMode::Bounded) {
    // Its slot frees: the first send waiting beyond the slots gets it.
    auto& fifo = fifo_[connection(m.src, g_.p2p_info(m.send))];
    fifo.erase(std::find(fifo.begin(), fifo.end(), m.send));
    uint32_t slots = std::max<uint32_t>(1, g_.connection_slots);
    if (fifo.size() >= slots) complete(fifo[slots - 1]);
  }
}

}  // namespace interp_detail

std::string size_mismatch_text(const StepGraph& g, StepId recv, StepId send) {
  uint64_t rb = g.range_bytes(g.range(recv)), sb = g.range_bytes(g.range(send));
  const P2PInfo& p = g.p2p_info(recv);
  // Appended piece by piece: chains of operator+ on temporaries draw GCC 12's false -Wrestrict.
  std::string t = "message size mismatch: rank ";
  t += std::to_string(g.rank(recv));
  t += " receives ";
  t += std::to_string(rb);
  t += " bytes into ";
  t += g.range_name(g.range(recv));
  t += p.peer == kAnyRank ? " from any rank" : " from rank " + std::to_string(p.peer);
  t += p.tag == kAnyTag ? ", any tag," : " (tag " + std::to_string(p.tag) + ")";
  t += " and can take rank ";
  t += std::to_string(g.rank(send));
  t += "'s ";
  t += std::to_string(sb);
  t += " bytes from ";
  t += g.range_name(g.range(send));
  t += " (tag ";
  t += std::to_string(g.p2p_info(send).tag);
  t += sb > rb ? "): the message is truncated (MPI_ERR_TRUNCATE)" : "): part of the receive is never written";
  return t;
}

}  // namespace sg

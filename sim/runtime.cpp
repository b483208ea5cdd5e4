#include "sim/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/interp/interpret.hpp"

namespace sg::sim {

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::Eager: return "eager";
    case Protocol::Rendezvous: return "rendezvous";
    case Protocol::Auto: return "auto";
  }
  return "?";
}

LocalWork local_work(const StepGraph& g, const RuntimeOptions& o, StepId s) {
  auto bytes = [&] { return static_cast<double>(g.range_bytes(g.range(s))); };
  switch (g.kind(s)) {
    case StepKind::Copy: return {0, o.copy_bw > 0 ? bytes() / o.copy_bw : 0};
    case StepKind::Reduce: return {0, o.gamma * bytes()};
    case StepKind::Compute: return {g.compute(s).flops, 0};
    case StepKind::Recv: return {0, o.recv_overhead + ((g.flags(s) & kFlagReduce) ? o.gamma * bytes() : 0)};
    default: return {};
  }
}

Runtime::Runtime(const StepGraph& g, const RuntimeOptions& o, Timer& timer) : g_(g), o_(o), timer_(timer), n_(g.size()) {
  pending_.resize(n_);
  st_.assign(n_, 0);
  exact_ = o_.record_starts;
  if (exact_) {
    end_.assign(n_, std::numeric_limits<double>::quiet_NaN());
    start_.assign(n_, std::numeric_limits<double>::quiet_NaN());
    moved_.assign(n_, std::numeric_limits<double>::quiet_NaN());
    arrived_.assign(n_, std::numeric_limits<double>::quiet_NaN());
  } else {
    endf_.assign(n_, std::numeric_limits<float>::quiet_NaN());
  }
  rank_end_.assign(g_.nranks, 0.0);
  open_.assign(g_.nranks, Open{});
  busy_.assign(g_.nranks, Busy{});
  for (StepId s = 0; s < n_; ++s) {
    uint32_t count = g_.start_count(s);
    if (count >= kBigPending) big_pending_[s] = count;
    pending_[s] = static_cast<uint16_t>(std::min<uint32_t>(count, kBigPending));
  }
  succ_ = &g_.successor_view();  // the graph's shared view, built once
  coll_issued_.assign(g_.instances.size(), 0);
  coll_entry_.assign(g_.instances.size(), {std::numeric_limits<double>::quiet_NaN(), kNoStep});
  coll_first_.assign(g_.instances.size(), std::numeric_limits<double>::quiet_NaN());
}

void Runtime::start(double now, int64_t rank) {
  now_ = now;
  if (initial_off_.empty()) {
    // The steps with no dependency, by rank (counting sort): each rank's start is then its own.
    initial_off_.assign(g_.nranks + 1, 0);
    for (StepId s = 0; s < n_; ++s)
      if (pending_[s] == 0) ++initial_off_[g_.rank(s) + 1];
    for (uint32_t r = 0; r < g_.nranks; ++r) initial_off_[r + 1] += initial_off_[r];
    initial_.resize(initial_off_[g_.nranks]);
    std::vector<uint32_t> pos(initial_off_.begin(), initial_off_.end() - 1);
    for (StepId s = 0; s < n_; ++s)
      if (pending_[s] == 0) initial_[pos[g_.rank(s)]++] = s;
  }
  uint32_t lo = rank < 0 ? 0 : static_cast<uint32_t>(rank), hi = rank < 0 ? g_.nranks : lo + 1;
  for (uint32_t r = lo; r < hi; ++r)
    for (uint32_t i = initial_off_[r]; i < initial_off_[r + 1]; ++i)
      if (!(st_[initial_[i]] & kIssued)) work_.push_back(initial_[i]);
  drain();
}

uint32_t Runtime::window_of(StepId send) const {
  bool entry = false;
  const CallCost* c = g_.call_cost(send, entry);
  return c ? c->window : o_.window;
}

bool Runtime::take_slot(StepId send) {
  uint32_t w = window_of(send);
  if (w == 0) return true;
  Window& win = windows_[(uint64_t{g_.rank(send)} << 32) | dst_of(send)];
  if (win.in_flight >= w) {
    win.held.push_back(send);
    return false;
  }
  ++win.in_flight;
  return true;
}

// Called in the source's event (sent), so the next transfer is the source's business, as the
// engines require.
void Runtime::release_slot(StepId send) {
  if (window_of(send) == 0) return;
  auto it = windows_.find((uint64_t{g_.rank(send)} << 32) | dst_of(send));
  if (it == windows_.end() || it->second.in_flight == 0) return;
  Window& win = it->second;
  --win.in_flight;
  if (win.held.empty()) return;
  StepId next = win.held.front();
  win.held.pop_front();
  ++win.in_flight;
  start_transfer(next, false, true);
}

void Runtime::sent(StepId send, double now) {
  now_ = now;
  if (!(st_[send] & kSent)) release_slot(send);
  st_[send] |= kSent;
  if (st_[send] & kSendAtArrival) complete(send);  // rendezvous: the send ends with its data
  drain();
}

void Runtime::arrived(StepId send, double now) {
  now_ = now;
  st_[send] |= kArrived;
  if (o_.record_starts) arrived_[send] = now_;
  busy_end(g_.rank(send), 1);
  busy_end(g_.peer(send), 1);  // in flight for its receiver too
  moving(send, false);
  if (!g_.local(send)) {
    StepId r = g_.ref(send);
    st_[r] |= kArrived;
    if (st_[r] & kIssued) finish_recv(r);
  } else {
    StepId r = g_.match(send);
    if (r != kNoStep) {
      st_[r] |= kArrived;
      if (st_[r] & kIssued) finish_recv(r);
    } else {
      // Dynamic: a source's messages are matched in the order it sent them; one that
      // overtook an earlier one on the wire waits for it.
      Channel& ch = chan_[(uint64_t{g_.rank(send)} << 32) | g_.peer(send)];
      ch.arrived_early.push_back(send);
      bool progress = true;
      while (progress && !ch.issued.empty()) {
        progress = false;
        for (size_t i = 0; i < ch.arrived_early.size(); ++i) {
          if (ch.arrived_early[i] != ch.issued.front()) continue;
          StepId m = ch.issued.front();
          ch.issued.pop_front();
          ch.arrived_early.erase(ch.arrived_early.begin() + static_cast<std::ptrdiff_t>(i));
          deliver_dynamic(m);
          progress = true;
          break;
        }
      }
    }
  }
  drain();
}

void Runtime::done(StepId step, double now) {
  now_ = now;
  if (g_.kind(step) == StepKind::Compute) busy_end(g_.rank(step), 0);
  if (g_.kind(step) == StepKind::Collective) {  // a collective costed as a whole: its member's part is over
    busy_end(g_.rank(step), 1);
    in_flight(g_.rank(step), g_.stmt(step), false);
  }
  complete(step);
  drain();
}

// kind 0: compute, 1: communication; "either" (2) opens with the first of both and closes with
// the last.
void Runtime::busy_begin(uint32_t rank, int kind) {
  Open& o = open_[rank];
  if (kind == 0) count_exposed(rank);
  for (int k : {kind, 2})
    if (o.n[k]++ == 0) o.since[k] = now_;
}

// A message's data moving (from its start, or by rendezvous once its receive is posted too, to
// its arrival), for its sender and receiver: the time it moves while the rank computes nothing
// is exposed communication of its statement. (With record_starts, its start is kept too.)
void Runtime::moving(StepId send, bool begin) {
  if (begin && o_.record_starts) moved_[send] = now_;
  for (uint32_t rank : {g_.rank(send), g_.peer(send)}) in_flight(rank, g_.stmt(send), begin);
}

// One more (or one less) communication of statement `stmt` moving for `rank`.
void Runtime::in_flight(uint32_t rank, uint32_t stmt, bool begin) {
  Open& o = open_[rank];
  count_exposed(rank);
  auto it = std::find_if(o.in.begin(), o.in.end(), [&](const auto& e) { return e.first == stmt; });
  if (begin) {
    if (it == o.in.end()) o.in.push_back({stmt, 1});
    else ++it->second;
  } else if (it != o.in.end() && --it->second == 0) {
    *it = o.in.back();
    o.in.pop_back();
  }
}

void Runtime::count_exposed(uint32_t rank) {
  Open& o = open_[rank];
  double d = now_ - o.last;
  o.last = now_;
  if (d <= 0 || o.n[0] > 0 || o.in.empty()) return;
  std::vector<std::pair<uint32_t, double>>& x = busy_[rank].exposed;
  double share = d / static_cast<double>(o.in.size());
  for (const auto& in : o.in) {
    uint32_t stmt = in.first;  // (a plain variable: clang 14 cannot capture a structured binding)
    auto it = std::find_if(x.begin(), x.end(), [&](const auto& e) { return e.first == stmt; });
    if (it == x.end()) x.push_back({stmt, share});
    else it->second += share;
  }
}

void Runtime::busy_end(uint32_t rank, int kind) {
  Open& o = open_[rank];
  Busy& b = busy_[rank];
  if (kind == 0) count_exposed(rank);
  for (int k : {kind, 2}) {
    if (o.n[k] == 0 || --o.n[k] > 0) continue;
    double d = now_ - o.since[k];
    (k == 0 ? b.compute : k == 1 ? b.comm : b.either) += d;
  }
}

void Runtime::drain() {
  // Steps ready at the same instant are issued lowest id first (program order within a rank).
  while (!work_.empty()) {
    batch_.swap(work_);
    std::sort(batch_.begin(), batch_.end());
    for (StepId s : batch_) issue(s);
    batch_.clear();
  }
}

void Runtime::satisfy_successors(StepId s) {
  for (uint32_t i = succ_->off[s]; i < succ_->off[s + 1]; ++i) {
    StepId u = succ_->succ[i];
    if (pending_[u] == kBigPending) {
      auto it = big_pending_.find(u);
      if (--it->second > 0) continue;
      big_pending_.erase(it);
      pending_[u] = 0;
      work_.push_back(u);
      continue;
    }
    if (--pending_[u] == 0) work_.push_back(u);
  }
}

bool Runtime::rendezvous(StepId send) const { return by_rendezvous(o_, g_.range_bytes(g_.range(send))); }

void Runtime::start_transfer(StepId send, bool rendezvous, bool held) {
  uint64_t b = g_.range_bytes(g_.range(send));
  ++messages_;
  bytes_ += b;
  busy_begin(g_.rank(send), 1);
  busy_begin(g_.peer(send), 1);
  // A rendezvous message moves once its receive is posted too (whichever comes last).
  if (!rendezvous || (st_[g_.match(send)] & kIssued)) moving(send, true);
  uint64_t wire = wire_bytes(o_, b);
  bool entry = false;
  if (const CallCost* c = g_.call_cost(send, entry); c && c->wire != 1.0)  // a switch's share of the work (NVLS)
    wire = static_cast<uint64_t>(static_cast<double>(wire) * c->wire + 0.5);
  timer_.transfer(send, g_.rank(send), dst_of(send), wire, rendezvous, held);
}

void Runtime::issue(StepId s) {
  st_[s] |= kIssued;
  if (o_.record_starts) start_[s] = now_;
  // A dependency on a nonblocking operation is satisfied when it starts.
  if (g_.nonblocking(s)) satisfy_successors(s);
  uint32_t rank = g_.rank(s);
  switch (g_.kind(s)) {
    case StepKind::Send: {
      if (!g_.local(s)) {
        if (take_slot(s)) start_transfer(s, false);  // else it starts when a slot frees (release_slot)
        complete(s);                                 // buffered: its receive was posted from the start
        return;
      }
      StepId r = g_.match(s);
      if (r == kNoStep) {  // dynamic matching (or nothing matches it): eagerly
        chan_[(uint64_t{rank} << 32) | g_.peer(s)].issued.push_back(s);
        start_transfer(s, false);
        complete(s);
      } else if (!rendezvous(s)) {
        start_transfer(s, false);
        complete(s);
      } else {
        // The data moves when the receive is posted (the receiver tells the timer, see Recv);
        // the send completes when it has all left.
        st_[s] |= kSendAtArrival;
        start_transfer(s, true);
      }
      return;
    }
    case StepKind::Recv: {
      if (!g_.local(s)) {
        if (st_[s] & kArrived) finish_recv(s);
        return;
      }
      StepId m = g_.match(s);
      if (m == kNoStep) {
        post_dynamic(s);
        return;
      }
      if (rendezvous(m)) {
        timer_.posted(m);  // before or after the send: the timer pairs them
        if (st_[m] & kIssued) moving(m, true);
      }
      if (st_[s] & kArrived) finish_recv(s);
      return;
    }
    case StepKind::Copy: {
      double secs = local_work(g_, o_, s).seconds;
      if (secs > 0) timer_.local(s, rank, LocalKind::Copy, 0, secs);
      else complete(s);
      return;
    }
    case StepKind::Reduce: {
      double secs = local_work(g_, o_, s).seconds;
      if (secs > 0) timer_.local(s, rank, LocalKind::Reduce, 0, secs);
      else complete(s);
      return;
    }
    case StepKind::Compute: {
      double flops = local_work(g_, o_, s).flops;
      if (flops > 0) {
        busy_begin(rank, 0);
        timer_.local(s, rank, LocalKind::Compute, flops, 0);
      } else {
        complete(s);
      }
      return;
    }
    case StepKind::Wait: {
      for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) {
        if (!(st_[*h] & kCompleted)) {
          waiters_[*h].push_back(s);
          return;
        }
      }
      complete(s);
      return;
    }
    case StepKind::Collective: {
      // Left unexpanded: it completes when every member has issued it, or never when its members
      // disagree or one never issues it (a deadlock). Costed as a whole, each member's part ends
      // its own time after that, as communication of the collective's statement.
      uint32_t i = g_.coll(s).instance;
      const Instance& in = g_.instances[i];
      if (!in.complete || !in.consistent) return;
      if (coll_issued_[i] == 0) coll_first_[i] = now_;
      if (++coll_issued_[i] < in.steps_cnt) return;
      coll_entry_[i] = {now_, s};
      const CollectiveTimes* ct = o_.collective_times;
      bool timed = ct && ct->has(i);
      if (timed && ct->has_uses(i)) {  // the engine may share its ports with other traffic
        const StepId* m = g_.instance_steps.data() + in.steps_off;
        const double* t = ct->seconds.data() + ct->off[ct->table[i]];
        for (uint32_t k = 0; k < in.steps_cnt; ++k) {
          busy_begin(g_.rank(m[k]), 1);
          in_flight(g_.rank(m[k]), g_.stmt(m[k]), true);
        }
        if (timer_.collective(i, m, t, in.steps_cnt)) return;
        for (uint32_t k = 0; k < in.steps_cnt; ++k) timer_.hold(m[k], g_.rank(m[k]), t[k]);
        return;
      }
      for (uint32_t k = 0; k < in.steps_cnt; ++k) {
        StepId m = g_.instance_steps[in.steps_off + k];
        double t = timed ? ct->at(i, k) : 0;
        if (t > 0) {
          busy_begin(g_.rank(m), 1);
          in_flight(g_.rank(m), g_.stmt(m), true);
          timer_.hold(m, g_.rank(m), t);
        } else {
          complete(m);
        }
      }
      return;
    }
  }
}

void Runtime::finish_recv(StepId r) {
  double secs = local_work(g_, o_, r).seconds;
  if (secs > 0) timer_.local(r, g_.rank(r), LocalKind::Receive, 0, secs);
  else complete(r);
}

void Runtime::complete(StepId s) {
  if (st_[s] & kCompleted) return;
  st_[s] |= kCompleted;
  if (exact_) end_[s] = now_;
  else endf_[s] = static_cast<float>(now_);
  last_ = std::max(last_, now_);
  rank_end_[g_.rank(s)] = std::max(rank_end_[g_.rank(s)], now_);
  ++completed_;
  if (!g_.nonblocking(s)) satisfy_successors(s);
  if (waiters_.empty()) return;  // the common case: no wait blocked on anything (no hashing)
  auto it = waiters_.find(s);
  if (it == waiters_.end()) return;
  std::vector<StepId> ws = std::move(it->second);
  waiters_.erase(it);
  for (StepId w : ws) {
    bool all = true;
    for (const StepId* h = g_.handles_begin(w); h != g_.handles_end(w) && all; ++h) {
      if (!(st_[*h] & kCompleted)) {
        waiters_[*h].push_back(w);
        all = false;
      }
    }
    if (all) complete(w);
  }
}

bool Runtime::matches(StepId recv, StepId send) const {
  const P2PInfo& rp = g_.p2p_info(recv);
  const P2PInfo& sp = g_.p2p_info(send);
  return rp.comm == sp.comm && (rp.peer == kAnyRank || rp.peer == g_.rank(send)) && (rp.tag == kAnyTag || rp.tag == sp.tag);
}

void Runtime::match_dynamic(StepId recv, StepId send) {
  dyn_partner_[recv] = send;
  dyn_partner_[send] = recv;
  st_[recv] |= kArrived;
  finish_recv(recv);
}

void Runtime::post_dynamic(StepId recv) {
  Dest& d = dest_[g_.rank(recv)];
  for (auto it = d.unexpected.begin(); it != d.unexpected.end(); ++it) {
    if (!matches(recv, *it)) continue;
    StepId m = *it;
    d.unexpected.erase(it);
    match_dynamic(recv, m);
    return;
  }
  d.posted.push_back(recv);
}

void Runtime::deliver_dynamic(StepId send) {
  Dest& d = dest_[g_.peer(send)];
  for (auto it = d.posted.begin(); it != d.posted.end(); ++it) {
    if (!matches(*it, send)) continue;
    StepId r = *it;
    d.posted.erase(it);
    match_dynamic(r, send);
    return;
  }
  d.unexpected.push_back(send);
}

StepId Runtime::partner(StepId s) const {
  if (g_.kind(s) != StepKind::Send && g_.kind(s) != StepKind::Recv) return kNoStep;
  if (!g_.local(s)) return (st_[s] & kCompleted) || (st_[g_.ref(s)] & kArrived) ? g_.ref(s) : kNoStep;
  StepId m = g_.match(s);
  if (m != kNoStep) return (st_[m] & kIssued) && (st_[s] & kIssued) ? m : kNoStep;
  auto it = dyn_partner_.find(s);
  return it == dyn_partner_.end() ? kNoStep : it->second;
}

std::vector<uint8_t> Runtime::status() const {
  std::vector<uint8_t> out(n_);
  for (StepId s = 0; s < n_; ++s)
    out[s] = static_cast<uint8_t>(((st_[s] & kIssued) ? kStepIssued : 0) | ((st_[s] & kCompleted) ? kStepCompleted : 0));
  return out;
}

}  // namespace sg::sim

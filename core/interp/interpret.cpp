#include "core/interp/interpret.hpp"

#include "core/base/checked.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/interp/stuck.hpp"

namespace sg {

const char* issue_name(IssueKind k) {
  switch (k) {
    case IssueKind::UndefinedRead: return "undefined-read";
    case IssueKind::BadOperand: return "bad-operand";
    case IssueKind::Stuck: return "stuck";
    case IssueKind::Unmatched: return "unmatched";
    case IssueKind::SizeMismatch: return "size-mismatch";
    case IssueKind::Lifecycle: return "lifecycle";
    case IssueKind::Missing: return "missing";
    case IssueKind::Duplicate: return "duplicate";
    case IssueKind::Foreign: return "foreign";
    case IssueKind::Stale: return "stale";
    case IssueKind::Undefined: return "undefined";
  }
  return "?";
}

MachineState::MachineState(const StepGraph& g) {
  bufs_.resize(g.buffers.size());
  chunks_.resize(g.buffers.size());
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    chunks_[b] = g.buffers[b].chunks;
    bufs_[b].resize(uint64_t{g.nranks} * g.buffers[b].chunks);
  }
}

void MachineState::apply_inits(const StepGraph& g) {
  for (const InitRule& r : g.inits) {
    const Range& rg = r.range;
    switch (r.kind) {
      case InitKind::Contrib: {
        const GroupInfo& gr = g.groups[r.group];
        for (uint32_t k = 0; k < gr.count; ++k)
          for (uint32_t c = rg.lo; c < rg.lo + rg.cnt; ++c) at(gr.member(k), rg.buf, c).v = Value::contrib(rg.buf, gr.member(k), c);
        break;
      }
      case InitKind::Owned: {
        const GroupInfo& gr = g.groups[r.group];
        uint32_t per = rg.cnt / gr.count;
        for (uint32_t k = 0; k < gr.count; ++k)
          for (uint32_t c = rg.lo + k * per; c < rg.lo + (k + 1) * per; ++c) at(gr.member(k), rg.buf, c).v = Value::item(rg.buf, c);
        break;
      }
      case InitKind::OnRank:
        for (uint32_t c = rg.lo; c < rg.lo + rg.cnt; ++c) at(r.rank, rg.buf, c).v = Value::item(rg.buf, c);
        break;
    }
  }
}

namespace {

enum : uint8_t { kReleased = 1, kCompleted = 2, kDepsReady = 4, kArrived = 8, kIssued = 16 };

struct Msg {
  StepId send;
  uint32_t src;
  int32_t tag;
  uint32_t comm;
  std::vector<Value> payload;
};

class Interp {
 public:
  Interp(const StepGraph& g, const InterpOptions& o) : g_(g), o_(o), n_(g.size()) {}

  InterpResult run() {
    InterpResult res;
    res.initial = MachineState(g_);
    res.initial.apply_inits(g_);
    state_ = res.initial;
    for (const Run& a : o_.follow) {
      Trail t;
      t.atom = a;
      trails_.push_back(std::move(t));
      holders_.emplace_back();
    }
    // Where each followed atom starts: the chunks its initial values put it in.
    for (size_t i = 0; i < trails_.size(); ++i)
      for (uint32_t b = 0; b < g_.buffers.size(); ++b)
        for (uint32_t r = 0; r < g_.nranks; ++r)
          for (uint32_t k = 0; k < g_.buffers[b].chunks; ++k)
            if (holds(state_.at(r, b, k).v, trails_[i].atom)) holders_[i][loc_key(r, b, k)] = Holder{kNoStep, false};
    pending_.resize(n_);
    st_.assign(n_, 0);
    for (StepId s = 0; s < n_; ++s) pending_[s] = g_.start_count(s);
    succ_ = &g_.successor_view();  // the graph's shared view, built once
    arrived_.assign(g_.instances.size(), 0);
    posted_.resize(g_.nranks);
    unexpected_.resize(g_.nranks);
    partner_.assign(n_, kNoStep);
    for (StepId s = 0; s < n_; ++s)
      if (pending_[s] == 0) heap_.push(s);
    bool timed = o_.deadline != std::chrono::steady_clock::time_point::max();
    uint32_t tick = 0;
    for (;;) {
      while (!heap_.empty()) {
        StepId s = heap_.top();
        heap_.pop();
        st_[s] |= kDepsReady;
        step(s);
        if (timed && (++tick & 4095) == 0 && std::chrono::steady_clock::now() >= o_.deadline) {
          res.interrupted = true;
          res.executed = completed_;
          return res;
        }
      }
      // Nothing else can run: resolve one deferred wildcard receive, then go on.
      if (!o_.choose || !resolve_wildcard()) break;
    }
    if (pruned_) {
      res.pruned = true;
      res.executed = completed_;
      res.issues = std::move(issues_);
      return res;
    }
    res.executed = completed_;
    res.completed = completed_ == n_;
    res.status.resize(n_);
    for (StepId s = 0; s < n_; ++s)
      res.status[s] = static_cast<uint8_t>(((st_[s] & kIssued) ? kStepIssued : 0) | ((st_[s] & kCompleted) ? kStepCompleted : 0));
    if (!res.completed && o_.report_stuck) {
      for (const StuckRank& sr : analyze_stuck(g_, res.status, partner_, o_.mode).ranks) {
        if (issues_.size() >= 16) break;
        Issue is;
        is.kind = IssueKind::Stuck;
        is.rank = sr.rank;
        is.step = sr.step;
        is.text = "rank " + std::to_string(sr.rank) + " is stuck at " + step_kind_name(g_.kind(sr.step)) + " #" + std::to_string(sr.step) +
                  ": it " + sr.why;
        issues_.push_back(is);
      }
    }
    for (uint32_t r = 0; r < g_.nranks; ++r)
      for (const Msg& m : unexpected_[r]) res.pending_messages.push_back(m.send);
    res.partner = std::move(partner_);
    for (uint32_t r = 0; r < g_.nranks; ++r)
      for (const Msg& m : unexpected_[r]) {
        Issue is;
        is.kind = IssueKind::Unmatched;
        is.rank = m.src;
        is.step = m.send;
        is.text = "rank " + std::to_string(m.src) + " sends " + g_.range_name(g_.range(m.send)) + " to rank " + std::to_string(r) +
                  " (tag " + std::to_string(m.tag) + ") and no receive takes it";
        issues_.push_back(is);
      }
    for (StepId s = 0; s < n_; ++s) {
      if (g_.nonblocking(s) && (st_[s] & kReleased) && !waited_.count(s)) {
        Issue is;
        is.kind = IssueKind::Lifecycle;
        is.rank = g_.rank(s);
        is.step = s;
        is.text = std::string("rank ") + std::to_string(g_.rank(s)) + ": " + (g_.kind(s) == StepKind::Send ? "isend" : "irecv") + " of " +
                  g_.range_name(g_.range(s)) + " is never waited for";
        issues_.push_back(is);
      }
    }
    res.issues = std::move(issues_);
    res.final = std::move(state_);
    res.tile_steps = std::move(tile_steps_);
    for (size_t i = 0; i < trails_.size(); ++i) {
      for (const auto& [key, h] : holders_[i]) {
        (void)h;
        trails_[i].ends.emplace_back(static_cast<uint32_t>(key >> 40), static_cast<uint32_t>((key >> 28) & 0xfff),
                                     static_cast<uint32_t>(key & 0xfffffff));
      }
      std::sort(trails_[i].ends.begin(), trails_[i].ends.end());
    }
    res.trails = std::move(trails_);
    return res;
  }

 private:
  // ---------------------------------------------------------------- bookkeeping
  void release(StepId s) {
    if (st_[s] & kReleased) return;
    st_[s] |= kReleased;
    for (uint32_t i = succ_->off[s]; i < succ_->off[s + 1]; ++i) {
      StepId t = succ_->succ[i];
      if (--pending_[t] == 0) heap_.push(t);
    }
  }
  void complete(StepId s) {
    if (st_[s] & kCompleted) return;
    st_[s] |= kCompleted;
    ++completed_;
    release(s);
    auto it = waiters_.find(s);
    if (it != waiters_.end()) {
      std::vector<StepId> ws = std::move(it->second);
      waiters_.erase(it);
      for (StepId w : ws) step(w);
    }
  }

  // ---------------------------------------------------------------- trails (InterpOptions::follow)
  struct Holder {
    StepId brought = kNoStep;
    bool read = false;
  };
  // (rank, buf, chunk) in one word: 24, 12 and 28 bits (a check never holds more).
  static uint64_t loc_key(uint32_t rank, uint32_t buf, uint32_t chunk) { return (uint64_t{rank} << 40) | (uint64_t{buf} << 28) | chunk; }
  static bool holds(const Value& v, const Run& a) {
    for (const Run& r : v.runs)
      if (r.same_family(a) && r.lo <= a.lo && a.lo < r.hi) return true;
    return false;
  }
  void trail_read(uint32_t rank, uint32_t buf, uint32_t chunk) {
    for (auto& h : holders_) {
      auto it = h.find(loc_key(rank, buf, chunk));
      if (it != h.end()) it->second.read = true;
    }
  }
  // Before a chunk's value changes from `before` to `after` by step `by`.
  // `added`: what a reduction adds (null for a plain write).
  void trail_write(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& before, const Value& after, StepId by, const Value* added) {
    for (size_t i = 0; i < trails_.size(); ++i) {
      const Run& a = trails_[i].atom;
      bool had = holds(before, a), has = holds(after, a);
      uint64_t key = loc_key(rank, buf, chunk);
      auto& h = holders_[i];
      if (had && !has) {
        auto it = h.find(key);
        if (it != h.end() && !it->second.read)
          trails_[i].events.push_back({TrailEvent::Lost, by, rank, buf, chunk, it->second.brought, false});
        if (it != h.end()) h.erase(it);
      }
      // A write that puts it there, or a reduction that adds it (again, when it was there).
      bool adds = added ? holds(*added, a) : has;
      if (adds) {
        trails_[i].events.push_back({TrailEvent::Arrive, by, rank, buf, chunk, kNoStep, had});
        h[key] = Holder{by, false};
      }
    }
  }

  const Value& read(uint32_t rank, uint32_t buf, uint32_t chunk, StepId by) {
    if (!trails_.empty()) trail_read(rank, buf, chunk);
    ChunkSlot& c = state_.at(rank, buf, chunk);
    if (!c.v.defined && c.writer == kNoStep && c.v.runs.empty()) {
      if (g_.buffers[buf].accumulator) {
        c.v = Value::empty();  // an accumulator starts empty
        return c.v;
      }
      uint64_t key = (uint64_t{rank} << 32) ^ (uint64_t{buf} << 24) ^ chunk;
      if (undefined_seen_.insert(key).second && undef_reported_ < 32) {
        ++undef_reported_;
        Issue is;
        is.kind = IssueKind::UndefinedRead;
        is.rank = rank;
        is.buf = buf;
        is.chunk = chunk;
        is.step = by;
        is.text = std::string(step_kind_name(g_.kind(by))) + " on rank " + std::to_string(rank) + " reads " + g_.chunk_name(buf, chunk) +
                  ", which was never written";
        issues_.push_back(is);
      }
    }
    return c.v;
  }
  std::vector<Value> read_range(uint32_t rank, const Range& r, StepId by) {
    std::vector<Value> out;
    out.reserve(r.cnt);
    for (uint32_t k = 0; k < r.cnt; ++k) out.push_back(read(rank, r.buf, r.lo + k, by));
    return out;
  }
  void write(uint32_t rank, uint32_t buf, uint32_t chunk, Value v, StepId by) {
    ChunkSlot& c = state_.at(rank, buf, chunk);
    if (!trails_.empty()) trail_write(rank, buf, chunk, c.v, v, by, nullptr);
    c.v = std::move(v);
    c.writer = by;
  }
  void reduce_into(uint32_t rank, uint32_t buf, uint32_t chunk, const Value& v, StepId by) {
    read(rank, buf, chunk, by);
    ChunkSlot& c = state_.at(rank, buf, chunk);
    if (!trails_.empty()) {
      Value before = c.v;
      add_into(c.v, v);
      trail_write(rank, buf, chunk, before, c.v, by, &v);
    } else {
      add_into(c.v, v);
    }
    c.writer = by;
  }
  void apply(uint32_t rank, const Range& dst, const std::vector<Value>& payload, bool reduce, StepId by) {
    for (uint32_t k = 0; k < dst.cnt && k < payload.size(); ++k) {
      if (reduce) reduce_into(rank, dst.buf, dst.lo + k, payload[k], by);
      else write(rank, dst.buf, dst.lo + k, payload[k], by);
    }
  }

  // ---------------------------------------------------------------- steps
  void step(StepId s) {
    if (st_[s] & kCompleted) return;
    uint32_t rank = g_.rank(s);
    switch (g_.kind(s)) {
      case StepKind::Send: {
        if (st_[s] & kIssued) return;
        st_[s] |= kIssued;
        std::vector<Value> payload = read_range(rank, g_.range(s), s);
        if (!g_.local(s)) {
          StepId r = g_.ref(s);
          inbox_[r] = std::move(payload);
          complete(s);  // its receive is posted from the start
          if ((st_[r] & kDepsReady) && !(st_[r] & kCompleted)) step(r);
        } else {
          const P2PInfo& p = g_.p2p_info(s);
          Msg m{s, rank, p.tag, p.comm, std::move(payload)};
          if (o_.mode == SendMode::Bounded) {
            // Its connection's FIFO: the send completes once its message holds a slot.
            auto& fifo = fifo_[connection(rank, p)];
            fifo.push_back(s);
            if (fifo.size() <= std::max<uint32_t>(1, g_.connection_slots)) complete(s);
            else if (g_.nonblocking(s)) release(s);
          } else if (o_.mode == SendMode::Eager) {
            complete(s);  // the message is buffered
          } else if (g_.nonblocking(s)) {
            release(s);  // an isend has started; it completes when matched
          }
          deliver(p.peer, std::move(m));
        }
        break;
      }
      case StepKind::Recv: {
        st_[s] |= kIssued;
        if (!g_.local(s)) {
          auto it = inbox_.find(s);
          if (it == inbox_.end()) return;  // the send has not run yet: it will wake us
          apply(rank, g_.range(s), it->second, g_.flags(s) & kFlagReduce, s);
          inbox_.erase(it);
          partner_[s] = g_.ref(s);
          partner_[g_.ref(s)] = s;
          complete(s);
          break;
        }
        if (st_[s] & kArrived) return;  // already posted
        st_[s] |= kArrived;
        if (g_.nonblocking(s)) release(s);  // an irecv has started
        posted_[rank].push_back(s);
        progress(rank);
        break;
      }
      case StepKind::Copy:
      case StepKind::Reduce: {
        st_[s] |= kIssued;
        Range src = g_.copy_source(s), dst = g_.range(s);
        std::vector<Value> vals = read_range(rank, src, s);
        apply(rank, dst, vals, g_.kind(s) == StepKind::Reduce, s);
        complete(s);
        break;
      }
      case StepKind::Compute:
        st_[s] |= kIssued;
        compute(s);
        complete(s);
        break;
      case StepKind::Collective: {
        st_[s] |= kIssued;
        const CollInfo& c = g_.coll(s);
        if (!(st_[s] & kArrived)) {
          st_[s] |= kArrived;
          ++arrived_[c.instance];
        }
        const Instance& in = g_.instances[c.instance];
        const GroupInfo& gr = g_.groups[in.group];
        if (in.complete && in.consistent && arrived_[c.instance] == gr.count) run_collective(in);
        break;
      }
      case StepKind::Wait: {
        st_[s] |= kIssued;
        for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) {
          if (!(st_[*h] & kCompleted)) {
            waiters_[*h].push_back(s);
            return;
          }
        }
        for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) waited_.insert(*h);
        complete(s);
        break;
      }
    }
  }

  bool matches(StepId recv, const Msg& m) const {
    const P2PInfo& p = g_.p2p_info(recv);
    return p.comm == m.comm && (p.peer == kAnyRank || p.peer == m.src) && (p.tag == kAnyTag || p.tag == m.tag);
  }

  bool wildcard(StepId r) const { return g_.flags(r) & (kFlagAnySource | kFlagAnyTag); }
  bool deferred(StepId r) const { return o_.choose && wildcard(r); }

  void deliver(uint32_t dst, Msg m) {
    unexpected_[dst].push_back(std::move(m));
    progress(dst);
  }

  // MPI matching at one rank: a message goes to the earliest posted receive it matches, a
  // receive takes the earliest message it matches. A deferred wildcard receive takes nothing
  // until it is resolved, and holds back every message it could take from later receives.
  void progress(uint32_t rank) {
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
  bool held_back(const std::deque<StepId>& posted, size_t before, const Msg& m) const {
    for (size_t j = 0; j < before; ++j)
      if (deferred(posted[j]) && matches(posted[j], m)) return true;
    return false;
  }

  // At a fixpoint: one pending deferred wildcard receive takes one of its eligible messages, the
  // pair `choose` picks among all of them. Returns false when there is none.
  bool resolve_wildcard() {
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
  struct Fingerprint {
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

  std::pair<uint64_t, uint64_t> fingerprint() const {
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

  static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  void finish_recv(StepId r, const Msg& m) {
    // MPI matches by source, tag and communicator only: a wildcard (or a receive beside one,
    // whose pairs the match pass leaves open) can take a message of another size.
    if (g_.range_bytes(g_.range(r)) != g_.range_bytes(g_.range(m.send))) {
      Issue is;
      is.kind = IssueKind::SizeMismatch;
      is.rank = g_.rank(r);
      is.step = r;
      is.send = m.send;
      is.text = size_mismatch_text(g_, r, m.send);
      issues_.push_back(is);
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
  // A connection: source, destination, tag and communicator.
  static std::tuple<uint32_t, uint32_t, int32_t, uint32_t> connection(uint32_t src, const P2PInfo& p) {
    return {src, p.peer, p.tag, p.comm};
  }

  void compute(StepId s) {
    const ComputeInfo& c = g_.compute(s);
    uint32_t rank = g_.rank(s);
    const Range* rd = g_.ranges.data() + c.reads_off;
    const Range* wr = g_.ranges.data() + c.writes_off;
    if (c.kind == ComputeKind::Generic) {
      for (uint32_t i = 0; i < c.reads_cnt; ++i)
        for (uint32_t k = 0; k < rd[i].cnt; ++k) read(rank, rd[i].buf, rd[i].lo + k, s);
      for (uint32_t i = 0; i < c.writes_cnt; ++i)
        for (uint32_t k = 0; k < wr[i].cnt; ++k) write(rank, wr[i].buf, wr[i].lo + k, Value::contrib(wr[i].buf, rank, wr[i].lo + k), s);
      return;
    }
    // attn / attn_bwd: reads Q, KV (and the accumulators), writes O (dQ, dKV). An operand is
    // judged by the item it holds, not by the buffer it sits in: kv(m) rotated through a double
    // buffer (`copy KV[m] into cur[0]`, then `send cur[0]`) is still kv(m), and the tile's atoms
    // name the items' own buffers.
    const Range& q = rd[0];
    const Range& kv = rd[1];
    const Value& kvv = read(rank, kv.buf, kv.lo, s);
    uint32_t kv_home = 0;
    int64_t m = kvv.single_item_any(kv_home);
    if (m < 0) {
      bad_operand(s, rank, kv.buf, kv.lo, c.split_kv ? "K" : "KV", kvv, c.split_kv ? "a single k(m)" : "a single kv(m)");
      return;
    }
    uint32_t v_home = 0;
    if (c.split_kv) {  // V apart: it must hold the same item as K (v(m) beside k(m))
      const Range& vr = rd[c.reads_cnt - 1];
      const Value& vv = read(rank, vr.buf, vr.lo, s);
      if (vv.single_item_any(v_home) != m) {
        std::string want = "v(" + std::to_string(m) + "), the item K holds";
        bad_operand(s, rank, vr.buf, vr.lo, "V", vv, want.c_str());
        return;
      }
    }
    for (uint32_t k = 0; k < q.cnt; ++k) {
      const Value& qv = read(rank, q.buf, q.lo + k, s);
      uint32_t q_home = 0;
      int64_t i = qv.single_item_any(q_home);
      if (i < 0) {
        bad_operand(s, rank, q.buf, q.lo + k, "Q", qv, "a single q(i)");
        continue;
      }
      // attn adds A(i, m) to O[i]; attn_bwd adds Gq(i, m) to dQ[i] and Gkv(m, i) to dKV[j].
      // Each tile's atom is remembered with its step (the culprit of a foreign term).
      auto add = [&](AtomKind kind, uint32_t home, int64_t fixed, int64_t partner, const Range& into, uint32_t chunk) {
        Value v;
        v.defined = true;
        v.runs.push_back(
            Run{kind, c.mask, home, static_cast<uint32_t>(fixed), static_cast<uint32_t>(partner), static_cast<uint32_t>(partner + 1), 1});
        tile_steps_[tile_key(v.runs[0], v.runs[0].lo)] = s;
        reduce_into(rank, into.buf, chunk, v, s);
      };
      add(c.kind == ComputeKind::Attn ? AtomKind::Attn : AtomKind::GradQ, q_home, i, m, wr[0], wr[0].lo + k);
      if (c.kind == ComputeKind::AttnBwd) {
        add(AtomKind::GradKV, kv_home, m, i, wr[1], wr[1].lo);
        // dV: the V half of the same gradient, an atom of v(m)'s own buffer (so dK's partials
        // landing in dV are a wrong result, not the same terms).
        if (c.split_kv) add(AtomKind::GradV, v_home, m, i, wr[2], wr[2].lo);
      }
    }
  }

  void bad_operand(StepId s, uint32_t rank, uint32_t buf, uint32_t chunk, const char* what, const Value& v, const char* want) {
    Issue is;
    is.kind = IssueKind::BadOperand;
    is.rank = rank;
    is.buf = buf;
    is.chunk = chunk;
    is.step = s;
    is.text = std::string("attention tile on rank ") + std::to_string(rank) + ": operand " + what + " = " + g_.chunk_name(buf, chunk) +
              " holds " + describe_value(v, g_, buf) + ", not " + want;
    issues_.push_back(is);
  }

  void run_collective(const Instance& in) {
    const GroupInfo& gr = g_.groups[in.group];
    const StepId* steps = g_.instance_steps.data() + in.steps_off;
    uint32_t gsz = gr.count;
    const CollInfo& c0 = g_.coll(steps[0]);
    uint32_t cnt = g_.range(steps[0]).cnt;
    // Snapshot every member's input first: the collective reads before it writes.
    std::vector<std::vector<Value>> in_vals(gsz);
    for (uint32_t j = 0; j < gsz; ++j) {
      StepId s = steps[j];
      std::vector<Range> rd;
      g_.reads(s, rd);
      Range r = g_.range(s);
      in_vals[j].resize(cnt);
      for (const Range& x : rd)
        for (uint32_t k = 0; k < x.cnt; ++k) in_vals[j][x.lo - r.lo + k] = read(g_.rank(s), x.buf, x.lo + k, s);
    }
    uint32_t blk = gsz ? cnt / gsz : 0;
    auto out_range = [&](uint32_t j) {
      const CollInfo& c = g_.coll(steps[j]);
      return c.kind == CollKind::Alltoall && c.into.cnt ? c.into : g_.range(steps[j]);
    };
    auto put = [&](uint32_t j, uint32_t k, const Value& v) {
      Range o = out_range(j);
      write(g_.rank(steps[j]), o.buf, o.lo + k, v, steps[j]);
    };
    auto sum = [&](uint32_t k) {
      Value acc = in_vals[0][k];
      for (uint32_t m = 1; m < gsz; ++m) add_into(acc, in_vals[m][k]);
      return acc;
    };
    int64_t root = gr.index_of(c0.root);
    switch (c0.kind) {
      case CollKind::Barrier: break;
      case CollKind::Allreduce:
        for (uint32_t k = 0; k < cnt; ++k) {
          Value v = sum(k);
          for (uint32_t j = 0; j < gsz; ++j) put(j, k, v);
        }
        break;
      case CollKind::Bcast:
        for (uint32_t j = 0; j < gsz; ++j)
          if (static_cast<int64_t>(j) != root)
            for (uint32_t k = 0; k < cnt; ++k) put(j, k, in_vals[static_cast<size_t>(root)][k]);
        break;
      case CollKind::Reduce:
        for (uint32_t k = 0; k < cnt; ++k) put(static_cast<uint32_t>(root), k, sum(k));
        break;
      case CollKind::Allgather:
        for (uint32_t j = 0; j < gsz; ++j)
          for (uint32_t src = 0; src < gsz; ++src)
            if (src != j)
              for (uint32_t k = 0; k < blk; ++k) put(j, src * blk + k, in_vals[src][src * blk + k]);
        break;
      case CollKind::ReduceScatter:
        for (uint32_t j = 0; j < gsz; ++j)
          for (uint32_t k = 0; k < blk; ++k) put(j, j * blk + k, sum(j * blk + k));
        break;
      case CollKind::Alltoall:
        for (uint32_t j = 0; j < gsz; ++j)
          for (uint32_t src = 0; src < gsz; ++src)
            for (uint32_t k = 0; k < blk; ++k) put(j, src * blk + k, in_vals[src][j * blk + k]);
        break;
    }
    for (uint32_t j = 0; j < gsz; ++j) complete(steps[j]);
  }

  const StepGraph& g_;
  const InterpOptions& o_;
  size_t n_;
  MachineState state_;
  std::vector<StepId> partner_;
  std::vector<uint32_t> pending_;
  std::vector<uint8_t> st_;
  const StepGraph::Successors* succ_ = nullptr;
  std::priority_queue<StepId, std::vector<StepId>, std::greater<StepId>> heap_;
  std::unordered_map<StepId, std::vector<Value>> inbox_;
  std::vector<std::deque<StepId>> posted_;
  std::vector<std::deque<Msg>> unexpected_;
  // Bounded sends: per connection, the sends whose messages are not received yet, in order.
  std::map<std::tuple<uint32_t, uint32_t, int32_t, uint32_t>, std::deque<StepId>> fifo_;
  std::vector<uint32_t> arrived_;
  std::unordered_map<StepId, std::vector<StepId>> waiters_;
  std::unordered_set<StepId> waited_;
  std::unordered_set<uint64_t> undefined_seen_;
  int undef_reported_ = 0;
  uint64_t completed_ = 0;
  bool pruned_ = false;
  std::vector<Issue> issues_;
  std::unordered_map<uint64_t, StepId> tile_steps_;            // attention atom -> the tile step that made it
  std::vector<Trail> trails_;                                  // InterpOptions::follow
  std::vector<std::unordered_map<uint64_t, Holder>> holders_;  // per trail: the chunks holding its atom
};

}  // namespace

InterpResult interpret(const StepGraph& g, const InterpOptions& opts) { return Interp(g, opts).run(); }

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

namespace {
// initial + final + working state, with one run per value on average
constexpr uint64_t kInterpBytesPerChunk = 3 * (sizeof(ChunkSlot) + sizeof(Run));
}  // namespace

uint64_t interpreter_bytes(const StepGraph& g) {
  uint64_t chunks = 0;
  for (const auto& b : g.buffers) chunks += b.chunks;
  return sat_add(sat_mul(sat_mul(chunks, g.nranks), kInterpBytesPerChunk), sat_add(uint64_t{g.size()} * 24, g.dep_total() * 4));
}

uint64_t interpreter_bytes(const SizeEstimate& e, uint32_t nranks) {
  // Before the graph exists: two dependencies per step, as the library's schedules have at most.
  return sat_add(sat_mul(sat_mul(e.chunks, nranks), kInterpBytesPerChunk), sat_mul(e.steps, 24 + 2 * 4));
}

}  // namespace sg

namespace sg {

uint64_t tile_key(const Run& f, uint32_t at) {
  // A mix of the atom's fields (not a packing: buffers, items and blocks are unbounded).
  uint64_t x = (uint64_t{static_cast<uint8_t>(f.kind)} << 56) ^ (uint64_t{static_cast<uint8_t>(f.mask)} << 48) ^ f.buf;
  for (uint64_t v : {uint64_t{f.fixed}, uint64_t{at}}) {
    x ^= v + 0x9e3779b97f4a7c15ULL + (x << 6) + (x >> 2);
    x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
  }
  return x;
}

StepId tile_culprit(const InterpResult& r, const Issue& is) {
  for (const Run& e : is.extra) {
    if (e.kind != AtomKind::Attn && e.kind != AtomKind::GradQ && e.kind != AtomKind::GradKV && e.kind != AtomKind::GradV) continue;
    for (uint32_t at = e.lo; at < e.hi; ++at) {
      auto it = r.tile_steps.find(tile_key(e, at));
      if (it != r.tile_steps.end()) return it->second;
    }
  }
  return kNoStep;
}

}  // namespace sg

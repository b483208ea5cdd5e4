// The reference interpreter's entry and driver: the public functions of interpret.hpp (the
// machine's initial state, interpret(), the memory estimate, the tile lookup) and Interp's run
// loop with its end-of-run report. What each step does and how messages match are apart, in
// interpret_steps.cpp and interpret_matching.cpp (members of the Interp of interpret_impl.hpp).
#include "core/interp/interpret.hpp"

#include "core/base/checked.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/interp/interpret_impl.hpp"
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

namespace interp_detail {

InterpResult Interp::run() {
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
    if (!o_.choose || !choose_wildcard_sender()) break;
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
      issues_.push_back(Issue::of_run(IssueKind::Stuck, sr.rank, sr.step,
                                      "rank " + std::to_string(sr.rank) + " is stuck at " + step_kind_name(g_.kind(sr.step)) + " #" +
                                          std::to_string(sr.step) + ": it " + sr.why));
    }
  }
  for (uint32_t r = 0; r < g_.nranks; ++r)
    for (const Msg& m : unexpected_[r]) res.pending_messages.push_back(m.send);
  res.partner = std::move(partner_);
  for (uint32_t r = 0; r < g_.nranks; ++r)
    for (const Msg& m : unexpected_[r]) {
      issues_.push_back(Issue::of_run(IssueKind::Unmatched, m.src, m.send,
                                      "rank " + std::to_string(m.src) + " sends " + g_.range_name(g_.range(m.send)) + " to rank " +
                                          std::to_string(r) + " (tag " + std::to_string(m.tag) + ") and no receive takes it"));
    }
  for (StepId s = 0; s < n_; ++s) {
    if (g_.nonblocking(s) && (st_[s] & kReleased) && !waited_.count(s)) {
      issues_.push_back(Issue::of_run(IssueKind::Lifecycle, g_.rank(s), s,
                                      std::string("rank ") + std::to_string(g_.rank(s)) + ": " +
                                          (g_.kind(s) == StepKind::Send ? "isend" : "irecv") + " of " + g_.range_name(g_.range(s)) +
                                          " is never waited for"));
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

}  // namespace interp_detail

InterpResult interpret(const StepGraph& g, const InterpOptions& opts) { return interp_detail::Interp(g, opts).run(); }

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

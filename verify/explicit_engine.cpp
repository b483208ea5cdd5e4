// The explicit engine: runs the step graph (the reference interpreter, under rendezvous or
// eager sends) and classifies where each run ends. With deterministic matching the system is
// monotone (a step that can run stays able to), so one maximal run decides deadlock and the
// values. With wildcard receives it explores every matching the way ISP's POE does: a wildcard
// receive is matched only when nothing else can run, and each message it could take then is a
// branch, replayed from the start (stateless search) up to a bound.
#include "verify/explicit_engine.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_set>

#include "core/graph/match_queues.hpp"
#include "core/interp/postcondition.hpp"
#include "core/interp/trail_notes.hpp"
#include "core/io/writers.hpp"
#include "verify/static_checks.hpp"
#include "verify/wait_for.hpp"

namespace sg::verify {

namespace {

bool blocking(const StepGraph& g, StepId s) { return !g.nonblocking(s); }

class Explorer {
 public:
  Explorer(const StepGraph& g, SendMode mode, const ExplicitOptions& o) : g_(g), mode_(mode), o_(o) {}

  EngineResult run() {
    auto t0 = std::chrono::steady_clock::now();
    EngineResult res;
    bool wild = false;
    for (StepId s = 0; s < g_.size(); ++s)
      if (g_.kind(s) == StepKind::Recv && g_.local(s) && (g_.flags(s) & (kFlagAnySource | kFlagAnyTag))) wild = true;
    // Structural findings first: they hold for every execution that gets that far.
    if (auto cx = find_race(g_)) offer(*cx);
    if (auto cx = find_unordered_race(g_)) offer(*cx);
    if (auto cx = find_lifecycle(g_)) offer(*cx);

    std::vector<size_t> prefix;
    bool exhausted = false;
    uint64_t pruned = 0;
    while (true) {
      std::vector<std::pair<size_t, size_t>> choices;  // (taken, options)
      std::vector<std::pair<StepId, StepId>> matching;
      if (std::chrono::steady_clock::now() >= o_.deadline) {
        res.timed_out = true;
        break;
      }
      InterpOptions io;
      io.mode = mode_;
      io.report_stuck = false;
      io.deadline = o_.deadline;
      if (wild) {
        io.choose = [&](const std::vector<std::pair<StepId, StepId>>& options) {
          size_t k = choices.size();
          size_t pick = k < prefix.size() ? prefix[k] : 0;
          choices.emplace_back(pick, options.size());
          matching.push_back(options[pick]);
          return pick;
        };
      }
      if (wild) {
        // Called just before `choose` at the same point. Points the prefix replays are states
        // this search is still expanding (their other options come through the prefix): only
        // a point past the prefix is new ground, pruned if another path reached its state.
        io.fresh_state = [&](uint64_t a, uint64_t b) { return choices.size() < prefix.size() || seen_.insert({a, b}).second; };
      }
      InterpResult r = interpret(g_, io);
      if (r.interrupted) {
        res.timed_out = true;
        break;
      }
      ++res.executions;
      if (r.pruned) {
        ++pruned;
        if (!offer_size_mismatch(r, matching)) offer_undefined_read(r, matching);
      } else {
        classify(r, matching);
      }
      if (best_ && best_->verdict == Verdict::Unmatched) break;  // nothing comes first
      // Next branch: the deepest choice with an untried option.
      size_t i = choices.size();
      while (i > 0 && choices[i - 1].first + 1 >= choices[i - 1].second) --i;
      if (i == 0) {
        exhausted = true;
        break;
      }
      prefix.clear();
      for (size_t k = 0; k + 1 < i; ++k) prefix.push_back(choices[k].first);
      prefix.push_back(choices[i - 1].first + 1);
      if (res.executions >= o_.max_executions) break;
    }
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool complete = exhausted || (best_ && best_->verdict == Verdict::Unmatched);
    res.complete = complete;
    std::string why = res.timed_out ? "stopped at the time limit after " + std::to_string(res.executions) + " execution" +
                                          (res.executions == 1 ? "" : "s")
                                    : "explored " + std::to_string(res.executions) + " executions of more";
    if (best_) {
      res.verdict = best_->verdict;
      res.cx = *best_;
      res.cx.mode = mode_;
      res.cx.engine = "explicit";
      if (!complete) {
        // A defect found is real; one that comes earlier in the order may hide in what was not explored.
        res.note = why + "; an earlier verdict may exist";
        if (o_.strict) res.verdict = Verdict::Unknown;
      }
    } else {
      res.verdict = complete ? Verdict::Ok : Verdict::Unknown;
      if (!complete) res.note = res.timed_out ? why : why + " (raise --max-executions)";
    }
    if (complete && wild)
      res.note = std::to_string(res.executions - pruned) + " execution" + (res.executions - pruned == 1 ? "" : "s") + " explored" +
                 (pruned ? " (and " + std::to_string(pruned) + " cut where they reached a state explored before)" : "");
    return res;
  }

 private:
  void offer(Counterexample cx) {
    if (!best_ || priority(cx.verdict) < priority(best_->verdict)) best_ = std::move(cx);
  }

  // The run's first receive that took a message of another size, if any (unmatched: nothing
  // comes first). Like an undefined read it happens on the way, so a cut run counts it too.
  bool offer_size_mismatch(const InterpResult& r, const std::vector<std::pair<StepId, StepId>>& matching) {
    for (const Issue& is : r.issues) {
      if (is.kind != IssueKind::SizeMismatch) continue;
      Counterexample cx = size_mismatch_cx(g_, is.step, is.send);
      cx.matching = matching;
      offer(cx);
      return true;
    }
    return false;
  }

  // The run's first undefined read, if any. A run cut at a state explored before is classified
  // by this alone: its continuations were classified then; only its way there is new.
  bool offer_undefined_read(const InterpResult& r, const std::vector<std::pair<StepId, StepId>>& matching) {
    for (const Issue& is : r.issues) {
      if (is.kind != IssueKind::UndefinedRead) continue;
      Counterexample cx = undefined_cx(g_, is.step, is.buf, is.chunk);
      cx.matching = matching;
      offer(cx);
      return true;
    }
    return false;
  }

  void classify(const InterpResult& r, const std::vector<std::pair<StepId, StepId>>& matching) {
    if (p2p_.empty() && !p2p_listed_) {
      for (StepId s = 0; s < g_.size(); ++s)
        if (g_.local(s) && (g_.kind(s) == StepKind::Send || g_.kind(s) == StepKind::Recv)) p2p_.push_back(s);
      queue_ = queue_partners(g_);
      p2p_listed_ = true;
    }
    if (offer_size_mismatch(r, matching)) return;
    // unmatched: a pending MPI operation that nothing left in the program can match. In a queue
    // no wildcard contests that is its one partner by MPI's order (the second of two sends into
    // a queue with one receive can never be taken); elsewhere, any compatible operation still
    // unmatched.
    for (StepId s : p2p_) {
      if (!(r.status[s] & kStepIssued) || r.partner[s] != kNoStep) continue;
      bool is_recv = g_.kind(s) == StepKind::Recv;
      bool fits = false;
      if (queue_[s] != kQueueContested) {
        fits = queue_[s] != kNoStep && r.partner[queue_[s]] == kNoStep;
      } else {
        for (StepId x : p2p_) {
          if (fits) break;
          if (r.partner[x] != kNoStep || x == s) continue;
          if (is_recv && g_.kind(x) == StepKind::Send && p2p_compatible(g_, s, x)) fits = true;
          if (!is_recv && g_.kind(x) == StepKind::Recv && p2p_compatible(g_, x, s)) fits = true;
        }
      }
      if (fits) continue;
      Counterexample cx = unmatched_cx(g_, s);
      cx.matching = matching;
      offer(cx);
      return;
    }
    if (!r.completed) {
      bool stuck_blocking = false;
      for (StepId s = 0; s < g_.size() && !stuck_blocking; ++s)
        if ((r.status[s] & kStepIssued) && !(r.status[s] & kStepCompleted) && blocking(g_, s)) stuck_blocking = true;
      if (stuck_blocking) {
        Counterexample cx = build_deadlock(g_, ExecState{r.status, r.partner}, mode_);
        cx.matching = matching;
        offer(cx);
        return;
      }
    }
    if (offer_undefined_read(r, matching)) return;
    if (!r.completed) return;
    if (best_ && priority(best_->verdict) <= priority(Verdict::WrongResult)) return;
    PostconditionReport post = check_postconditions(g_, r.initial, r.final, 1);
    if (post.chunks_wrong == 0) return;
    const Issue& is = post.issues.front();
    Counterexample cx;
    cx.verdict = Verdict::WrongResult;
    set_chunk(cx, g_, is.rank, is.buf, is.chunk);
    cx.summary = is.text.substr(0, is.text.find(" (holds "));
    cx.expected = is.expected;
    cx.actual = is.actual;
    // The steps that wrote it: the last writer, and back along the messages that fed it.
    StepId w = is.step;
    for (int hops = 0; w != kNoStep && hops < 4; ++hops) {
      cx.steps.push_back(cx_step(g_, w, hops == 0 ? "last write" : "fed it"));
      if (g_.kind(w) != StepKind::Recv) break;
      StepId snd = r.partner[w];
      if (snd == kNoStep) break;
      cx.steps.push_back(cx_step(g_, snd, "sent it"));
      // The step that wrote the sent chunk before the send, on the sender's rank.
      StepId prev = kNoStep;
      Range sr = g_.range(snd);
      std::vector<Range> wr;
      for (StepId x = snd; x-- > 0;) {
        if (g_.rank(x) != g_.rank(snd)) continue;
        wr.clear();
        g_.writes(x, wr);
        for (const Range& q : wr)
          if (q.buf == sr.buf && q.lo < sr.lo + sr.cnt && sr.lo < q.lo + q.cnt) prev = x;
        if (prev != kNoStep) break;
      }
      w = prev;
    }
    if (is.step == kNoStep) cx.steps.push_back(unwritten_step(g_, is.stmt, is.rank));
    // Where the chunk's missing (or extra) term went (core/interp/trail_notes.hpp): the same
    // execution again, its wildcard matches replayed, following that term.
    InterpOptions replay;
    replay.mode = mode_;
    replay.report_stuck = false;
    if (!matching.empty()) {
      size_t k = 0;
      replay.choose = [&matching, k](const std::vector<std::pair<StepId, StepId>>& options) mutable {
        size_t pick = 0;
        for (size_t j = 0; k < matching.size() && j < options.size(); ++j)
          if (options[j] == matching[k]) pick = j;
        ++k;
        return pick;
      };
    }
    for (const DiagNote& n : trail_notes(g_, replay, post, 0)) {
      CxStep c;
      c.rank = is.rank;
      c.loc = n.loc;
      c.what = n.message;
      c.role = "trail";
      cx.steps.push_back(c);
    }
    // A term of a tile that should not be there (an upper tile, a stale kv block): the tile
    // that computed it comes first.
    if (StepId t = tile_culprit(r, is); t != kNoStep) cx.steps.insert(cx.steps.begin(), cx_step(g_, t, "computed the tile"));
    cx.matching = matching;
    offer(cx);
  }

  const StepGraph& g_;
  SendMode mode_;
  const ExplicitOptions& o_;
  std::optional<Counterexample> best_;
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const { return p.first ^ (p.second * 0x9e3779b97f4a7c15ULL); }
  };
  std::unordered_set<std::pair<uint64_t, uint64_t>, PairHash> seen_;  // fingerprints of states explored
  std::vector<StepId> p2p_;                                           // the MPI sends and receives
  std::vector<StepId> queue_;                                         // queue_partners(g_)
  bool p2p_listed_ = false;
};

}  // namespace

EngineResult run_explicit(const StepGraph& g, SendMode mode, const ExplicitOptions& opts) { return Explorer(g, mode, opts).run(); }

}  // namespace sg::verify

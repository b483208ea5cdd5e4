// The Z3 engine's queries, in the verdict order (see z3_engine.cpp): size mismatch, unmatched,
// deadlock, race, undefined data and wrong result, each turning a model into a counterexample.
// Apart from the encoding they ask about; members of the Encoder of z3_engine_impl.hpp.
#include <z3++.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/graph/match_queues.hpp"
#include "core/interp/postcondition.hpp"
#include "core/io/writers.hpp"
#include "verify/static_checks.hpp"
#include "verify/wait_for.hpp"
#include "verify/z3_engine_impl.hpp"

namespace sg::verify::detail {

ExecState Encoder::state_from_model() {
  status_.assign(n_, 0);
  partner_.assign(n_, kNoStep);
  for (StepId s = 0; s < n_; ++s) status_[s] = static_cast<uint8_t>((val(I_[s]) ? kStepIssued : 0) | (val(D_[s]) ? kStepCompleted : 0));
  for (size_t p = 0; p < pr_.size(); ++p)
    if (val(M_[p])) partner_[pr_[p].first] = pr_[p].second, partner_[pr_[p].second] = pr_[p].first;
  return ExecState{status_, partner_};
}

std::vector<std::pair<StepId, StepId>> Encoder::matching_from_model(bool only_wild) {
  std::vector<std::pair<StepId, StepId>> m;
  for (size_t p = 0; p < pr_.size(); ++p)
    if (val(M_[p]) && (!only_wild || (g_.flags(pr_[p].first) & (kFlagAnySource | kFlagAnyTag))))
      m.emplace_back(pr_[p].first, pr_[p].second);
  return m;
}

// ------------------------------------------------------------------ queries
// A pending operation nothing left can match: in an uncontested queue, its one partner by
// MPI's order is missing or taken (with every compatible pair a candidate too, since no
// execution pairs it otherwise); elsewhere, every candidate is taken.
z3::expr Encoder::unmatched(StepId o) {
  if (queue_[o] != kQueueContested) return I_[o] && !matched(o) && (queue_[o] == kNoStep ? ctx_.bool_val(true) : matched(queue_[o]));
  std::vector<z3::expr> others;
  for (size_t p : pairs_of_[o]) {
    StepId x = g_.kind(o) == StepKind::Recv ? pr_[p].second : pr_[p].first;
    others.push_back(matched(x));
  }
  return I_[o] && !matched(o) && conj(others);
}

// A receive that takes a message of another size in some (partial) execution: no stuck state
// needed, the pair itself is the defect (the `unmatched` verdict). Pairs of equal size are
// the rule (the match pass refuses a fixed pair of two sizes), so the query is usually skipped.
std::optional<Counterexample> Encoder::q_size_mismatch() {
  std::vector<size_t> bad;
  for (size_t p = 0; p < pr_.size(); ++p)
    if (g_.range_bytes(g_.range(pr_[p].first)) != g_.range_bytes(g_.range(pr_[p].second))) bad.push_back(p);
  if (bad.empty()) return std::nullopt;
  std::vector<z3::expr> any;
  for (size_t p : bad) any.push_back(M_[p]);
  if (check({disj(any)}) != z3::sat) return std::nullopt;
  for (size_t p : bad) {
    if (!val(M_[p])) continue;
    Counterexample cx = size_mismatch_cx(g_, pr_[p].first, pr_[p].second);
    cx.matching = matching_from_model(true);
    return cx;
  }
  return std::nullopt;
}

std::optional<Counterexample> Encoder::q_unmatched() {
  std::vector<z3::expr> any;
  std::vector<StepId> ops;
  for (StepId s = 0; s < n_; ++s)
    if (p2p(s)) any.push_back(unmatched(s)), ops.push_back(s);
  if (any.empty()) return std::nullopt;
  std::vector<z3::expr> q = stuck_;
  q.push_back(disj(any));
  if (check(q) != z3::sat) return std::nullopt;
  for (StepId s : ops) {
    if (!val(unmatched(s))) continue;
    Counterexample cx = unmatched_cx(g_, s);
    cx.matching = matching_from_model(true);
    return cx;
  }
  return std::nullopt;
}

std::optional<Counterexample> Encoder::q_deadlock() {
  std::vector<z3::expr> any;
  for (StepId s = 0; s < n_; ++s)
    if (blocking(s)) any.push_back(I_[s] && !D_[s]);
  std::vector<z3::expr> q = stuck_;
  q.push_back(disj(any));
  if (check(q) != z3::sat) return std::nullopt;
  Counterexample cx = build_deadlock(g_, state_from_model(), mode_);
  cx.matching = matching_from_model(true);
  return cx;
}

// The interval in which a step uses its chunks: from its start until it completes, or for a
// nonblocking operation until its wait completes (never, without a wait).
z3::expr Encoder::closed_before(StepId x, const z3::expr& time) {
  if (g_.nonblocking(x)) {
    StepId w = wait_of_[x];
    if (w == kNoStep) return ctx_.bool_val(false);
    return D_[w] && c_[w] < time;
  }
  return D_[x] && c_[x] < time;
}

// The chunks step s touches, each once, with whether it writes it.
std::vector<Encoder::ChunkAccess> Encoder::chunk_accesses(StepId s) {
  std::vector<Range> rd, wr;
  g_.reads(s, rd);
  g_.writes(s, wr);
  std::map<std::pair<uint32_t, uint32_t>, bool> seen;
  for (const Range& r : rd)
    for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) seen.emplace(std::make_pair(r.buf, c), false);
  for (const Range& r : wr)
    for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) seen[{r.buf, c}] = true;
  std::vector<ChunkAccess> out;
  for (const auto& [bc, w] : seen) out.push_back({bc.first, bc.second, w});
  return out;
}

std::optional<Counterexample> Encoder::q_race() {
  // Candidate pairs per (rank, chunk): each access with the writes next to it in program
  // order (the rest follow by transitivity of the ordering).
  std::vector<std::pair<StepId, StepId>> cands;
  std::vector<std::pair<uint32_t, uint32_t>> where;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<StepId, std::vector<StepId>>>
      last;  // (rank,buf,chunk) -> (last write, reads since)
  for (StepId s = 0; s < n_; ++s) {
    tick();
    for (auto [buf, c, w] : chunk_accesses(s)) {
      auto& [lw, reads] = last.try_emplace({g_.rank(s), buf, c}, kNoStep, std::vector<StepId>{}).first->second;
      if (lw != kNoStep) cands.emplace_back(lw, s), where.emplace_back(buf, c);
      if (w) {
        for (StepId r : reads) cands.emplace_back(r, s), where.emplace_back(buf, c);
        lw = s;
        reads.clear();
      } else {
        reads.push_back(s);
      }
    }
  }
  // A pair already ordered by a dependency path from the end of the first access (the step
  // itself, or a nonblocking operation's wait) to the start of the second cannot overlap: the
  // constraints make that unsatisfiable, so it is settled here without the solver.
  std::vector<std::pair<StepId, StepId>> open;
  std::vector<std::pair<uint32_t, uint32_t>> open_where;
  for (size_t i = 0; i < cands.size(); ++i) {
    auto [x, y] = cands[i];
    StepId end = g_.nonblocking(x) ? wait_of_[x] : x;
    if (end != kNoStep && end < y && reaches(end, y)) continue;
    open.push_back(cands[i]);
    open_where.push_back(where[i]);
  }
  cands.swap(open);
  where.swap(open_where);
  if (cands.empty()) return std::nullopt;
  std::vector<z3::expr> overlaps;
  for (auto [x, y] : cands) overlaps.push_back(I_[x] && I_[y] && !closed_before(x, t_[y]) && !closed_before(y, t_[x]));
  if (check({disj(overlaps)}) != z3::sat) return std::nullopt;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!val(overlaps[i])) continue;
    auto [x, y] = cands[i];
    Counterexample cx;
    cx.verdict = Verdict::Race;
    set_chunk(cx, g_, g_.rank(x), where[i].first, where[i].second);
    cx.summary = "rank " + std::to_string(g_.rank(x)) + ": two accesses to " + g_.chunk_name(cx.buf, cx.chunk) + " can overlap in time";
    auto span = [&](StepId s) {
      std::string e = "from t=" + std::to_string(ival(t_[s]));
      if (g_.nonblocking(s)) {
        StepId w = wait_of_[s];
        e += w != kNoStep && val(D_[w]) ? " to its wait's completion t=" + std::to_string(ival(c_[w]))
                                        : " on (never waited in this execution)";
      } else {
        e += val(D_[s]) ? " to t=" + std::to_string(ival(c_[s])) : " on (unfinished)";
      }
      return e;
    };
    cx.steps.push_back(cx_step(g_, x, "first access", span(x)));
    cx.steps.push_back(cx_step(g_, y, "second access", span(y)));
    cx.reason = "nothing orders the end of one before the start of the other: no dependency path runs from #" + std::to_string(x) +
                "'s completion" + (g_.nonblocking(x) ? " (its wait)" : "") + " to #" + std::to_string(y) + "'s start";
    cx.matching = matching_from_model(true);
    return cx;
  }
  return std::nullopt;
}

// Whether `to` depends on `from` through a chain of dependencies (both on one rank; ids
// decrease along dependencies, so the search stays between them). Bounded; false if unsure.
bool Encoder::reaches(StepId from, StepId to) {
  std::vector<StepId> stack{to};
  std::unordered_set<StepId> seen{to};
  while (!stack.empty()) {
    StepId s = stack.back();
    stack.pop_back();
    for (StepId d : g_.deps(s)) {
      if (d == from) return true;
      if (d < from || !seen.insert(d).second) continue;
      if (seen.size() > 4096) return false;
      stack.push_back(d);
    }
  }
  return false;
}

bool Encoder::initially_defined(uint32_t rank, uint32_t buf, uint32_t c) {
  return initial_.at(rank, buf, c).v.defined || g_.buffers[buf].accumulator;
}

std::optional<Counterexample> Encoder::q_undefined() {
  reaching_defs();
  std::vector<Range> rd;
  for (StepId s = 0; s < n_; ++s) {
    tick();
    rd.clear();
    g_.reads(s, rd);
    for (const Range& r : rd)
      for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) {
        if (prior(s, r.buf, c) != kNoStep || initially_defined(g_.rank(s), r.buf, c)) continue;
        return undefined_cx(g_, s, r.buf, c);
      }
  }
  return std::nullopt;
}

std::optional<Counterexample> Encoder::q_wrong() {
  if (g_.expects.empty()) return std::nullopt;
  reaching_defs();
  struct Check {
    uint32_t rank, buf, chunk;
    Value expected;
    uint32_t stmt;
  };
  std::vector<Check> checks;
  for_each_expected(g_, initial_, [&](const Expectation& x, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& e) {
    checks.push_back({rank, buf, chunk, e, x.stmt});
  });
  // Per checked chunk, "its final value is wrong"; chunks whose value is known right when
  // encoding (no wildcard decides it) need no formula.
  std::vector<z3::expr> wrong;
  std::vector<size_t> wrong_check;
  for (bool done = false; !done;) {
    try {
      wrong.clear();
      wrong_check.clear();
      for (size_t i = 0; i < checks.size(); ++i) {
        const Check& ch = checks[i];
        tick();
        auto it = final_.find({ch.rank, ch.buf, ch.chunk});
        Term t = it == final_.end() ? initial(ch.rank, ch.buf, ch.chunk) : written(it->second, ch.buf, ch.chunk);
        uint64_t want = value_hash(ch.expected);
        if (t.known && t.kd && t.kv == want) continue;
        wrong.push_back(!t.d || t.v != ctx_.bv_val(want, 64));
        wrong_check.push_back(i);
      }
      done = true;
    } catch (const InlineCycle&) {  // candidate pairs form a cycle: start over with variables
      memo_.clear();
      def_jobs_.clear();
      inline_values_ = false;
    }
  }
  if (wrong.empty()) return std::nullopt;
  // A complete execution: every step issued and completed, every send received.
  std::vector<z3::expr> q;
  for (StepId s = 0; s < n_; ++s) q.push_back(I_[s] && D_[s]);
  for (StepId s = 0; s < n_; ++s)
    if (p2p(s) && g_.kind(s) == StepKind::Send) q.push_back(matched(s));
  define_values(q);
  q.push_back(disj(wrong));
  if (check(q) != z3::sat) return std::nullopt;
  size_t bad = 0;
  while (bad + 1 < wrong.size() && !val(wrong[bad])) ++bad;
  const Check& ch = checks[wrong_check[bad]];
  // Replay the model's matching in the interpreter to name the actual terms and writers.
  auto match = matching_from_model(false);
  std::map<StepId, StepId> want(match.begin(), match.end());
  InterpOptions io;
  io.mode = mode_;
  io.report_stuck = false;
  io.choose = [&](const std::vector<std::pair<StepId, StepId>>& opts) -> size_t {
    for (size_t i = 0; i < opts.size(); ++i) {
      auto it = want.find(opts[i].first);
      if (it != want.end() && it->second == opts[i].second) return i;
    }
    return 0;
  };
  InterpResult r = interpret(g_, io);
  Counterexample cx;
  cx.verdict = Verdict::WrongResult;
  set_chunk(cx, g_, ch.rank, ch.buf, ch.chunk);
  cx.expected = describe_value(ch.expected, g_, ch.buf);
  const ChunkSlot& slot = r.final.at(ch.rank, ch.buf, ch.chunk);
  cx.actual = describe_value(slot.v, g_, ch.buf);
  cx.summary = "rank " + std::to_string(ch.rank) + ", " + g_.chunk_name(ch.buf, ch.chunk) + ": the final value breaks the postcondition";
  StepId culprit = kNoStep;
  if (r.completed) {
    PostconditionReport post = check_postconditions(g_, r.initial, r.final, 1u << 20);
    for (const Issue& is : post.issues)
      if (is.rank == ch.rank && is.buf == ch.buf && is.chunk == ch.chunk) {
        cx.summary = is.text.substr(0, is.text.find(" (holds "));
        culprit = tile_culprit(r, is);
      }
  }
  // A tile's term that should not be there: the tile that computed it comes first.
  if (culprit != kNoStep) cx.steps.push_back(cx_step(g_, culprit, "computed the tile"));
  StepId w = slot.writer;
  for (int hops = 0; w != kNoStep && hops < 3; ++hops) {
    cx.steps.push_back(cx_step(g_, w, hops == 0 ? "last write" : "fed it"));
    if (g_.kind(w) != StepKind::Recv || r.partner[w] == kNoStep) break;
    StepId snd = r.partner[w];
    cx.steps.push_back(cx_step(g_, snd, "sent it"));
    Range sr = g_.range(snd);
    w = prior(snd, sr.buf, sr.lo);
  }
  if (cx.steps.empty()) cx.steps.push_back(unwritten_step(g_, ch.stmt, ch.rank));
  cx.matching = matching_from_model(true);
  return cx;
}

}  // namespace sg::verify::detail

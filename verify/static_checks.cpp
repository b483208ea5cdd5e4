#include "verify/static_checks.hpp"

#include <unordered_map>
#include <unordered_set>

#include "core/io/writers.hpp"

namespace sg::verify {

CxStep cx_step(const StepGraph& g, StepId s, std::string role, std::string note) {
  CxStep c;
  c.step = s;
  c.rank = g.rank(s);
  c.what = describe_step(g, s);
  c.loc = g.loc(s);
  c.role = std::move(role);
  c.note = std::move(note);
  return c;
}

void set_chunk(Counterexample& cx, const StepGraph& g, uint32_t rank, uint32_t buf, uint32_t chunk) {
  cx.rank = rank;
  cx.buf = buf;
  cx.chunk = chunk;
  cx.chunk_name = g.chunk_name(buf, chunk);
}

CxStep unwritten_step(const StepGraph& g, uint32_t expect_stmt, uint32_t rank) {
  CxStep st;
  st.rank = rank;
  st.what = "no step wrote it";
  if (expect_stmt < g.stmt_locs.size()) st.loc = g.stmt_locs[expect_stmt];
  st.role = "postcondition";
  return st;
}

Counterexample unmatched_cx(const StepGraph& g, StepId s) {
  Counterexample cx;
  cx.verdict = Verdict::Unmatched;
  cx.rank = g.rank(s);
  const P2PInfo& p = g.p2p_info(s);
  cx.summary = g.kind(s) == StepKind::Recv ? "rank " + std::to_string(g.rank(s)) + " posts a receive from " +
                                                 (p.peer == kAnyRank ? std::string("any rank") : "rank " + std::to_string(p.peer)) +
                                                 " that no send left in the program can match"
                                           : "rank " + std::to_string(g.rank(s)) + " sends to rank " + std::to_string(p.peer) + " (tag " +
                                                 std::to_string(p.tag) + ") and no receive left in the program can take it";
  cx.steps.push_back(cx_step(g, s, "pending"));
  return cx;
}

Counterexample size_mismatch_cx(const StepGraph& g, StepId recv, StepId send) {
  Counterexample cx;
  cx.verdict = Verdict::Unmatched;
  cx.rank = g.rank(recv);
  cx.summary = size_mismatch_text(g, recv, send);
  cx.steps.push_back(cx_step(g, recv, "receive", std::to_string(g.range_bytes(g.range(recv))) + " bytes"));
  cx.steps.push_back(cx_step(g, send, "the send it takes", std::to_string(g.range_bytes(g.range(send))) + " bytes"));
  return cx;
}

Counterexample undefined_cx(const StepGraph& g, StepId s, uint32_t buf, uint32_t chunk) {
  Counterexample cx;
  cx.verdict = Verdict::UndefinedData;
  set_chunk(cx, g, g.rank(s), buf, chunk);
  cx.summary = std::string(step_kind_name(g.kind(s))) + " on rank " + std::to_string(g.rank(s)) + " reads " + g.chunk_name(buf, chunk) +
               ", which was never written";
  cx.steps.push_back(cx_step(g, s, "reads"));
  return cx;
}

std::optional<Counterexample> find_lifecycle(const StepGraph& g) {
  if (!g.bad_waits.empty()) {
    const BadWait& b = g.bad_waits.front();
    Counterexample cx;
    cx.verdict = Verdict::Lifecycle;
    cx.summary = b.message;
    CxStep st = cx_step(g, b.wait, "wait");
    st.loc = b.loc;
    cx.steps.push_back(st);
    cx.rank = b.rank;
    return cx;
  }
  std::unordered_set<StepId> waited;
  for (StepId s = 0; s < g.size(); ++s)
    if (g.kind(s) == StepKind::Wait)
      for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) waited.insert(*h);
  for (StepId s = 0; s < g.size(); ++s) {
    if (!g.nonblocking(s) || waited.count(s)) continue;
    Counterexample cx;
    cx.verdict = Verdict::Lifecycle;
    cx.rank = g.rank(s);
    cx.summary = "rank " + std::to_string(g.rank(s)) + " finishes with its " + (g.kind(s) == StepKind::Send ? "isend" : "irecv") + " of " +
                 g.range_name(g.range(s)) + " never waited for";
    cx.steps.push_back(cx_step(g, s, "never waited", "no wait or waitall after it completes it"));
    return cx;
  }
  return std::nullopt;
}

std::optional<Counterexample> find_race(const StepGraph& g) {
  auto ix = g.rank_index();
  std::vector<Range> rd, wr;
  for (uint32_t rank = 0; rank < g.nranks; ++rank) {
    // Chunks of the rank's in-flight nonblocking operations: (buffer, chunk) -> operations.
    std::unordered_map<uint64_t, std::vector<StepId>> inflight;
    auto key = [](uint32_t buf, uint32_t c) { return (uint64_t{buf} << 32) | c; };
    for (uint64_t i = ix.off[rank]; i < ix.off[rank + 1]; ++i) {
      StepId s = ix.steps[i];
      if (g.kind(s) == StepKind::Wait) {
        for (const StepId* h = g.handles_begin(s); h != g.handles_end(s); ++h) {
          Range r = g.range(*h);
          for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) {
            auto it = inflight.find(key(r.buf, c));
            if (it == inflight.end()) continue;
            auto& v = it->second;
            v.erase(std::remove(v.begin(), v.end(), *h), v.end());
            if (v.empty()) inflight.erase(it);
          }
        }
        continue;
      }
      rd.clear();
      wr.clear();
      g.reads(s, rd);
      g.writes(s, wr);
      auto conflict = [&](const Range& r, bool writes) -> std::optional<Counterexample> {
        for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) {
          auto it = inflight.find(key(r.buf, c));
          if (it == inflight.end()) continue;
          for (StepId o : it->second) {
            bool o_writes = g.kind(o) == StepKind::Recv;
            if (!writes && !o_writes) continue;  // two reads never race
            Counterexample cx;
            cx.verdict = Verdict::Race;
            set_chunk(cx, g, rank, r.buf, c);
            cx.summary = "rank " + std::to_string(rank) + ": " + (writes ? "a write to " : "a read of ") + g.chunk_name(r.buf, c) +
                         " can overlap the " + (o_writes ? "irecv" : "isend") + " still using it";
            cx.steps.push_back(
                cx_step(g, o, o_writes ? "in-flight write" : "in-flight read", "its chunk is in use from its start until its wait"));
            cx.steps.push_back(cx_step(g, s, writes ? "write" : "read"));
            StepId w = kNoStep;
            for (uint64_t k = i + 1; k < ix.off[rank + 1] && w == kNoStep; ++k) {
              StepId x = ix.steps[k];
              if (g.kind(x) != StepKind::Wait) continue;
              for (const StepId* h = g.handles_begin(x); h != g.handles_end(x); ++h)
                if (*h == o) w = x;
            }
            cx.reason = "step #" + std::to_string(s) + " is ordered after #" + std::to_string(o) +
                        " only through its start: a nonblocking operation keeps its chunk until its wait, and " +
                        (w != kNoStep ? "the wait #" + std::to_string(w) + " comes after #" + std::to_string(s) + " in rank " +
                                            std::to_string(rank) + "'s program"
                                      : std::string("it is never waited for"));
            if (w != kNoStep) cx.steps.push_back(cx_step(g, w, "the wait", "completes the operation"));
            return cx;
          }
        }
        return std::nullopt;
      };
      for (const Range& r : wr)
        if (auto cx = conflict(r, true)) return cx;
      for (const Range& r : rd)
        if (auto cx = conflict(r, false)) return cx;
      if (g.nonblocking(s)) {
        Range r = g.range(s);
        for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c) inflight[key(r.buf, c)].push_back(s);
      }
    }
  }
  return std::nullopt;
}

std::optional<Counterexample> find_unordered_race(const StepGraph& g) {
  if (!g.unordered_hazards) return std::nullopt;
  auto ix = g.rank_index();
  std::vector<Range> rd, wr;
  for (uint32_t rank = 0; rank < g.nranks; ++rank) {
    uint64_t lo = ix.off[rank], n = ix.off[rank + 1] - lo;
    if (n == 0 || n > 40000) continue;  // (n² bits of reachability: 200 MB at the bound)
    // reach[i]: the rank's steps that step i transitively depends on (ids grow along the program).
    size_t words = (n + 63) / 64;
    std::vector<uint64_t> reach(n * words, 0);
    std::unordered_map<StepId, uint32_t> local;
    for (uint64_t i = 0; i < n; ++i) local.emplace(ix.steps[lo + i], static_cast<uint32_t>(i));
    for (uint64_t i = 0; i < n; ++i)
      for (StepId d : g.deps(ix.steps[lo + i])) {
        auto it = local.find(d);
        if (it == local.end()) continue;
        uint64_t j = it->second;
        reach[i * words + j / 64] |= uint64_t{1} << (j % 64);
        for (size_t w = 0; w < words; ++w) reach[i * words + w] |= reach[j * words + w];
      }
    auto before = [&](uint64_t a, uint64_t b) { return (reach[b * words + a / 64] >> (a % 64)) & 1; };
    // Accesses per chunk, in step order: (local index, writes).
    std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, bool>>> by_chunk;
    for (uint64_t i = 0; i < n; ++i) {
      StepId s = ix.steps[lo + i];
      rd.clear();
      wr.clear();
      g.reads(s, rd);
      g.writes(s, wr);
      for (int w = 0; w < 2; ++w)
        for (const Range& r : w ? wr : rd)
          for (uint32_t c = r.lo; c < r.lo + r.cnt; ++c)
            by_chunk[(uint64_t{r.buf} << 32) | c].emplace_back(static_cast<uint32_t>(i), w == 1);
    }
    for (auto& [key, acc] : by_chunk)
      for (size_t x = 0; x < acc.size(); ++x)
        for (size_t y = x + 1; y < acc.size(); ++y) {
          auto [a, wa] = acc[x];
          auto [b, wb] = acc[y];
          if ((!wa && !wb) || a == b || before(a, b) || before(b, a)) continue;
          StepId sa = ix.steps[lo + a], sb = ix.steps[lo + b];
          Counterexample cx;
          cx.verdict = Verdict::Race;
          set_chunk(cx, g, rank, static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key & 0xffffffffu));
          cx.summary = "rank " + std::to_string(rank) + ": two accesses to " + g.chunk_name(cx.buf, cx.chunk) +
                       " with nothing ordering them, one a write: they can run at once";
          cx.steps.push_back(cx_step(g, sa, wa ? "write" : "read"));
          cx.steps.push_back(cx_step(g, sb, wb ? "write" : "read"));
          cx.reason = "no dependency path joins #" + std::to_string(sa) + " and #" + std::to_string(sb) +
                      " (different thread blocks, and no depid/deps between them)";
          return cx;
        }
  }
  return std::nullopt;
}

}  // namespace sg::verify

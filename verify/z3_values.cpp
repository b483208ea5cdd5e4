// The Z3 engine's symbolic values (see z3_engine.cpp): the static reaching definitions, and the
// value of each chunk as a term over the candidate pairs, for the wrong-result query. Apart from
// the encoding of executions they ride on; members of the Encoder of z3_engine_impl.hpp.
#include <z3++.h>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "verify/z3_engine_impl.hpp"

namespace sg::verify::detail {

void Encoder::reaching_defs() {
  if (defs_done_) return;
  defs_done_ = true;
  initial_ = MachineState(g_);
  initial_.apply_inits(g_);
  // final_ holds, step by step, the last writer of each (rank, buffer, chunk): at the end, the
  // writer of the final values.
  for (StepId s = 0; s < n_; ++s) {
    tick();
    auto acc = chunk_accesses(s);
    for (const auto& a : acc) {
      auto it = final_.find({g_.rank(s), a.buf, a.chunk});
      prior_[key(s, a.buf, a.chunk)] = it == final_.end() ? kNoStep : it->second;
    }
    for (const auto& a : acc)
      if (a.write) final_[{g_.rank(s), a.buf, a.chunk}] = s;
  }
}

StepId Encoder::prior(StepId s, uint32_t buf, uint32_t c) {
  auto it = prior_.find(key(s, buf, c));
  return it == prior_.end() ? kNoStep : it->second;
}

// ------------------------------------------------------------------ values
Encoder::Term Encoder::constant(uint64_t h, bool def) { return Term{ctx_.bv_val(h, 64), ctx_.bool_val(def), true, h, def}; }

Encoder::Term Encoder::initial(uint32_t rank, uint32_t buf, uint32_t c) {
  const Value& v = initial_.at(rank, buf, c).v;
  if (!v.defined && g_.buffers[buf].accumulator) return constant(0, true);
  return constant(value_hash(v), v.defined);
}

Encoder::Term Encoder::add(const Term& a, const Term& b) {
  if (a.known && b.known) return constant(a.kv + b.kv, a.kd && b.kd);
  return Term{a.v + b.v, a.d && b.d};
}

// The value step s sees in (buf, c) of its rank before it runs.
Encoder::Term Encoder::read(StepId s, uint32_t buf, uint32_t c) {
  StepId w = prior(s, buf, c);
  if (w == kNoStep) return initial(g_.rank(s), buf, c);
  return written(w, buf, c);
}

// A point-to-point receive with several candidate sends: its value is a variable, defined by
// an if-then-else over its candidate pairs (def_jobs_). Why a variable: candidate pairs can
// form cycles no execution realises (a ring's receive "taking" a send that forwards its own
// data), and a value term built by substitution would have to cut such a cycle somewhere;
// a cut inside a shared, memoised term leaves a free variable standing for a value some real
// execution produces (the false wrong-result on rings that share a tag). Equations have no
// cycle to cut: the timing constraints exclude cyclic matchings, so in every model the
// equations of the matched pairs are well-founded.
//
// Variables cost the solver (several times slower on a wildcard reduction), so values are
// first built inline, as if-then-else terms; only a cycle met on the way (inline_cycle) makes
// q_wrong start over with variables. Without a cut, an inline term is exact.
bool Encoder::value_variable(StepId w) const { return !inline_values_ && p2p(w) && pairs_of_[w].size() >= 2; }
bool Encoder::multi_inline(StepId w) const { return inline_values_ && p2p(w) && pairs_of_[w].size() >= 2; }

// The reads node (w, buf, c) is computed from, in the order combine() takes them.
void Encoder::node_inputs(StepId w, uint32_t buf, uint32_t c, std::vector<Read>& in) {
  in.clear();
  Range r = g_.range(w);
  uint32_t off = c - r.lo;
  bool reduce_recv = g_.kind(w) == StepKind::Recv && (g_.flags(w) & kFlagReduce);
  switch (g_.kind(w)) {
    case StepKind::Recv: {
      if (value_variable(w)) return;
      if (reduce_recv) in.push_back({w, buf, c});
      if (multi_inline(w)) {  // every candidate's payload, in pairs_of_ order (combine follows it)
        for (size_t p : pairs_of_[w]) {
          Range sr = g_.range(pr_[p].second);
          if (off < sr.cnt) in.push_back({pr_[p].second, sr.buf, sr.lo + off});
        }
        return;
      }
      StepId m = kNoStep;
      if (!p2p(w)) m = g_.ref(w);
      else if (pairs_of_[w].size() == 1) m = pr_[pairs_of_[w][0]].second;  // in a complete execution it takes m
      if (m == kNoStep) return;
      Range sr = g_.range(m);
      if (off < sr.cnt) in.push_back({m, sr.buf, sr.lo + off});
      return;
    }
    case StepKind::Copy: {
      Range src = g_.copy_source(w);
      in.push_back({w, src.buf, src.lo + off});
      return;
    }
    case StepKind::Reduce: {
      Range src = g_.copy_source(w);
      in.push_back({w, buf, c});
      in.push_back({w, src.buf, src.lo + off});
      return;
    }
    case StepKind::Compute: {
      const ComputeInfo& ci = g_.compute(w);
      if (ci.kind == ComputeKind::Generic) return;
      const Range* rd = g_.ranges.data() + ci.reads_off;
      const Range* wr = g_.ranges.data() + ci.writes_off;
      in.push_back({w, buf, c});                                                              // the accumulator
      in.push_back({w, rd[1].buf, rd[1].lo});                                                 // KV (or K)
      if (ci.split_kv) in.push_back({w, rd[ci.reads_cnt - 1].buf, rd[ci.reads_cnt - 1].lo});  // V
      // Q: an output chunk takes its own Q chunk's tile; dKV sums the tiles of every Q chunk.
      if (buf == wr[0].buf && c >= wr[0].lo && c < wr[0].lo + wr[0].cnt) {
        in.push_back({w, rd[0].buf, rd[0].lo + (c - wr[0].lo)});
      } else {
        for (uint32_t k = 0; k < rd[0].cnt; ++k) in.push_back({w, rd[0].buf, rd[0].lo + k});
      }
      return;
    }
    case StepKind::Collective: {
      const CollInfo& ci = g_.coll(w);
      const Instance& inst = g_.instances[ci.instance];
      const GroupInfo& gr = g_.groups[inst.group];
      const StepId* steps = g_.instance_steps.data() + inst.steps_off;
      bool into = ci.kind == CollKind::Alltoall && ci.into.cnt;
      uint32_t o = into ? c - ci.into.lo : off;
      uint32_t gsz = gr.count, blk = gsz ? r.cnt / gsz : 0;
      auto at = [&](uint32_t j, uint32_t x) {
        Range rj = g_.range(steps[j]);
        in.push_back({steps[j], rj.buf, rj.lo + x});
      };
      switch (ci.kind) {
        case CollKind::Allreduce:
        case CollKind::Reduce:
        case CollKind::ReduceScatter:
          for (uint32_t j = 0; j < gsz; ++j) at(j, o);
          return;
        case CollKind::Bcast: at(static_cast<uint32_t>(gr.index_of(ci.root)), o); return;
        case CollKind::Allgather: at(blk ? o / blk : 0, o); return;
        case CollKind::Alltoall: at(blk ? o / blk : 0, static_cast<uint32_t>(gr.index_of(g_.rank(w))) * blk + (blk ? o % blk : 0)); return;
        case CollKind::Barrier: break;
      }
      in.push_back({w, buf, c});
      return;
    }
    default: return;
  }
}

// The value of node (w, buf, c) from the values of its inputs.
Encoder::Term Encoder::combine(StepId w, uint32_t buf, uint32_t c, const std::vector<Term>& in) {
  switch (g_.kind(w)) {
    case StepKind::Recv: {
      if (value_variable(w)) {
        std::string nm = "val" + std::to_string(w) + "_" + std::to_string(buf) + "_" + std::to_string(c);
        Term t{ctx_.bv_const(nm.c_str(), 64), ctx_.bool_const((nm + "d").c_str())};
        def_jobs_.push_back({w, buf, c, t});
        return t;
      }
      bool reduce = g_.flags(w) & kFlagReduce;
      if (multi_inline(w)) {
        uint32_t off = c - g_.range(w).lo;
        size_t k = reduce ? 1 : 0;
        z3::expr v = ctx_.bv_val(0, 64), d = ctx_.bool_val(false);
        for (size_t p : pairs_of_[w]) {
          if (off >= g_.range(pr_[p].second).cnt) continue;
          v = z3::ite(M_[p], in[k].v, v);
          d = z3::ite(M_[p], in[k].d, d);
          ++k;
        }
        Term got{v, d};
        return reduce ? add(in[0], got) : got;
      }
      if (in.size() < (reduce ? 2u : 1u)) return constant(0, false);  // no send can feed it: it never completes
      return reduce ? add(in[0], in[1]) : in[0];
    }
    case StepKind::Copy: return in[0];
    case StepKind::Reduce: return add(in[0], in[1]);
    case StepKind::Compute: return compute_value(w, buf, c, in);
    case StepKind::Collective: {
      if (g_.coll(w).kind == CollKind::Allreduce || g_.coll(w).kind == CollKind::Reduce || g_.coll(w).kind == CollKind::ReduceScatter) {
        Term t = in[0];
        for (size_t j = 1; j < in.size(); ++j) t = add(t, in[j]);
        return t;
      }
      return in[0];
    }
    default: return constant(0, false);
  }
}

// The value step w writes into (buf, c). Evaluated with an explicit stack (a pipeline's chain
// of forwards is as deep as the graph is long) and memoised per node.
Encoder::Term Encoder::written(StepId w, uint32_t buf, uint32_t c) {
  auto hit = memo_.find(key(w, buf, c));
  if (hit != memo_.end()) return hit->second;
  struct Frame {
    StepId w;
    uint32_t buf, c;
    std::vector<Read> in;
    std::vector<Term> got;
  };
  std::vector<Frame> stack;
  std::unordered_set<uint64_t> open;
  auto push = [&](StepId x, uint32_t b, uint32_t ch) {
    Frame f{x, b, ch, {}, {}};
    node_inputs(x, b, ch, f.in);
    stack.push_back(std::move(f));
    open.insert(key(x, b, ch));
  };
  push(w, buf, c);
  while (true) {
    Frame& f = stack.back();
    if (f.got.size() < f.in.size()) {
      const Read& r = f.in[f.got.size()];
      StepId x = prior(r.s, r.buf, r.c);
      if (x == kNoStep) {
        f.got.push_back(initial(g_.rank(r.s), r.buf, r.c));
        continue;
      }
      uint64_t k = key(x, r.buf, r.c);
      auto it = memo_.find(k);
      if (it != memo_.end()) {
        f.got.push_back(it->second);
      } else if (open.count(k) && inline_values_) {
        throw InlineCycle{};
      } else if (open.count(k)) {
        // A cycle of reads with no variable on it: every edge is one that any complete
        // execution realises (a deterministic match, a reaching definition), and no
        // execution realises a cycle, so there is no complete execution for this value to
        // matter in: any value will do.
        std::string nm = "cyc" + std::to_string(fresh_++);
        f.got.push_back(Term{ctx_.bv_const(nm.c_str(), 64), ctx_.bool_const((nm + "d").c_str())});
      } else {
        push(x, r.buf, r.c);
      }
      continue;
    }
    tick();
    Term t = combine(f.w, f.buf, f.c, f.got);
    uint64_t k = key(f.w, f.buf, f.c);
    memo_.emplace(k, t);
    open.erase(k);
    stack.pop_back();
    if (stack.empty()) return t;
    stack.back().got.push_back(t);
  }
}

// The equations of the value variables created so far (and of those their definitions create):
// the receive's value is its candidate pair's payload, for the pair that holds.
void Encoder::define_values(std::vector<z3::expr>& out) {
  while (!def_jobs_.empty()) {
    DefJob job = def_jobs_.back();
    def_jobs_.pop_back();
    uint32_t off = job.c - g_.range(job.w).lo;
    z3::expr v = ctx_.bv_val(0, 64);
    z3::expr d = ctx_.bool_val(false);
    for (size_t p : pairs_of_[job.w]) {
      StepId m = pr_[p].second;
      Range sr = g_.range(m);
      if (off >= sr.cnt) continue;
      Term pay = read(m, sr.buf, sr.lo + off);
      v = z3::ite(M_[p], pay.v, v);
      d = z3::ite(M_[p], pay.d, d);
    }
    if (g_.flags(job.w) & kFlagReduce) {
      Term prev = read(job.w, job.buf, job.c);
      v = prev.v + v;
      d = prev.d && d;
    }
    out.push_back(job.t.v == v);
    out.push_back(job.t.d == d);
  }
}

Encoder::Term Encoder::compute_value(StepId w, uint32_t buf, uint32_t c, const std::vector<Term>& in) {
  const ComputeInfo& ci = g_.compute(w);
  if (ci.kind == ComputeKind::Generic) return constant(value_hash(Value::contrib(buf, g_.rank(w), c)), true);
  const Range* wr = g_.ranges.data() + ci.writes_off;
  const Term& prev = in[0];
  // Which item each operand holds (of whichever buffer it was initialised in: an item keeps
  // its identity wherever it is copied), only when its value does not depend on a wildcard
  // match.
  auto item_of = [&](const Term& t, uint32_t& home) -> int64_t {
    if (!t.known) {
      note_ = "an attention operand depends on a wildcard match: tiles are taken as in the explicit engine";
      return -2;
    }
    if (items_by_hash_.empty())
      for (uint32_t b = 0; b < g_.buffers.size(); ++b)
        for (uint32_t i = 0; i < g_.buffers[b].chunks; ++i) items_by_hash_.emplace(value_hash(Value::item(b, i)), std::make_pair(b, i));
    auto it = items_by_hash_.find(t.kv);
    if (it == items_by_hash_.end()) return -1;
    home = it->second.first;
    return it->second.second;
  };
  uint32_t kv_home = 0, v_home = 0;
  int64_t m = item_of(in[1], kv_home);
  if (m < 0) return prev;                                       // a bad operand adds nothing (the interpreter reports it)
  if (ci.split_kv && item_of(in[2], v_home) != m) return prev;  // V must hold the item K holds
  bool is_out0 = buf == wr[0].buf && c >= wr[0].lo && c < wr[0].lo + wr[0].cnt;
  auto u = [](int64_t x) { return static_cast<uint32_t>(x); };
  Term t = prev;
  for (size_t k = ci.split_kv ? 3 : 2; k < in.size(); ++k) {
    uint32_t q_home = 0;
    int64_t i = item_of(in[k], q_home);
    if (i < 0) continue;
    Run run;
    if (ci.kind == ComputeKind::Attn) run = Run{AtomKind::Attn, ci.mask, q_home, u(i), u(m), u(m + 1), 1};
    else if (is_out0) run = Run{AtomKind::GradQ, ci.mask, q_home, u(i), u(m), u(m + 1), 1};
    else if (ci.split_kv && buf == wr[2].buf && c >= wr[2].lo && c < wr[2].lo + wr[2].cnt)
      run = Run{AtomKind::GradV, ci.mask, v_home, u(m), u(i), u(i + 1), 1};  // dV: the V half, atoms of v(m)
    else run = Run{AtomKind::GradKV, ci.mask, kv_home, u(m), u(i), u(i + 1), 1};
    t = add(t, constant(atom_hash(run, run.lo), true));
  }
  return t;
}

}  // namespace sg::verify::detail

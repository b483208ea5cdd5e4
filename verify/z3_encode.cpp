// The Z3 engine's encoding (see z3_engine.cpp for the model): the step graph as constraints over
// issue and completion times and candidate send/receive pairs, and the maximality of stuck
// states. Apart from the queries that use it; members of the Encoder of z3_engine_impl.hpp.
#include <z3++.h>

#include <string>
#include <vector>

#include "core/graph/match_queues.hpp"
#include "verify/z3_engine_impl.hpp"

namespace sg::verify::detail {

z3::expr Encoder::conj(const std::vector<z3::expr>& v) {
  if (v.empty()) return ctx_.bool_val(true);
  z3::expr_vector ev(ctx_);
  for (const auto& e : v) ev.push_back(e);
  return z3::mk_and(ev);
}

z3::expr Encoder::disj(const std::vector<z3::expr>& v) {
  if (v.empty()) return ctx_.bool_val(false);
  z3::expr_vector ev(ctx_);
  for (const auto& e : v) ev.push_back(e);
  return z3::mk_or(ev);
}

z3::expr Encoder::matched(StepId s) {
  std::vector<z3::expr> v;
  for (size_t p : pairs_of_[s]) v.push_back(M_[p]);
  return disj(v);
}

// Enabled: every dependency allows the step to start.
z3::expr Encoder::enabled(StepId s) {
  std::vector<z3::expr> v;
  for (StepId d : g_.deps(s)) v.push_back(g_.nonblocking(d) ? I_[d] : D_[d]);
  return conj(v);
}

void Encoder::build() {
  for (StepId s = 0; s < n_; ++s) {
    tick();
    std::string k = std::to_string(s);
    I_.push_back(ctx_.bool_const(("I" + k).c_str()));
    D_.push_back(ctx_.bool_const(("D" + k).c_str()));
    t_.push_back(ctx_.int_const(("t" + k).c_str()));
    c_.push_back(ctx_.int_const(("c" + k).c_str()));
  }
  // Candidate pairs, computed from MPI's rules here rather than taken from the match pass.
  // A queue no wildcard receive contests (core/graph/match_queues.hpp) pairs its k-th receive with its
  // k-th send only: the non-overtaking and posted-order constraints below imply it (if
  // receive j took send i, sends 1..i-1 went to receives posted before j, and receives 1..j-1
  // took sends before i, so i = j), and stating it keeps deterministic programs (rings,
  // pipelines on one tag) free of the N-squared candidate pairs and the cubic ordering
  // constraints that would follow. Elsewhere every compatible pair is a candidate.
  pairs_of_.assign(n_, {});
  P2PEnds ends = p2p_ends(g_);
  queue_ = queue_partners(g_);
  const std::vector<StepId>& queue = queue_;
  auto add_pair = [&](StepId r, StepId m) {
    if (!p2p_compatible(g_, r, m)) return;
    size_t idx = pr_.size();
    pr_.push_back({r, m});
    std::string name = "M";  // appended: "M" + std::to_string(r) + … draws GCC 12's false -Wrestrict
    name += std::to_string(r);
    name += '_';
    name += std::to_string(m);
    M_.push_back(ctx_.bool_const(name.c_str()));
    pairs_of_[r].push_back(idx);
    pairs_of_[m].push_back(idx);
  };
  for (auto& [dst, sr] : ends) {
    for (StepId r : sr.second) {
      tick();
      if (queue[r] == kQueueContested || !o_.fixed_queues) {
        for (StepId m : sr.first) add_pair(r, m);
      } else if (queue[r] != kNoStep) {
        add_pair(r, queue[r]);
      }
    }
  }
  if (pr_.size() > o_.max_pairs) {
    note_ = "too many candidate pairs";
    throw Timeout{};
  }
  // Waits completing each nonblocking operation.
  wait_of_.assign(n_, kNoStep);
  for (StepId s = 0; s < n_; ++s)
    if (g_.kind(s) == StepKind::Wait)
      for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) wait_of_[*h] = s;

  std::vector<z3::expr> base;
  for (StepId s = 0; s < n_; ++s) {
    tick();
    std::vector<z3::expr> pre;
    for (StepId d : g_.deps(s)) {
      if (g_.nonblocking(d)) pre.push_back(I_[d] && t_[d] < t_[s]);
      else pre.push_back(D_[d] && c_[d] < t_[s]);
    }
    base.push_back(z3::implies(I_[s], conj(pre)));
    base.push_back(z3::implies(D_[s], I_[s] && t_[s] <= c_[s]));
    base.push_back(t_[s] >= 0);
    switch (g_.kind(s)) {
      case StepKind::Send:
        if (p2p(s) && mode_ == SendMode::Rendezvous) {
          std::vector<z3::expr> v;
          // It completes when its receive takes it (the receive's completion), not before.
          for (size_t p : pairs_of_[s]) v.push_back(M_[p] && c_[pr_[p].first] <= c_[s]);
          base.push_back(z3::implies(D_[s], disj(v)));
        }
        break;
      case StepKind::Recv:
        if (!p2p(s)) {
          StepId m = g_.ref(s);
          base.push_back(z3::implies(D_[s], I_[m] && t_[m] < c_[s]));
        } else {
          base.push_back(D_[s] == matched(s));
        }
        break;
      case StepKind::Wait: {
        std::vector<z3::expr> v;
        for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) v.push_back(D_[*h] && c_[*h] <= c_[s]);
        base.push_back(z3::implies(D_[s], conj(v)));
        break;
      }
      case StepKind::Collective: {
        const Instance& in = g_.instances[g_.coll(s).instance];
        if (!in.complete || !in.consistent) {
          base.push_back(!D_[s]);
          break;
        }
        std::vector<z3::expr> v;
        for (uint32_t k = 0; k < in.steps_cnt; ++k) {
          StepId x = g_.instance_steps[in.steps_off + k];
          v.push_back(I_[x] && t_[x] <= c_[s]);
        }
        base.push_back(z3::implies(D_[s], conj(v)));
        break;
      }
      default: break;
    }
  }
  // Matching: a pair needs both ends, the send issued before the receive completes; at most
  // one pair per end.
  for (size_t p = 0; p < pr_.size(); ++p) {
    tick();
    auto [r, m] = pr_[p];
    base.push_back(z3::implies(M_[p], I_[r] && I_[m] && t_[m] < c_[r]));
  }
  for (StepId s = 0; s < n_; ++s) {
    tick();
    const auto& ps = pairs_of_[s];
    for (size_t i = 0; i < ps.size(); ++i)
      for (size_t j = i + 1; j < ps.size(); ++j) base.push_back(!(M_[ps[i]] && M_[ps[j]]));
  }
  // MPI's matching order, with the times at which receives take their messages (c_r):
  //  - non-overtaking: a receive takes a later message of a source only if the earlier one it
  //    also matches was already taken, by a receive posted before it;
  //  - posted order: a message goes to the earliest posted receive that matches it, so a
  //    receive takes a message another, earlier posted receive matches only if that one had
  //    already taken something.
  for (size_t p = 0; p < pr_.size(); ++p) {
    tick();
    auto [r, m2] = pr_[p];
    for (size_t q : pairs_of_[r]) {
      StepId m1 = pr_[q].second;
      if (m1 >= m2 || g_.rank(m1) != g_.rank(m2)) continue;  // m1 earlier from the same source
      std::vector<z3::expr> earlier;
      for (size_t e : pairs_of_[m1])
        if (pr_[e].first < r) earlier.push_back(M_[e] && c_[pr_[e].first] < c_[r]);
      base.push_back(z3::implies(M_[p], disj(earlier)));
    }
    StepId r2 = r;
    for (size_t q : pairs_of_[m2]) {
      StepId r1 = pr_[q].first;
      if (r1 >= r2 || g_.rank(r1) != g_.rank(r2)) continue;
      base.push_back(z3::implies(M_[p], matched(r1) && c_[r1] < c_[r2]));
    }
  }
  // Counting, implied by the above but stated so the solver reasons with numbers instead of
  // enumerating matchings (proving "nine messages cannot all find one of eight receives" by
  // case analysis is exponential): per destination and communicator, as many receives are
  // matched as sends.
  // Without wildcards every receive has at most one candidate, so the counts are trivially
  // equal, and every time constraint is a difference of two times: Z3's difference-logic
  // solver decides those several times faster than its general arithmetic (and, were an
  // atom not a difference, it would answer unknown, never a wrong sat or unsat).
  bool wildcards = false;
  for (StepId s = 0; s < n_ && !wildcards; ++s) wildcards = p2p(s) && (g_.flags(s) & (kFlagAnySource | kFlagAnyTag));
  if (!wildcards) {
    params_.set("arith.solver", 1u);
    solver_.set(params_);
  }
  for (auto& [key, sr] : ends) {
    if (!wildcards) break;
    std::vector<z3::expr> rs, ms;
    for (StepId r : sr.second) rs.push_back(z3::ite(matched(r), ctx_.int_val(1), ctx_.int_val(0)));
    for (StepId m : sr.first) ms.push_back(z3::ite(matched(m), ctx_.int_val(1), ctx_.int_val(0)));
    if (rs.empty() || ms.empty()) continue;
    z3::expr_vector rv(ctx_), mv(ctx_);
    for (auto& e : rs) rv.push_back(e);
    for (auto& e : ms) mv.push_back(e);
    base.push_back(z3::sum(rv) == z3::sum(mv));
  }
  phase("constraints");
  for (const auto& e : base) solver_.add(e);
  phase("added");

  // Maximality (a stuck or finished state), kept aside for the queries that need it.
  for (StepId s = 0; s < n_; ++s) {
    tick();
    stuck_.push_back(z3::implies(enabled(s), I_[s]));
    switch (g_.kind(s)) {
      case StepKind::Send:
        if (p2p(s) && mode_ == SendMode::Rendezvous) stuck_.push_back(z3::implies(I_[s] && matched(s), D_[s]));
        else stuck_.push_back(z3::implies(I_[s], D_[s]));
        break;
      case StepKind::Recv:
        if (!p2p(s)) stuck_.push_back(z3::implies(I_[s] && I_[g_.ref(s)], D_[s]));
        break;
      case StepKind::Wait: {
        std::vector<z3::expr> v;
        for (const StepId* h = g_.handles_begin(s); h != g_.handles_end(s); ++h) v.push_back(D_[*h]);
        stuck_.push_back(z3::implies(I_[s] && conj(v), D_[s]));
        break;
      }
      case StepKind::Collective: {
        const Instance& in = g_.instances[g_.coll(s).instance];
        if (!in.complete || !in.consistent) break;
        std::vector<z3::expr> v;
        for (uint32_t k = 0; k < in.steps_cnt; ++k) v.push_back(I_[g_.instance_steps[in.steps_off + k]]);
        stuck_.push_back(z3::implies(I_[s] && conj(v), D_[s]));
        break;
      }
      default: stuck_.push_back(z3::implies(I_[s], D_[s])); break;
    }
  }
  // No receive is left waiting beside a message it could take.
  for (size_t p = 0; p < pr_.size(); ++p) {
    tick();
    auto [r, m] = pr_[p];
    stuck_.push_back(!(I_[r] && !matched(r) && I_[m] && !matched(m)));
  }
}

}  // namespace sg::verify::detail

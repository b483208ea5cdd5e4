// The elaborator's statement dispatch and control flow: blocks (with the work count), let, if,
// require, for loops (multiplied when counting, or only one rank's iterations of a ring), `on`
// blocks and calls of other schedules. Apart from the statements that declare buffers or emit
// steps (elaborate_declarations.cpp, elaborate_operations.cpp), which it dispatches to.
#include "core/graph/elaborate_impl.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/base/checked.hpp"
#include "core/dsl/printer.hpp"
#include "core/dsl/resolve.hpp"

namespace sg::elab::detail {

// Counts one statement or loop iteration; counting stops when the work beyond the steps built
// passes ElabOptions::max_work, at the outermost loop running (a build runs only after its
// count passed). Steps are bounded by the memory limit instead.
void Elaborator::tick(const Stmt& st) {
  if (++est.work > sat_add(opts_.max_work, est.steps) && mode_ == Mode::Count) {
    est.too_much_work = true;
    est.work_loc = loop_stmts_.empty() ? st.loc : loop_stmts_.front()->loc;
    throw Abort{};
  }
}

// The schedule's own statements: as block(), and before a top-level `on` block, what its ranks
// may release after their part (release()).
void Elaborator::top_block(const Block& b, Frame& f) {
  for (size_t i = 0; i < b.size(); ++i) {
    const Stmt& st = *b[i];
    if (mode_ == Mode::Build && me_ < 0 && st.kind == StmtKind::On) dead_after_on_ = dead_after(b, i, f);
    tick(st);
    try {
      stmt(st, f);
    } catch (const EvalError& e) {
      dead_after_on_.clear();
      report(st, e);
    }
    dead_after_on_.clear();
  }
}

void Elaborator::block(const Block& b, Frame& f) {
  for (const auto& st : b) {
    tick(*st);
    try {
      stmt(*st, f);
    } catch (const EvalError& e) {
      report(*st, e);
    }
  }
}

void Elaborator::stmt(const Stmt& st, Frame& f) {
  // Only a program with parse errors holds one (a callee in a library folder being edited, see
  // STEPGRAPH_LIBRARY): say so here too, since a later N no longer sees the parse error.
  if (st.erroneous) {
    diags_.error(st.loc, "this declaration has a syntax error; the schedule cannot be elaborated", st.length);
    throw Abort{};
  }
  switch (st.kind) {
    case StmtKind::Let: {
      auto& s = static_cast<const LetStmt&>(st);
      f.slots[static_cast<size_t>(s.slot)] = eval(*s.value, f);
      break;
    }
    case StmtKind::For: exec_for(static_cast<const ForStmt&>(st), f); break;
    case StmtKind::If: {
      auto& s = static_cast<const IfStmt&>(st);
      if (ev(*s.cond, f)) block(s.then_body, f);
      else block(s.else_body, f);
      break;
    }
    case StmtKind::Require: {
      // A failed `require` means the schedule does not apply: report it alone, marked
      // unsupported, and stop. Counting stops there too, so an N the schedule refuses is
      // reported as such rather than sized (and perhaps refused as too big).
      auto& s = static_cast<const RequireStmt&>(st);
      if (!ev(*s.cond, f)) {
        if (mode_ == Mode::Build)
          add_error(st, EvalError{st.loc, st.length,
                                  (s.message.empty() ? "requirement failed" : s.message) + " (require " + print_cond(s) +
                                      " with N = " + std::to_string(n_) + ")"})
              .unsupported = true;
        throw Abort{};
      }
      break;
    }
    case StmtKind::Buffer: buffer(static_cast<const BufferStmt&>(st), f); break;
    case StmtKind::Init:
      if (mode_ == Mode::Build) init(static_cast<const InitStmt&>(st), f);
      break;
    case StmtKind::Expect:
      if (mode_ == Mode::Build) expect(static_cast<const ExpectStmt&>(st), f);
      break;
    case StmtKind::Send: send(static_cast<const SendStmt&>(st), f); break;
    case StmtKind::P2P: p2p(static_cast<const P2PStmt&>(st), f); break;
    case StmtKind::Wait: wait(static_cast<const WaitStmt&>(st), f); break;
    case StmtKind::Copy: copy(static_cast<const CopyStmt&>(st), f); break;
    case StmtKind::Compute: compute(static_cast<const ComputeStmt&>(st), f); break;
    case StmtKind::Coll: coll(static_cast<const CollStmt&>(st), f); break;
    case StmtKind::On: on(static_cast<const OnStmt&>(st), f); break;
    case StmtKind::Call: call(static_cast<const CallStmt&>(st), f); break;
  }
}

std::string Elaborator::print_cond(const RequireStmt& s) { return print_expr(*s.cond); }

// Keeps the loop variables in scope for error messages, and pops them however the loop ends.
struct Elaborator::LoopScope {
  LoopScope(Elaborator& e, const std::string& var, Frame& f, int32_t slot, const Stmt* loop) : e_(e), loop_(loop) {
    e_.loops_.push_back({&var, &f, slot});
    if (loop_) e_.loop_stmts_.push_back(loop_);
  }
  ~LoopScope() {
    e_.loops_.pop_back();
    if (loop_) e_.loop_stmts_.pop_back();
  }
  Elaborator& e_;
  const Stmt* loop_;
};

void Elaborator::exec_for(const ForStmt& s, Frame& f) {
  int64_t lo = ev(*s.lo, f), hi = ev(*s.hi, f), step = s.step ? ev(*s.step, f) : 1;
  if (step == 0) fail(s.step->loc, s.step->length, "a loop step must not be zero");
  uint64_t iters = 0;
  if (step > 0 && hi > lo) iters = static_cast<uint64_t>((hi - lo - 1) / step + 1);
  if (step < 0 && lo > hi) iters = static_cast<uint64_t>((lo - hi - 1) / -step + 1);
  if (iters == 0) return;
  auto& var = f.slots[static_cast<size_t>(s.slot)];
  LoopScope scope(*this, s.var, f, s.slot, &s);
  bool invariant = me_ >= 0 || set_ ? s.count_invariant_rank : s.count_invariant;
  if (mode_ == Mode::Count && invariant && iters > 1) {
    // Every iteration emits as many steps as the first: count one, multiply.
    SizeEstimate before = est;
    var = Val{false, lo, {}};
    block(s.body, f);
    auto scale = [&](uint64_t SizeEstimate::*m) { est.*m = sat_add(before.*m, sat_mul(est.*m - before.*m, iters)); };
    scale(&SizeEstimate::steps);
    scale(&SizeEstimate::transfers);
    scale(&SizeEstimate::p2p);
    scale(&SizeEstimate::collectives);
    scale(&SizeEstimate::computes);
    scale(&SizeEstimate::work);
    est.work = sat_add(est.work, iters);  // the iterations themselves, as the build will run them
    if (est.work > sat_add(opts_.max_work, est.steps)) {
      est.too_much_work = true;
      est.work_loc = loop_stmts_.front()->loc;
      throw Abort{};
    }
  } else {
    std::vector<int64_t> only;
    if (me_ >= 0 && step == 1 && one_rank_iterations(s, f, lo, hi, only)) {
      // One rank's program: only the iterations whose transfer starts or ends here (counted so
      // too: a ring's N² iterations at N = 65,536 were past the work limit, for 4 N steps).
      for (int64_t v : only) {
        var = Val{false, v, {}};
        block(s.body, f);
      }
      return;
    }
    int64_t v = lo;
    for (uint64_t k = 0; k < iters; ++k, v += step) {
      tick(s);  // an iteration is work even when its body is empty or skipped
      var = Val{false, v, {}};
      block(s.body, f);
    }
  }
}

// Whether e reads frame slot `slot`.
bool Elaborator::uses_slot(const Expr& e, int32_t slot) {
  std::vector<int32_t> used;
  expr_slots(&e, used);
  return std::find(used.begin(), used.end(), slot) != used.end();
}

// The values v in [lo, hi) of loop slot `slot` for which endpoint e equals this rank, when e has
// one of the forms a ring writes: v, or (v ± c) % M, or (c − v) % M (c and M free of v);
// false when e has another form.
bool Elaborator::solve_endpoint(const Expr& e, int32_t slot, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out) {
  if (e.kind == ExprKind::Var && e.slot == slot) {
    if (me_ >= lo && me_ < hi) out.push_back(me_);
    return true;
  }
  if (e.kind != ExprKind::Binary || e.bop != BinOp::Mod || uses_slot(*e.args[1], slot)) return false;
  const Expr& x = *e.args[0];
  if (x.kind != ExprKind::Binary || (x.bop != BinOp::Add && x.bop != BinOp::Sub)) return false;
  const Expr& l = *x.args[0];
  const Expr& r = *x.args[1];
  bool l_is_v = l.kind == ExprKind::Var && l.slot == slot, r_is_v = r.kind == ExprKind::Var && r.slot == slot;
  int64_t m = ev(*e.args[1], f);
  if (m <= 0) return false;  // the general path reports a zero modulus
  int64_t residue;
  if (l_is_v && !uses_slot(r, slot)) {  // (v + c) % M or (v - c) % M
    int64_t c = ev(r, f);
    residue = x.bop == BinOp::Add ? me_ - c : me_ + c;
  } else if (r_is_v && !uses_slot(l, slot)) {  // (c + v) % M or (c - v) % M
    int64_t c = ev(l, f);
    if (x.bop == BinOp::Add) residue = me_ - c;
    else residue = c - me_;
  } else {
    return false;
  }
  if (me_ >= m) return true;  // a % M is never this rank
  residue = ((residue % m) + m) % m;
  int64_t first = lo + ((residue - lo) % m + m) % m;
  for (int64_t v = first; v < hi; v += m) out.push_back(v);
  return true;
}

// For a loop whose body is one choreographic transfer with endpoints solve_endpoint can
// invert, the iterations that concern this rank, in order. The others would evaluate two rank
// expressions and emit nothing: at N = 4,096 a ring's N² of them were most of the work.
bool Elaborator::one_rank_iterations(const ForStmt& s, Frame& f, int64_t lo, int64_t hi, std::vector<int64_t>& out) {
  if (s.body.size() != 1 || s.body[0]->kind != StmtKind::Send || in_on_) return false;
  const auto& send = static_cast<const SendStmt&>(*s.body[0]);
  try {
    if (!solve_endpoint(*send.from, s.slot, f, lo, hi, out) || !solve_endpoint(*send.to, s.slot, f, lo, hi, out)) return false;
  } catch (const EvalError&) {
    return false;  // the general path reports it where it happens
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return true;
}

void Elaborator::on(const OnStmt& s, Frame& f) {
  if (in_on_) fail(s.loc, s.length, "'on' blocks cannot be nested");
  auto body = [&](uint32_t r) {
    in_on_ = true;
    on_rank_ = r;
    try {
      block(s.body, f);
    } catch (...) {
      in_on_ = false;
      throw;
    }
    in_on_ = false;
    if (!dead_after_on_.empty()) release(r);
  };
  if (s.rank) {
    uint32_t r = rank_of(*s.rank, f, "'on'");
    if (mode_ == Mode::Count && !mine(r)) return;
    body(r);
    return;
  }
  int64_t lo = ev(*s.lo, f), hi = ev(*s.hi, f), step = s.step ? ev(*s.step, f) : 1;
  if (step == 0) fail(s.step->loc, s.step->length, "a rank range step must not be zero");
  auto& var = f.slots[static_cast<size_t>(s.slot)];
  LoopScope scope(*this, s.var, f, s.slot, nullptr);
  for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
    if (v < 0 || v >= n_) {
      var = Val{false, v, {}};
      fail(s.lo->loc, s.lo->length, "'on' rank out of range (rank " + std::to_string(v) + ", valid 0 .. " + std::to_string(n_ - 1) + ")");
    }
    if (!mine(static_cast<uint32_t>(v))) continue;  // some ranks' programs: the other ranks' blocks are skipped
    var = Val{false, v, {}};
    body(static_cast<uint32_t>(v));
  }
}

void Elaborator::call(const CallStmt& s, Frame& f) {
  if (in_on_) fail(s.loc, s.length, "'call' cannot appear inside an 'on' block");
  if (f.depth >= kMaxCallDepth) fail(s.loc, s.length, "calls nested deeper than 64 (recursion without end?)");
  Target t = ses_.find_callee(*f.prog, s.callee);
  if (!t.schedule)
    fail(s.callee_loc, static_cast<uint32_t>(s.callee.size()), "unknown schedule '" + s.callee + "' (not in this file nor in the library)");
  const Schedule& c = *t.schedule;
  Frame nf;
  nf.prog = t.program;
  nf.sched = &c;
  nf.slots.resize(c.num_slots);
  nf.bufs.resize(c.num_buffers);
  nf.group = f.group;
  nf.group_id = f.group_id;
  nf.prefix = f.prefix + c.name + ".";
  nf.depth = f.depth + 1;
  std::vector<bool> set(c.params.size(), false);
  size_t positional = 0;
  for (const auto& a : s.args) {
    if (!a.key.empty()) {
      auto it = std::find_if(c.params.begin(), c.params.end(), [&](const Param& p) { return p.name == a.key; });
      if (it == c.params.end() || it->kind != ParamKind::Int)
        fail(a.loc, static_cast<uint32_t>(a.key.size()), "schedule '" + c.name + "' has no integer parameter '" + a.key + "'");
      size_t i = static_cast<size_t>(it - c.params.begin());
      if (set[i]) fail(a.loc, static_cast<uint32_t>(a.key.size()), "parameter '" + a.key + "' is given twice");
      nf.slots[static_cast<size_t>(it->slot)] = Val{false, ev(*a.value, f), {}};
      set[i] = true;
      continue;
    }
    // Positional: the next group or buffer parameter.
    while (positional < c.params.size() && c.params[positional].kind == ParamKind::Int) ++positional;
    if (positional >= c.params.size())
      fail(a.loc, 1, "too many arguments for schedule '" + c.name + "' (pass integer parameters as key = value)");
    const Param& p = c.params[positional];
    if (p.kind == ParamKind::Group) {
      if (a.ref.present() && !a.bare_name)
        fail(a.loc, a.ref.length, "parameter '" + p.name + "' of '" + c.name + "' is a group, not a buffer");
      GroupInfo gr = gev(*a.value, f);
      nf.slots[static_cast<size_t>(p.slot)] = Val{true, 0, gr};
      nf.group = gr;
      nf.group_id = g_->intern_group(gr);
    } else {
      if (!a.ref.present()) fail(a.loc, 1, "parameter '" + p.name + "' of '" + c.name + "' is a buffer");
      Range r = ref(a.ref, f);
      nf.bufs[static_cast<size_t>(p.slot)] = View{r.buf, r.lo, r.cnt, true, false, kNil};
    }
    set[positional] = true;
    ++positional;
  }
  for (size_t i = 0; i < c.params.size(); ++i) {
    const Param& p = c.params[i];
    if (set[i]) continue;
    if (p.kind != ParamKind::Int)
      fail(s.loc, s.length,
           "missing argument for " + std::string(p.kind == ParamKind::Group ? "group" : "buffer") + " parameter '" + p.name + "' of '" +
               c.name + "'");
    if (!p.def) fail(s.loc, s.length, "missing value for parameter '" + p.name + "' of '" + c.name + "' (pass " + p.name + " = …)");
    nf.slots[static_cast<size_t>(p.slot)] = Val{false, ev(*p.def, nf), {}};
  }
  block(c.body, nf);
}

}  // namespace sg::elab::detail

// Elaboration's entry points (core/graph/elaborate.hpp): estimate_size and elaborate, the
// driver that runs an Elaborator over a schedule (run), how evaluation errors become
// diagnostics, and the schedule's top-level parameters (defaults and --set values). The
// Elaborator's other parts are in the elaborate_*.cpp files (see elaborate_impl.hpp).
#include "core/graph/elaborate.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/checked.hpp"
#include "core/base/sizes.hpp"
#include "core/dsl/parser.hpp"
#include "core/graph/elaborate_impl.hpp"

namespace sg::elab::detail {

Elaborator::Elaborator(Session& s, const ElabOptions& o, Mode m)
    : ses_(s), opts_(o), mode_(m), diags_(m == Mode::Build ? s.diags : quiet_) {
  n_ = o.nranks;
  me_ = o.only_rank;
  rank_slots_ = me_ >= 0 ? 1 : n_;
  if (me_ < 0 && !o.only_ranks.empty()) {
    set_ = true;
    slot_of_.assign(n_, -1);
    for (size_t i = 0; i < o.only_ranks.size(); ++i)
      if (o.only_ranks[i] < n_) slot_of_[o.only_ranks[i]] = static_cast<int32_t>(i);
    rank_slots_ = static_cast<uint32_t>(o.only_ranks.size());
  }
  if (mode_ == Mode::Build) {
    g_ = std::make_unique<StepGraph>();
    g_->nranks = n_;
    g_->only_rank = me_;
    if (set_) g_->built_ranks = o.only_ranks;
  } else {
    g_ = std::make_unique<StepGraph>();  // holds buffers and groups while counting
  }
  ranks_.resize(mode_ == Mode::Build ? rank_slots_ : 0);
}

bool Elaborator::run(const Target& t, uint64_t reserve_steps) {
  const Schedule& s = *t.schedule;
  errors_at_start_ = diags_.error_count();  // the session's diagnostics may hold earlier runs'
  if (n_ == 0) {
    diags_.error(s.loc, "the number of ranks must be at least 1", static_cast<uint32_t>(s.name.size()));
    return false;
  }
  if (s.callable_only()) {
    auto& d = diags_.error(s.loc, "schedule '" + s.name + "' takes group or buffer parameters: it can only be called",
                           static_cast<uint32_t>(s.name.size()));
    d.notes.push_back({Loc{}, "write a schedule that declares the buffers and uses `call " + s.name + "(…)`"});
    return false;
  }
  g_->schedule = s.name;
  g_->file = ses_.sources.file(t.program->file).name();
  schedule_loc_ = s.loc;
  schedule_len_ = static_cast<uint32_t>(s.name.size());
  if (mode_ == Mode::Build && reserve_steps) g_->reserve(reserve_steps, reserve_steps + reserve_steps / 4);
  Frame f;
  f.prog = t.program;
  f.sched = &s;
  f.slots.resize(s.num_slots);
  f.bufs.resize(s.num_buffers);
  f.group = GroupInfo{0, n_, 1};
  f.group_id = g_->intern_group(f.group);
  try {
    bind_top_params(s, f);
    if (errors()) return false;
    top_block(s.body, f);
  } catch (const Abort&) {
    return false;
  }
  if (mode_ == Mode::Build) {
    g_->stmt_locs = ses_.stmt_locs;
    check_inits();
    g_->shrink_dep_offsets();
  }
  return !errors();
}

std::string Elaborator::context() const {
  std::string s;
  for (const auto& [name, frame, slot] : loops_) {
    s += s.empty() ? "with " : ", ";
    s += *name + " = " + std::to_string(frame->slots[static_cast<size_t>(slot)].i);
  }
  return s;
}

Diagnostic& Elaborator::add_error(const Stmt& st, const EvalError& e) {
  std::string msg = e.msg;
  std::string ctx = context();
  if (!ctx.empty()) {
    if (!msg.empty() && msg.back() == ')') msg.insert(msg.size() - 1, "; " + ctx);
    else msg += " (" + ctx + ")";
  }
  Loc loc = e.loc.valid() ? e.loc : st.loc;
  return diags_.error(loc, msg, e.loc.valid() ? e.length : st.length);
}

void Elaborator::report(const Stmt& st, const EvalError& e) {
  add_error(st, e);
  if (diags_.too_many()) throw Abort{};
}

void Elaborator::bind_top_params(const Schedule& s, Frame& f) {
  std::vector<bool> used(opts_.sets.size(), false);
  for (const auto& p : s.params) {
    const std::pair<std::string, std::string>* set = nullptr;
    for (size_t i = 0; i < opts_.sets.size(); ++i)
      if (opts_.sets[i].first == p.name) set = &opts_.sets[i], used[i] = true;
    try {
      if (set) {
        f.slots[static_cast<size_t>(p.slot)] = Val{false, set_value(*set), {}};
        g_->params.emplace_back(p.name, f.slots[static_cast<size_t>(p.slot)].i);
      } else if (p.def) {
        f.slots[static_cast<size_t>(p.slot)] = Val{false, ev(*p.def, f), {}};
        g_->params.emplace_back(p.name, f.slots[static_cast<size_t>(p.slot)].i);
      } else {
        diags_.error(p.loc, "parameter '" + p.name + "' of '" + s.name + "' has no default: give it with --set " + p.name + "=…",
                     static_cast<uint32_t>(p.name.size()));
      }
    } catch (const EvalError& e) {
      diags_.error(e.loc, e.msg, e.length);
    }
  }
  for (size_t i = 0; i < opts_.sets.size(); ++i) {
    if (used[i]) continue;
    std::string names;
    for (const auto& p : s.params) names += (names.empty() ? "" : ", ") + p.name;
    auto& d = diags_.error(
        s.loc, "unknown parameter '" + opts_.sets[i].first + "' (--set " + opts_.sets[i].first + "=" + opts_.sets[i].second + ")",
        static_cast<uint32_t>(s.name.size()));
    d.notes.push_back(
        {Loc{}, "schedule '" + s.name + "' takes " + (names.empty() ? std::string("no parameters") : "parameters: " + names)});
  }
}

int64_t Elaborator::set_value(const std::pair<std::string, std::string>& kv) {
  uint32_t file = ses_.sources.add("--set " + kv.first, kv.second);
  uint64_t before = diags_.error_count();
  auto e = parse_expression(ses_.sources, file, diags_);
  if (!e) {
    if (diags_.error_count() > before) return 0;  // the parser said what is wrong
    throw EvalError{Loc{file, 1, 1}, 1, "bad value for --set " + kv.first};
  }
  Frame empty;
  fix_names(*e, file);
  return ev(*e, empty);
}

// A --set value may only use N.
void Elaborator::fix_names(Expr& e, uint32_t file) {
  if (e.kind == ExprKind::Var) {
    if (e.name == "N") e.slot = -2;
    else throw EvalError{e.loc, static_cast<uint32_t>(e.name.size()), "a --set value may only use numbers and N (found '" + e.name + "')"};
  }
  if (e.kind == ExprKind::GroupAt || e.kind == ExprKind::Ranks || e.kind == ExprKind::World ||
      (e.kind == ExprKind::Func && e.fn == Func::Size))
    throw EvalError{e.loc, e.length, "a --set value must be an integer"};
  for (auto& a : e.args) fix_names(*a, file);
}

}  // namespace sg::elab::detail

namespace sg {

using elab::detail::Elaborator;
using elab::detail::Mode;

std::string unsupported_reason(const Diagnostic& d) {
  // The elaborator writes "MESSAGE (require COND with N = n[; context])": the last " (require ".
  size_t k = d.message.rfind(" (require ");
  return k == std::string::npos ? d.message : d.message.substr(0, k);
}

SizeEstimate estimate_size(Session& session, const Target& target, const ElabOptions& opts) {
  Elaborator e(session, opts, Mode::Count);
  bool ok = e.run(target, 0);
  SizeEstimate est = e.est;
  est.ok = ok && !est.too_much_work;
  // Steps and one dependency each, plus the hazard state, plus slack for side tables.
  // Saturating: a count past 2^64 must still read as too big, not wrap to a small number.
  est.bytes = sat_add(sat_add(sat_mul(est.steps, StepGraph::kBytesPerStep), est.hazard_bytes),
                      sat_add(sat_mul(est.p2p, sizeof(P2PInfo)), uint64_t{16} << 20));
  // (Compute and collective entries are shared: one per distinct work and one per instance, not
  // one a step. Where they are not, the build's own watch refuses: Elaborator::watch_memory.)
  return est;
}

std::unique_ptr<StepGraph> elaborate(Session& session, const Target& target, const ElabOptions& opts, SizeEstimate* out) {
  SizeEstimate est = estimate_size(session, target, opts);
  if (out) *out = est;
  const Schedule& s = *target.schedule;
  if (est.too_much_work) {
    session.diags.error(
        est.work_loc,
        "elaboration would run more than " + with_commas(opts.max_work) +
            " statements or loop iterations beyond the steps it builds (a loop far longer than the steps it emits?); refusing to "
            "build (N = " +
            std::to_string(opts.nranks) + ")",
        3);
    return nullptr;
  }
  uint64_t later = opts.consumer_bytes ? opts.consumer_bytes(est, opts.nranks) : 0;
  uint64_t need = sat_add(est.bytes, later);
  if (est.steps >= 0xfffffff0ULL || (opts.max_memory && need > opts.max_memory)) {
    if (out) out->too_big = true;
    auto& d = session.diags.error(s.loc,
                                  "instance too big to build: " + with_commas(est.steps) + " steps (" + with_commas(est.transfers) +
                                      " transfers) for N = " + std::to_string(opts.nranks) + " would need about " + human_bytes(need) +
                                      (later ? std::string(" (") + human_bytes(later) + " of it for " + opts.consumer + ")" : "") +
                                      (est.steps >= 0xfffffff0ULL ? " and more than 2^32 step ids" : ""),
                                  static_cast<uint32_t>(s.name.size()));
    if (opts.max_memory)
      d.notes.push_back(
          {Loc{}, "the memory limit is " + human_bytes(opts.max_memory) + " (--max-memory); use fewer ranks, or raise the limit"});
    return nullptr;
  }
  Elaborator e(session, opts, Mode::Build);
  e.budget(est.steps, later);
  if (!e.run(target, est.ok ? est.steps : 0)) return nullptr;
  return std::move(e.g_);
}

}  // namespace sg

#include "core/dsl/resolve.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace sg {

void expr_slots(const Expr* e, std::vector<int32_t>& out) {
  if (!e) return;
  if ((e->kind == ExprKind::Var || e->kind == ExprKind::GroupAt) && e->slot >= 0) out.push_back(e->slot);
  for (const auto& a : e->args) expr_slots(a.get(), out);
}

bool is_reserved_name(const std::string& n) {
  // Function names (min, size, ranks, …) are only functions when followed by '(', so they
  // stay free for parameters such as the contract's `size`.
  static const std::set<std::string> reserved = {"N", "world", "any"};
  return reserved.count(n) > 0;
}

namespace {

class Resolver {
 public:
  Resolver(Schedule& s, Diagnostics& d) : s_(s), diags_(d) {}

  void run() {
    prescan(s_.body);
    scopes_.emplace_back();
    for (auto& p : s_.params) {
      check_name(p.name, p.loc);
      if (p.def) expr(*p.def);  // defaults see N and earlier parameters
      if (p.kind == ParamKind::Buffer) {
        p.slot = new_buffer(p.name);
      } else {
        p.slot = bind(p.name);
      }
    }
    block(s_.body);
    scopes_.pop_back();
    s_.num_slots = next_slot_;
    s_.num_buffers = static_cast<uint32_t>(s_.buffer_names.size());
    mark_invariant(s_.body);
  }

 private:
  // Buffer names declared anywhere in the schedule, to tell "used before declared" from "unknown".
  void prescan(const Block& b) {
    for (const auto& st : b) {
      switch (st->kind) {
        case StmtKind::Buffer: {
          auto& bs = static_cast<const BufferStmt&>(*st);
          declared_later_.emplace(bs.name, bs.loc);
          break;
        }
        case StmtKind::For: prescan(static_cast<const ForStmt&>(*st).body); break;
        case StmtKind::If:
          prescan(static_cast<const IfStmt&>(*st).then_body);
          prescan(static_cast<const IfStmt&>(*st).else_body);
          break;
        case StmtKind::On: prescan(static_cast<const OnStmt&>(*st).body); break;
        default: break;
      }
    }
  }

  void check_name(const std::string& n, Loc loc) {
    if (is_reserved_name(n)) diags_.error(loc, "'" + n + "' is a reserved name and cannot be bound", static_cast<uint32_t>(n.size()));
  }

  int32_t bind(const std::string& n) {
    int32_t slot = static_cast<int32_t>(next_slot_++);
    scopes_.back()[n] = slot;
    return slot;
  }

  int32_t lookup(const std::string& n) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(n);
      if (f != it->end()) return f->second;
    }
    return -1;
  }

  int32_t new_buffer(const std::string& n) {
    auto it = buffers_.find(n);
    if (it != buffers_.end()) return it->second;
    int32_t slot = static_cast<int32_t>(s_.buffer_names.size());
    s_.buffer_names.push_back(n);
    buffers_[n] = slot;
    return slot;
  }

  void expr(Expr& e) {
    // size(B) of a buffer is its chunk count (a called schedule learns its slice's length).
    if (e.kind == ExprKind::Func && e.fn == Func::Size && e.args.size() == 1 && e.args[0]->kind == ExprKind::Var &&
        lookup(e.args[0]->name) < 0 && buffers_.count(e.args[0]->name)) {
      e.args[0]->kind = ExprKind::BufLen;
      e.args[0]->slot = buffers_[e.args[0]->name];
      return;
    }
    switch (e.kind) {
      case ExprKind::Var:
      case ExprKind::GroupAt:
        if (e.name == "N" && e.kind == ExprKind::Var) {
          e.slot = -2;
        } else {
          e.slot = lookup(e.name);
          if (e.slot < 0) {
            std::string msg = "unknown name '" + e.name + "'";
            if (buffers_.count(e.name) || declared_later_.count(e.name)) msg += " ('" + e.name + "' is a buffer; a value is needed here)";
            diags_.error(e.loc, msg, static_cast<uint32_t>(e.name.size()));
          }
        }
        break;
      default: break;
    }
    for (auto& a : e.args) expr(*a);
  }

  void ref(Ref& r) {
    if (!r.present()) return;
    auto it = buffers_.find(r.buf);
    if (it == buffers_.end()) {
      auto later = declared_later_.find(r.buf);
      if (later != declared_later_.end()) {
        auto& d = diags_.error(r.loc, "buffer '" + r.buf + "' is used before it is declared", static_cast<uint32_t>(r.buf.size()));
        d.notes.push_back({later->second, "'" + r.buf + "' is declared here"});
      } else {
        diags_.error(r.loc, "unknown buffer '" + r.buf + "'", static_cast<uint32_t>(r.buf.size()));
      }
    } else {
      r.slot = it->second;
    }
    for (auto& ix : r.idx) {
      expr(*ix.lo);
      if (ix.hi) expr(*ix.hi);
    }
  }

  void opt(ExprPtr& e) {
    if (e) expr(*e);
  }

  void block(Block& b) {
    scopes_.emplace_back();
    for (auto& st : b) stmt(*st);
    scopes_.pop_back();
  }

  void stmt(Stmt& st) {
    switch (st.kind) {
      case StmtKind::Let: {
        auto& s = static_cast<LetStmt&>(st);
        if (s.value) expr(*s.value);  // null in an erroneous declaration
        check_name(s.name, s.loc);
        s.slot = bind(s.name);
        break;
      }
      case StmtKind::For: {
        auto& s = static_cast<ForStmt&>(st);
        expr(*s.lo);
        expr(*s.hi);
        opt(s.step);
        scopes_.emplace_back();
        check_name(s.var, s.loc);
        s.slot = bind(s.var);
        block(s.body);
        scopes_.pop_back();
        break;
      }
      case StmtKind::If: {
        auto& s = static_cast<IfStmt&>(st);
        expr(*s.cond);
        block(s.then_body);
        block(s.else_body);
        break;
      }
      case StmtKind::Require: expr(*static_cast<RequireStmt&>(st).cond); break;
      case StmtKind::Buffer: {
        auto& s = static_cast<BufferStmt&>(st);
        for (auto& d : s.dims) expr(*d);
        opt(s.bytes);
        for (auto& d : s.shape) expr(*d);
        check_name(s.name, s.loc);
        s.slot = new_buffer(s.name);
        break;
      }
      case StmtKind::Init: {
        auto& s = static_cast<InitStmt&>(st);
        ref(s.target);
        opt(s.rank);
        break;
      }
      case StmtKind::Expect: {
        auto& s = static_cast<ExpectStmt&>(st);
        for (auto& r : s.bufs) ref(r);
        opt(s.root);
        opt(s.heads);
        opt(s.over);
        break;
      }
      case StmtKind::Send: {
        auto& s = static_cast<SendStmt&>(st);
        ref(s.src);
        expr(*s.from);
        expr(*s.to);
        ref(s.into);
        break;
      }
      case StmtKind::P2P: {
        auto& s = static_cast<P2PStmt&>(st);
        ref(s.buf);
        opt(s.peer);
        opt(s.tag);
        break;
      }
      case StmtKind::Wait: break;
      case StmtKind::Copy: {
        auto& s = static_cast<CopyStmt&>(st);
        ref(s.src);
        ref(s.dst);
        opt(s.at);
        break;
      }
      case StmtKind::Compute: {
        auto& s = static_cast<ComputeStmt&>(st);
        for (auto& r : s.inputs) ref(r);
        for (auto& r : s.outputs) ref(r);
        for (auto& r : s.reads) ref(r);
        for (auto& r : s.writes) ref(r);
        opt(s.flops);
        opt(s.at);
        break;
      }
      case StmtKind::Coll: {
        auto& s = static_cast<CollStmt&>(st);
        ref(s.buf);
        ref(s.into);
        opt(s.root);
        opt(s.over);
        break;
      }
      case StmtKind::On: {
        auto& s = static_cast<OnStmt&>(st);
        opt(s.rank);
        opt(s.lo);
        opt(s.hi);
        opt(s.step);
        scopes_.emplace_back();
        if (!s.var.empty()) {
          check_name(s.var, s.loc);
          s.slot = bind(s.var);
        }
        block(s.body);
        scopes_.pop_back();
        break;
      }
      case StmtKind::Call: {
        auto& s = static_cast<CallStmt&>(st);
        for (auto& a : s.args) {
          if (a.bare_name) {
            // Either a buffer or a group variable; the callee's parameter decides.
            if (buffers_.count(a.ref.buf)) a.ref.slot = buffers_[a.ref.buf];
            a.value->slot = lookup(a.value->name);
            if (a.ref.slot < 0 && a.value->slot < 0) {
              if (declared_later_.count(a.ref.buf))
                diags_.error(a.ref.loc, "buffer '" + a.ref.buf + "' is used before it is declared",
                             static_cast<uint32_t>(a.ref.buf.size()));
              else diags_.error(a.ref.loc, "unknown name '" + a.ref.buf + "'", static_cast<uint32_t>(a.ref.buf.size()));
            }
          } else if (a.ref.present()) {
            ref(a.ref);
          } else if (a.value) {
            expr(*a.value);
          }
        }
        break;
      }
    }
  }

  // ---- loop invariance of step counts ----
  // Slots read by expressions that decide how many steps a block emits (and, with per_rank, on
  // which rank they land), and slots bound inside the block.
  static void control(const Block& b, bool per_rank, std::vector<int32_t>& used, std::vector<int32_t>& bound) {
    for (const auto& st : b) {
      switch (st->kind) {
        case StmtKind::Let: bound.push_back(static_cast<const LetStmt&>(*st).slot); break;
        case StmtKind::For: {
          auto& s = static_cast<const ForStmt&>(*st);
          expr_slots(s.lo.get(), used);
          expr_slots(s.hi.get(), used);
          expr_slots(s.step.get(), used);
          bound.push_back(s.slot);
          control(s.body, per_rank, used, bound);
          break;
        }
        case StmtKind::If: {
          auto& s = static_cast<const IfStmt&>(*st);
          expr_slots(s.cond.get(), used);
          control(s.then_body, per_rank, used, bound);
          control(s.else_body, per_rank, used, bound);
          break;
        }
        case StmtKind::On: {
          auto& s = static_cast<const OnStmt&>(*st);
          expr_slots(s.rank.get(), used);
          expr_slots(s.lo.get(), used);
          expr_slots(s.hi.get(), used);
          expr_slots(s.step.get(), used);
          if (s.slot >= 0) bound.push_back(s.slot);
          control(s.body, per_rank, used, bound);
          break;
        }
        case StmtKind::Send:
          if (per_rank) {
            auto& s = static_cast<const SendStmt&>(*st);
            expr_slots(s.from.get(), used);
            expr_slots(s.to.get(), used);
          }
          break;
        // A failing require stops elaboration: it decides whether the rest emits steps at all,
        // and the estimate must meet it to report the instance as unsupported.
        case StmtKind::Require: expr_slots(static_cast<const RequireStmt&>(*st).cond.get(), used); break;
        case StmtKind::Copy: expr_slots(static_cast<const CopyStmt&>(*st).at.get(), used); break;
        case StmtKind::Compute: expr_slots(static_cast<const ComputeStmt&>(*st).at.get(), used); break;
        case StmtKind::Coll: expr_slots(static_cast<const CollStmt&>(*st).over.get(), used); break;
        case StmtKind::Call:
          for (const auto& a : static_cast<const CallStmt&>(*st).args) {
            expr_slots(a.value.get(), used);
            for (const auto& ix : a.ref.idx) {
              expr_slots(ix.lo.get(), used);
              expr_slots(ix.hi.get(), used);
            }
          }
          break;
        default: break;
      }
    }
  }

  void mark_invariant(Block& b) {
    for (auto& st : b) {
      switch (st->kind) {
        case StmtKind::For: {
          auto& s = static_cast<ForStmt&>(*st);
          for (bool per_rank : {false, true}) {
            std::vector<int32_t> used, bound{s.slot};
            control(s.body, per_rank, used, bound);
            bool inv =
                std::none_of(used.begin(), used.end(), [&](int32_t u) { return std::find(bound.begin(), bound.end(), u) != bound.end(); });
            (per_rank ? s.count_invariant_rank : s.count_invariant) = inv;
          }
          mark_invariant(s.body);
          break;
        }
        case StmtKind::If:
          mark_invariant(static_cast<IfStmt&>(*st).then_body);
          mark_invariant(static_cast<IfStmt&>(*st).else_body);
          break;
        case StmtKind::On: mark_invariant(static_cast<OnStmt&>(*st).body); break;
        default: break;
      }
    }
  }

  Schedule& s_;
  Diagnostics& diags_;
  std::vector<std::map<std::string, int32_t>> scopes_;
  std::map<std::string, int32_t> buffers_;
  std::multimap<std::string, Loc> declared_later_;
  uint32_t next_slot_ = 0;
};

}  // namespace

void resolve_schedule(Schedule& s, Diagnostics& diags) { Resolver(s, diags).run(); }

}  // namespace sg

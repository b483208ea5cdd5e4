#include "core/dsl/printer.hpp"

namespace sg {

namespace {

int prec(BinOp op) {
  switch (op) {
    case BinOp::Or: return 1;
    case BinOp::And: return 2;
    case BinOp::Eq:
    case BinOp::Ne: return 3;
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge: return 4;
    case BinOp::Add:
    case BinOp::Sub: return 5;
    case BinOp::Mul:
    case BinOp::Div:
    case BinOp::Mod: return 6;
    case BinOp::Pow: return 7;
  }
  return 0;
}

const char* spelling(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "**";
    case BinOp::Eq: return "==";
    case BinOp::Ne: return "!=";
    case BinOp::Lt: return "<";
    case BinOp::Le: return "<=";
    case BinOp::Gt: return ">";
    case BinOp::Ge: return ">=";
    case BinOp::And: return "&&";
    case BinOp::Or: return "||";
  }
  return "?";
}

const char* func_name(Func f) {
  switch (f) {
    case Func::Min: return "min";
    case Func::Max: return "max";
    case Func::Pow2: return "pow2";
    case Func::Cdiv: return "cdiv";
    case Func::Log2: return "log2";
    case Func::Flog2: return "flog2";
    case Func::IsPow2: return "ispow2";
    case Func::Size: return "size";
  }
  return "?";
}

// Prints with the fewest parentheses that keep the tree: a child is wrapped when it binds
// looser than its context requires.
std::string expr_at(const Expr& e, int min_prec) {
  switch (e.kind) {
    case ExprKind::Int: {
      if (e.value < 0) return "(" + std::to_string(e.value) + ")";
      if (!e.name.empty()) return e.name;  // as written: 64MiB
      return std::to_string(e.value);
    }
    case ExprKind::Var:
    case ExprKind::BufLen: return e.name;
    case ExprKind::World: return "world";
    case ExprKind::GroupAt: return e.name + "[" + expr_at(*e.args[0], 0) + "]";
    case ExprKind::Unary: {
      std::string s = std::string(e.uop == UnOp::Neg ? "-" : "!") + expr_at(*e.args[0], 8);
      return min_prec > 7 ? "(" + s + ")" : s;
    }
    case ExprKind::Binary: {
      int p = prec(e.bop);
      bool right = e.bop == BinOp::Pow;
      std::string s = expr_at(*e.args[0], right ? p + 1 : p) + " " + spelling(e.bop) + " " + expr_at(*e.args[1], right ? p : p + 1);
      return p < min_prec ? "(" + s + ")" : s;
    }
    case ExprKind::Cond: {
      std::string s = expr_at(*e.args[0], 1) + " ? " + expr_at(*e.args[1], 0) + " : " + expr_at(*e.args[2], 0);
      return min_prec > 0 ? "(" + s + ")" : s;
    }
    case ExprKind::Func:
    case ExprKind::Ranks: {
      std::string s = e.kind == ExprKind::Ranks ? "ranks(" : std::string(func_name(e.fn)) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr_at(*e.args[i], 0);
      return s + ")";
    }
  }
  return "?";
}

std::string ref(const Ref& r) {
  std::string s = r.buf;
  if (r.idx.empty()) return s;
  s += "[";
  for (size_t i = 0; i < r.idx.size(); ++i) {
    if (i) s += ", ";
    s += expr_at(*r.idx[i].lo, 0);
    if (r.idx[i].hi) s += " .. " + expr_at(*r.idx[i].hi, 0);
  }
  return s + "]";
}

class Printer {
 public:
  std::string out;

  void block(const Block& b, int depth) {
    out += "{\n";
    for (const auto& st : b) stmt(*st, depth + 1);
    indent(depth);
    out += "}";
  }

  void indent(int depth) { out.append(static_cast<size_t>(depth) * 2, ' '); }

  void stmt(const Stmt& st, int depth) {
    indent(depth);
    if (st.erroneous) {  // its parts may be missing
      out += "# a declaration here did not parse\n";
      return;
    }
    switch (st.kind) {
      case StmtKind::Let: {
        auto& s = static_cast<const LetStmt&>(st);
        out += "let " + s.name + " = " + print_expr(*s.value) + ";\n";
        break;
      }
      case StmtKind::For: {
        auto& s = static_cast<const ForStmt&>(st);
        out += "for " + s.var + " in " + print_expr(*s.lo) + " .. " + print_expr(*s.hi);
        if (s.step) out += " step " + print_expr(*s.step);
        out += " ";
        block(s.body, depth);
        out += "\n";
        break;
      }
      case StmtKind::If: {
        auto& s = static_cast<const IfStmt&>(st);
        if_chain(s, depth);
        out += "\n";
        break;
      }
      case StmtKind::Require: {
        auto& s = static_cast<const RequireStmt&>(st);
        out += "require " + print_expr(*s.cond);
        if (!s.message.empty()) out += ", " + quote(s.message);
        out += ";\n";
        break;
      }
      case StmtKind::Buffer: {
        auto& s = static_cast<const BufferStmt&>(st);
        out += "buffer " + s.name + "[" + list(s.dims) + "]";
        if (s.bytes) out += " bytes " + print_expr(*s.bytes);
        else out += " shape [" + list(s.shape) + "]";
        if (!s.layout.empty()) out += " layout " + s.layout;
        if (!s.dtype.empty()) out += " dtype " + s.dtype;
        out += ";\n";
        break;
      }
      case StmtKind::Init: {
        auto& s = static_cast<const InitStmt&>(st);
        out += "init " + ref(s.target);
        if (s.mode == InitKind::Contrib) out += " contrib";
        else if (s.mode == InitKind::Owned) out += " owned";
        else out += " on " + print_expr(*s.rank);
        out += ";\n";
        break;
      }
      case StmtKind::Expect: {
        auto& s = static_cast<const ExpectStmt&>(st);
        out += "expect ";
        out += expect_name(s.what);
        if (s.what != ExpectKind::Nothing) {
          out += "(";
          for (size_t i = 0; i < s.bufs.size(); ++i) out += (i ? ", " : "") + ref(s.bufs[i]);
          if (s.root) out += ", " + print_expr(*s.root);
          if (s.mask != Mask::None) out += std::string(", ") + mask_name(s.mask);
          if (s.heads) out += ", heads " + print_expr(*s.heads);
          out += ")";
          if (s.over) out += " over " + print_expr(*s.over);
        }
        out += ";\n";
        break;
      }
      case StmtKind::Send: {
        auto& s = static_cast<const SendStmt&>(st);
        out += "send " + ref(s.src) + " from " + print_expr(*s.from) + " to " + print_expr(*s.to);
        if (s.into.present()) out += " into " + ref(s.into);
        if (s.reduce) out += s.op == ReduceOp::Sum ? std::string(" reduce") : std::string(" reduce ") + op_name(s.op);
        out += ";\n";
        break;
      }
      case StmtKind::P2P: {
        auto& s = static_cast<const P2PStmt&>(st);
        out += s.nonblocking ? (s.is_send ? "isend " : "irecv ") : (s.is_send ? "send " : "recv ");
        out += ref(s.buf);
        out += s.is_send ? " to " : " from ";
        out += s.peer ? print_expr(*s.peer) : "any";
        if (s.any_tag) out += " tag any";
        else if (s.tag) out += " tag " + print_expr(*s.tag);
        if (s.reduce) out += s.op == ReduceOp::Sum ? std::string(" reduce") : std::string(" reduce ") + op_name(s.op);
        if (!s.handle.empty()) out += " as " + s.handle;
        out += ";\n";
        break;
      }
      case StmtKind::Wait: {
        auto& s = static_cast<const WaitStmt&>(st);
        if (s.all) {
          out += "waitall;\n";
        } else {
          out += "wait ";
          for (size_t i = 0; i < s.handles.size(); ++i) out += (i ? ", " : "") + s.handles[i];
          out += ";\n";
        }
        break;
      }
      case StmtKind::Copy: {
        auto& s = static_cast<const CopyStmt&>(st);
        out += (s.reduce ? "reduce " : "copy ") + ref(s.src) + " into " + ref(s.dst);
        if (s.reduce && s.op != ReduceOp::Sum) out += std::string(" op ") + op_name(s.op);
        if (s.at) out += " at " + print_expr(*s.at);
        out += ";\n";
        break;
      }
      case StmtKind::Compute: {
        auto& s = static_cast<const ComputeStmt&>(st);
        out += "compute " + s.name;
        if (s.what == ComputeKind::Generic) {
          out += " flops " + print_expr(*s.flops);
          if (!s.reads.empty()) out += " reads " + refs(s.reads);
          if (!s.writes.empty()) out += " writes " + refs(s.writes);
        } else {
          out += "(" + refs(s.inputs) + ") into " + refs(s.outputs) + " mask " + mask_name(s.mask);
          if (s.flops) out += " flops " + print_expr(*s.flops);
        }
        if (s.at) out += " at " + print_expr(*s.at);
        out += ";\n";
        break;
      }
      case StmtKind::Coll: {
        auto& s = static_cast<const CollStmt&>(st);
        out += coll_name(s.what);
        if (s.buf.present()) out += " " + ref(s.buf);
        if (s.root) out += " root " + print_expr(*s.root);
        if (s.into.present()) out += " into " + ref(s.into);
        if (s.op != ReduceOp::Sum) out += std::string(" op ") + op_name(s.op);
        if (s.over) out += " over " + print_expr(*s.over);
        out += ";\n";
        break;
      }
      case StmtKind::On: {
        auto& s = static_cast<const OnStmt&>(st);
        if (s.rank) {
          out += "on " + print_expr(*s.rank) + " ";
        } else {
          out += "on " + s.var + " in " + print_expr(*s.lo) + " .. " + print_expr(*s.hi);
          if (s.step) out += " step " + print_expr(*s.step);
          out += " ";
        }
        block(s.body, depth);
        out += "\n";
        break;
      }
      case StmtKind::Call: {
        auto& s = static_cast<const CallStmt&>(st);
        out += "call " + s.callee + "(";
        for (size_t i = 0; i < s.args.size(); ++i) {
          const auto& a = s.args[i];
          if (i) out += ", ";
          if (!a.key.empty()) out += a.key + " = " + print_expr(*a.value);
          else if (a.bare_name) out += a.ref.buf;
          else if (a.ref.present()) out += ref(a.ref);
          else out += print_expr(*a.value);
        }
        out += ");\n";
        break;
      }
    }
  }

  void if_chain(const IfStmt& s, int depth) {
    out += "if " + print_expr(*s.cond) + " ";
    block(s.then_body, depth);
    if (!s.else_body.empty()) {
      out += " else ";
      if (s.else_body.size() == 1 && s.else_body[0]->kind == StmtKind::If) {
        if_chain(static_cast<const IfStmt&>(*s.else_body[0]), depth);
      } else {
        block(s.else_body, depth);
      }
    }
  }

  static std::string list(const std::vector<ExprPtr>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + print_expr(*v[i]);
    return s;
  }
  static std::string refs(const std::vector<Ref>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + ref(v[i]);
    return s;
  }
  static std::string quote(const std::string& m) {
    std::string s = "\"";
    for (char c : m) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    return s + "\"";
  }
};

}  // namespace

std::string print_expr(const Expr& e) { return expr_at(e, 0); }

std::string print_schedule(const Schedule& s) {
  Printer p;
  p.out += "schedule " + s.name + "(";
  for (size_t i = 0; i < s.params.size(); ++i) {
    const auto& prm = s.params[i];
    if (i) p.out += ", ";
    if (prm.kind == ParamKind::Group) p.out += "group ";
    if (prm.kind == ParamKind::Buffer) p.out += "buffer ";
    p.out += prm.name;
    if (prm.def) p.out += " = " + print_expr(*prm.def);
  }
  p.out += ") ";
  p.block(s.body, 0);
  p.out += "\n";
  return p.out;
}

std::string print_program(const Program& prog) {
  std::string out;
  for (size_t i = 0; i < prog.schedules.size(); ++i) {
    if (i) out += "\n";
    out += print_schedule(*prog.schedules[i]);
  }
  return out;
}

}  // namespace sg

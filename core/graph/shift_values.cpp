// The value domain of the shift proof: the evaluator (core/graph/shift_values.hpp).
#include "core/graph/shift_values.hpp"

#include <algorithm>
#include <climits>

namespace sg::shift_proof {

AVal Values::num(const Expr& e) {
  AVal a = eval(e);
  if (a.group) refuse(e.loc, "a group where an integer is needed");
  return a;
}

AVal Values::eval(const Expr& e) {
  AVal out;
  switch (e.kind) {
    case ExprKind::Int: out.v = e.value; return out;
    case ExprKind::Var:
      if (e.slot == -2) {
        out.v = in_.nranks;
        return out;
      }
      if (e.slot < 0 || static_cast<size_t>(e.slot) >= slots_.size()) refuse(e.loc, "unknown name '" + e.name + "'");
      return slots_[static_cast<size_t>(e.slot)];
    case ExprKind::Unary: {
      AVal a = num(*e.args[0]);
      if (e.uop == UnOp::Not) {
        out.v = !a.v;
        out.t = a.t.kind == Tag::Inv ? Tag{} : bad(e);
        return out;
      }
      out.v = checked(sub, 0, a.v, e);
      out.t = affine(a.t) ? lin_checked(out.v, checked(sub, 0, a.t.c, e)) : a.t.kind == Tag::Mod ? scaled(a.t, -1, e) : bad(e);
      return out;
    }
    case ExprKind::Binary: return binary(e);
    case ExprKind::Cond: {
      AVal c = num(*e.args[0]);
      if (c.t.kind != Tag::Inv) return AVal{false, 0, 0, 1, bad(e)};
      return eval(c.v ? *e.args[1] : *e.args[2]);
    }
    case ExprKind::Func: return func(e);
    case ExprKind::GroupAt: {
      if (e.slot < 0) refuse(e.loc, "unknown group '" + e.name + "'");
      const AVal g = slots_[static_cast<size_t>(e.slot)];
      if (!g.group) refuse(e.loc, "'" + e.name + "' is not a group");
      AVal i = num(*e.args[0]);
      if (i.t.kind != Tag::Inv) return AVal{false, 0, 0, 1, bad(e)};
      if (i.v < 0 || i.v >= g.count) refuse(e.loc, "member index out of range");
      out.v = g.v + i.v * g.stride;
      out.t = g.t;
      return out;
    }
    case ExprKind::World:
      out.group = true;
      out.count = in_.nranks;
      return out;
    case ExprKind::Ranks: {
      AVal st = num(*e.args[0]), cnt = num(*e.args[1]);
      AVal sd;
      sd.v = 1;
      if (e.args.size() > 2) sd = num(*e.args[2]);
      if (cnt.t.kind != Tag::Inv || sd.t.kind != Tag::Inv) refuse(e.loc, "a group whose size or stride depends on the rank");
      if (cnt.v < 1 || sd.v < 1 || st.v < 0 || st.v + (cnt.v - 1) * sd.v >= in_.nranks) refuse(e.loc, "a group outside the ranks");
      if (st.t.kind == Tag::Lin) {  // every rank's group inside the ranks
        auto [lo, hi] = span(st.v, st.t.c);
        if (lo < 0 || hi + (cnt.v - 1) * sd.v >= in_.nranks) refuse(e.loc, "a group outside the ranks for some rank");
      } else if (st.t.kind != Tag::Inv) {
        bad(e);
      }
      out.group = true;
      out.v = st.v;
      out.count = static_cast<uint32_t>(cnt.v);
      out.stride = static_cast<uint32_t>(sd.v);
      out.t = st.t;
      return out;
    }
    case ExprKind::BufLen: refuse(e.loc, "a buffer where an integer is needed");
  }
  refuse(e.loc, "an expression of an unknown kind");
}

AVal Values::binary(const Expr& e) {
  AVal out;
  if (e.bop == BinOp::And || e.bop == BinOp::Or) {
    AVal a = num(*e.args[0]);
    if (a.t.kind != Tag::Inv) return AVal{false, 0, 0, 1, bad(e)};
    bool a_true = a.v != 0;
    if (e.bop == BinOp::And ? !a_true : a_true) {  // the same short cut for every m
      out.v = a_true;
      return out;
    }
    AVal b = num(*e.args[1]);
    out.v = b.v != 0;
    out.t = b.t.kind == Tag::Inv ? Tag{} : bad(e);
    return out;
  }
  AVal a = num(*e.args[0]), b = num(*e.args[1]);
  const Tag &ta = a.t, &tb = b.t;
  switch (e.bop) {
    case BinOp::Add:
      out.v = checked(add, a.v, b.v, e);
      if (affine(ta) && affine(tb)) out.t = lin_checked(out.v, checked(add, ta.c, tb.c, e));
      else if (ta.kind == Tag::Mod && tb.kind == Tag::Inv) out.t = ta;  // a ring position moved by a constant
      else if (ta.kind == Tag::Inv && tb.kind == Tag::Mod) out.t = tb;
      else out.t = bad(e);
      return out;
    case BinOp::Sub:
      out.v = checked(sub, a.v, b.v, e);
      if (affine(ta) && affine(tb)) out.t = lin_checked(out.v, checked(sub, ta.c, tb.c, e));
      else if (ta.kind == Tag::Mod && tb.kind == Tag::Inv) out.t = ta;
      else if (ta.kind == Tag::Inv && tb.kind == Tag::Mod) out.t = scaled(tb, -1, e);
      else out.t = bad(e);
      return out;
    case BinOp::Mul:
      out.v = checked(mul, a.v, b.v, e);
      if (ta.kind == Tag::Inv && tb.kind == Tag::Inv) return out;
      if (affine(ta) && tb.kind == Tag::Inv) out.t = lin_checked(out.v, checked(mul, ta.c, b.v, e));
      else if (ta.kind == Tag::Inv && affine(tb)) out.t = lin_checked(out.v, checked(mul, tb.c, a.v, e));
      else if (ta.kind == Tag::Mod && tb.kind == Tag::Inv) out.t = scaled(ta, b.v, e);
      else if (ta.kind == Tag::Inv && tb.kind == Tag::Mod) out.t = scaled(tb, a.v, e);
      else out.t = bad(e);
      return out;
    case BinOp::Div:
    case BinOp::Mod: {
      if (b.v == 0) refuse(e.loc, "division by zero");
      if (a.v == INT64_MIN && b.v == -1) refuse(e.loc, "integer overflow");
      int64_t q = floordiv(a.v, b.v);
      out.v = e.bop == BinOp::Div ? q : a.v - q * b.v;
      if (ta.kind == Tag::Inv && tb.kind == Tag::Inv) return out;
      if (tb.kind != Tag::Inv || ta.kind != Tag::Lin || b.v < 0) {
        out.t = bad(e);
        return out;
      }
      const int64_t k = b.v, c = ta.c;
      auto [lo, hi] = span(a.v, c);
      bool one_block = floordiv(lo, k) == floordiv(hi, k);  // the quotient is the same for every m
      if (e.bop == BinOp::Div) {
        if (c % k == 0) out.t = lin(c / k);  // floor((v0 + c·m) / k) = floor(v0 / k) + (c / k)·m
        else if (one_block) out.t = Tag{};
        else out.t = bad(e);
      } else {
        if (c % k == 0) {
          out.t = Tag{};  // (v0 + c·m) mod k = v0 mod k
        } else if (one_block) {
          out.t = lin(c);
        } else {
          out.t.kind = Tag::Mod;
          out.t.c = c;
          out.t.k = k;
          out.t.u0 = out.v;
        }
      }
      return out;
    }
    case BinOp::Pow: {
      if (b.v < 0) refuse(e.loc, "negative exponent");
      int64_t res = 1, base = a.v, x = b.v;
      while (x) {
        if ((x & 1) && __builtin_mul_overflow(res, base, &res)) refuse(e.loc, "integer overflow");
        x >>= 1;
        if (x && __builtin_mul_overflow(base, base, &base)) refuse(e.loc, "integer overflow");
      }
      out.v = res;
      out.t = ta.kind == Tag::Inv && tb.kind == Tag::Inv ? Tag{} : bad(e);
      return out;
    }
    case BinOp::Eq:
    case BinOp::Ne:
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge: {
      auto holds = [&](int64_t d) {  // the comparison of a - b = d with 0
        switch (e.bop) {
          case BinOp::Eq: return d == 0;
          case BinOp::Ne: return d != 0;
          case BinOp::Lt: return d < 0;
          case BinOp::Le: return d <= 0;
          case BinOp::Gt: return d > 0;
          default: return d >= 0;
        }
      };
      out.v = e.bop == BinOp::Eq   ? a.v == b.v
              : e.bop == BinOp::Ne ? a.v != b.v
              : e.bop == BinOp::Lt ? a.v < b.v
              : e.bop == BinOp::Le ? a.v <= b.v
              : e.bop == BinOp::Gt ? a.v > b.v
                                   : a.v >= b.v;
      if (ta.kind == Tag::Inv && tb.kind == Tag::Inv) return out;
      if (!affine(ta) || !affine(tb)) {
        out.t = bad(e);
        return out;
      }
      // a - b = d0 + c·m, monotone in m: an order comparison is the same for every m when it is
      // at both ends; an equality when no m in range makes d zero.
      int64_t d0 = 0;
      if (__builtin_sub_overflow(a.v, b.v, &d0)) refuse(e.loc, "integer overflow");
      const int64_t c = ta.c - tb.c;
      if (c == 0) return out;
      auto [lo, hi] = span(d0, c);
      bool same;
      if (e.bop == BinOp::Eq || e.bop == BinOp::Ne) same = (-d0) % c != 0 || -d0 / c < 0 || -d0 / c >= s_.count;
      else same = holds(lo) == holds(hi);
      if (!same) out.t = bad(e);
      return out;
    }
    default: break;
  }
  refuse(e.loc, "an operator of an unknown kind");
}

AVal Values::func(const Expr& e) {
  AVal out;
  if (e.fn == Func::Size) {
    const Expr& a = *e.args[0];
    if (a.kind == ExprKind::BufLen) {
      auto it = std::find_if(in_.buffers.begin(), in_.buffers.end(), [&](const auto& b) { return b.name == a.name; });
      if (it == in_.buffers.end()) refuse(a.loc, "buffer '" + a.name + "' is not known");
      out.v = it->chunks;
      return out;
    }
    AVal g = eval(a);
    if (!g.group) refuse(a.loc, "size() of an integer");
    out.v = g.count;
    return out;
  }
  std::vector<AVal> args;
  bool inv = true;
  for (const auto& x : e.args) {
    args.push_back(num(*x));
    inv = inv && args.back().t.kind == Tag::Inv;
  }
  if (!inv) return AVal{false, 0, 0, 1, bad(e)};
  switch (e.fn) {
    case Func::Min:
    case Func::Max: {
      int64_t r = args[0].v;
      for (size_t i = 1; i < args.size(); ++i) r = e.fn == Func::Min ? std::min(r, args[i].v) : std::max(r, args[i].v);
      out.v = r;
      return out;
    }
    case Func::Pow2:
      if (args[0].v < 0 || args[0].v > 62) refuse(e.loc, "pow2 out of range");
      out.v = int64_t{1} << args[0].v;
      return out;
    case Func::Cdiv:
      if (args[1].v == 0 || (args[0].v == INT64_MIN && args[1].v == -1)) refuse(e.loc, "division by zero or overflow");
      out.v = -floordiv(-args[0].v, args[1].v);
      return out;
    case Func::Log2:
    case Func::Flog2:
      if (args[0].v <= 0) refuse(e.loc, "log2 of a value that is not positive");
      out.v = 63 - __builtin_clzll(static_cast<uint64_t>(args[0].v));
      return out;
    case Func::IsPow2: out.v = args[0].v > 0 && !(args[0].v & (args[0].v - 1)); return out;
    case Func::Size: break;
  }
  refuse(e.loc, "a function of an unknown kind");
}

}  // namespace sg::shift_proof

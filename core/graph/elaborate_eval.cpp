// The elaborator's expressions: integers (with overflow and division checks), groups, rank
// values and chunk references (indices and ranges into a buffer as the frame sees it). Apart
// because every statement evaluates through them and they touch no step or chunk state.
#include "core/graph/elaborate_impl.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace sg::elab::detail {

int64_t Elaborator::floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t Elaborator::ev(const Expr& e, Frame& f) {
  switch (e.kind) {
    case ExprKind::Int: return e.value;
    case ExprKind::Var: {
      if (e.slot == -2) return n_;
      if (e.slot < 0) fail(e.loc, e.length, "unknown name '" + e.name + "'");
      const Val& v = f.slots[static_cast<size_t>(e.slot)];
      if (v.group)
        fail(e.loc, e.length, "'" + e.name + "' is a group; an integer is needed here (size(" + e.name + ") or " + e.name + "[i])");
      return v.i;
    }
    case ExprKind::Unary: {
      int64_t a = ev(*e.args[0], f);
      if (e.uop == UnOp::Not) return !a;
      if (a == INT64_MIN) fail(e.loc, 1, "integer overflow in negation");
      return -a;
    }
    case ExprKind::Binary: return binary(e, f);
    case ExprKind::Cond: return ev(*e.args[0], f) ? ev(*e.args[1], f) : ev(*e.args[2], f);
    case ExprKind::Func: return func(e, f);
    case ExprKind::GroupAt: {
      GroupInfo g = group_var(e, f);
      int64_t i = ev(*e.args[0], f);
      if (i < 0 || i >= g.count)
        fail(
            e.args[0]->loc, e.args[0]->length,
            "member index out of range for group '" + e.name + "' (index " + std::to_string(i) + ", size " + std::to_string(g.count) + ")");
      return g.member(static_cast<uint32_t>(i));
    }
    case ExprKind::Ranks:
    case ExprKind::World: fail(e.loc, e.length, "a group is not an integer");
    case ExprKind::BufLen: fail(e.loc, e.length, "'" + e.name + "' is a buffer; size(" + e.name + ") gives its chunk count");
  }
  return 0;
}

GroupInfo Elaborator::group_var(const Expr& e, Frame& f) {
  if (e.slot < 0) fail(e.loc, e.length, "unknown group '" + e.name + "'");
  const Val& v = f.slots[static_cast<size_t>(e.slot)];
  if (!v.group) fail(e.loc, static_cast<uint32_t>(e.name.size()), "'" + e.name + "' is an integer, not a group");
  return v.g;
}

GroupInfo Elaborator::gev(const Expr& e, Frame& f) {
  switch (e.kind) {
    case ExprKind::World: return GroupInfo{0, n_, 1};
    case ExprKind::Var: return group_var(e, f);
    case ExprKind::Ranks: {
      int64_t start = ev(*e.args[0], f), count = ev(*e.args[1], f);
      int64_t stride = e.args.size() > 2 ? ev(*e.args[2], f) : 1;
      if (count < 1)
        fail(e.loc, 5, "a group needs at least one member (ranks(" + std::to_string(start) + ", " + std::to_string(count) + ", …))");
      if (stride < 1) fail(e.loc, 5, "a group's stride must be at least 1 (stride " + std::to_string(stride) + ")");
      int64_t last = start + (count - 1) * stride;
      if (start < 0 || last >= n_ || (count - 1) > (INT64_MAX - start) / stride)
        fail(e.loc, 5,
             "group has members outside the ranks (ranks(" + std::to_string(start) + ", " + std::to_string(count) + ", " +
                 std::to_string(stride) + ") spans " + std::to_string(start) + " .. " + std::to_string(last) +
                 ", N = " + std::to_string(n_) + ")");
      return GroupInfo{static_cast<uint32_t>(start), static_cast<uint32_t>(count), static_cast<uint32_t>(stride)};
    }
    default: fail(e.loc, e.length, "expected a group (ranks(start, count[, stride]), world, or a group name)");
  }
}

Val Elaborator::eval(const Expr& e, Frame& f) {
  Val v;
  if (e.kind == ExprKind::Ranks || e.kind == ExprKind::World ||
      (e.kind == ExprKind::Var && e.slot >= 0 && f.slots[static_cast<size_t>(e.slot)].group)) {
    v.group = true;
    v.g = gev(e, f);
  } else {
    v.i = ev(e, f);
  }
  return v;
}

int64_t Elaborator::binary(const Expr& e, Frame& f) {
  if (e.bop == BinOp::And) return ev(*e.args[0], f) && ev(*e.args[1], f);
  if (e.bop == BinOp::Or) return ev(*e.args[0], f) || ev(*e.args[1], f);
  int64_t a = ev(*e.args[0], f), b = ev(*e.args[1], f), r = 0;
  auto overflow = [&]() { fail(e.loc, 1, "integer overflow (" + std::to_string(a) + " and " + std::to_string(b) + ")"); };
  switch (e.bop) {
    case BinOp::Add:
      if (__builtin_add_overflow(a, b, &r)) overflow();
      return r;
    case BinOp::Sub:
      if (__builtin_sub_overflow(a, b, &r)) overflow();
      return r;
    case BinOp::Mul:
      if (__builtin_mul_overflow(a, b, &r)) overflow();
      return r;
    case BinOp::Div:
    case BinOp::Mod: {
      if (b == 0) fail(e.args[1]->loc, e.args[1]->length, std::string(e.bop == BinOp::Div ? "division" : "modulo") + " by zero");
      if (a == INT64_MIN && b == -1) overflow();
      int64_t q = floordiv(a, b);
      if (watch_ && !watch_->div && e.bop == BinOp::Div && a != q * b) *watch_ = LossyDiv{&e, a, b, q};
      return e.bop == BinOp::Div ? q : a - q * b;
    }
    case BinOp::Pow: {
      if (b < 0) fail(e.args[1]->loc, e.args[1]->length, "negative exponent (" + std::to_string(b) + ")");
      int64_t res = 1, base = a;
      while (b) {
        if (b & 1)
          if (__builtin_mul_overflow(res, base, &res)) overflow();
        b >>= 1;
        if (b && __builtin_mul_overflow(base, base, &base)) overflow();
      }
      return res;
    }
    case BinOp::Eq: return a == b;
    case BinOp::Ne: return a != b;
    case BinOp::Lt: return a < b;
    case BinOp::Le: return a <= b;
    case BinOp::Gt: return a > b;
    case BinOp::Ge: return a >= b;
    default: return 0;
  }
}

int64_t Elaborator::func(const Expr& e, Frame& f) {
  switch (e.fn) {
    case Func::Min:
    case Func::Max: {
      int64_t r = ev(*e.args[0], f);
      for (size_t i = 1; i < e.args.size(); ++i) {
        int64_t x = ev(*e.args[i], f);
        r = e.fn == Func::Min ? std::min(r, x) : std::max(r, x);
      }
      return r;
    }
    case Func::Pow2: {
      int64_t k = ev(*e.args[0], f);
      if (k < 0 || k > 62) fail(e.loc, e.length, "pow2 needs 0 <= k <= 62 (k = " + std::to_string(k) + ")");
      return int64_t{1} << k;
    }
    case Func::Cdiv: {
      int64_t a = ev(*e.args[0], f), b = ev(*e.args[1], f);
      if (b == 0) fail(e.args[1]->loc, e.args[1]->length, "division by zero in cdiv");
      if (a == INT64_MIN && b == -1) fail(e.loc, 4, "integer overflow in cdiv");
      return -floordiv(-a, b);
    }
    case Func::Log2: {
      int64_t x = ev(*e.args[0], f);
      if (x <= 0 || (x & (x - 1))) fail(e.loc, e.length, "log2 of a value that is not a power of two (log2(" + std::to_string(x) + "))");
      return 63 - __builtin_clzll(static_cast<uint64_t>(x));
    }
    case Func::Flog2: {
      int64_t x = ev(*e.args[0], f);
      if (x <= 0) fail(e.loc, e.length, "flog2 needs a positive value (flog2(" + std::to_string(x) + "))");
      return 63 - __builtin_clzll(static_cast<uint64_t>(x));
    }
    case Func::IsPow2: {
      int64_t x = ev(*e.args[0], f);
      return x > 0 && !(x & (x - 1));
    }
    case Func::Size: {
      const Expr& a = *e.args[0];
      if (a.kind == ExprKind::BufLen) {
        const View& v = f.bufs[static_cast<size_t>(a.slot)];
        if (!v.bound) fail(a.loc, a.length, "buffer '" + a.name + "' is used before it is declared");
        return v.len;
      }
      return gev(a, f).count;
    }
  }
  return 0;
}

uint32_t Elaborator::rank_of(const Expr& e, Frame& f, const char* what) {
  int64_t r = ev(e, f);
  if (r < 0 || r >= n_)
    fail(e.loc, e.length,
         std::string(what) + " rank out of range (rank " + std::to_string(r) + ", valid 0 .. " + std::to_string(n_ - 1) + ")");
  return static_cast<uint32_t>(r);
}

Range Elaborator::ref(const Ref& r, Frame& f) {
  if (r.slot < 0) fail(r.loc, r.length, "unknown buffer '" + r.buf + "'");
  const View& v = f.bufs[static_cast<size_t>(r.slot)];
  if (!v.bound)
    fail(r.loc, static_cast<uint32_t>(r.buf.size()), "buffer '" + r.buf + "' is used before it is declared (its declaration has not run)");
  if (r.idx.empty()) return Range{v.buf, v.off, v.len};
  uint32_t one_dim[1] = {v.len};
  const std::vector<uint32_t>* dimsv = v.whole ? &g_->buffers[v.buf].dims : nullptr;
  const uint32_t* dims = dimsv ? dimsv->data() : one_dim;
  size_t nd = dimsv ? dimsv->size() : 1;
  if (r.idx.size() > nd)
    fail(r.loc, r.length,
         "too many indices for '" + r.buf + "' (" + std::to_string(r.idx.size()) + " given, it has " + std::to_string(nd) + " dimension" +
             (nd == 1 ? "" : "s") + ")");
  uint64_t lo = 0, cnt = 1;
  for (size_t d = 0; d < r.idx.size(); ++d) {
    const Index& ix = r.idx[d];
    int64_t a = ev(*ix.lo, f);
    if (ix.hi) {
      if (d + 1 != r.idx.size()) fail(ix.lo->loc, ix.lo->length, "a range is only allowed in the last index");
      int64_t b = ev(*ix.hi, f);
      if (a < 0 || b > dims[d] || a >= b)
        fail(ix.lo->loc, ix.lo->length,
             "chunk range out of bounds for '" + r.buf + "' (" + std::to_string(a) + " .. " + std::to_string(b) + ", valid within 0 .. " +
                 std::to_string(dims[d]) + (a >= b ? ", and it must not be empty" : "") + ")");
      lo = lo * dims[d] + static_cast<uint64_t>(a);
      cnt = static_cast<uint64_t>(b - a);
    } else {
      if (a < 0 || a >= dims[d])
        fail(ix.lo->loc, ix.lo->length,
             "chunk index out of range for '" + r.buf + "' (index " + std::to_string(a) + ", valid 0 .. " + std::to_string(dims[d] - 1) +
                 ")");
      lo = lo * dims[d] + static_cast<uint64_t>(a);
    }
  }
  // Remaining dimensions are taken whole.
  uint64_t inner = 1;
  for (size_t d = r.idx.size(); d < nd; ++d) inner *= dims[d];
  lo *= inner;
  cnt *= inner;
  return Range{v.buf, v.off + static_cast<uint32_t>(lo), static_cast<uint32_t>(cnt)};
}

}  // namespace sg::elab::detail

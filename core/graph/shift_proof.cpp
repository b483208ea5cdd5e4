// A shift of the ranks proved from the schedule's text (shift_proof.hpp).
//
// Why one representative per class of `group` is enough, beside the shift s being proved: where
// the group's shifts were proved here too, rank x = g·s^m·r1 (g in the group, r1 a
// representative of both) runs g(s^m(prog(r1))) = s^m(g(prog(r1))) (shifts on different digits
// commute), so prog(s(x)) = s(prog(x)) follows from the proof at r1 alone.
#include "core/graph/shift_proof.hpp"

#include "core/dsl/resolve.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

namespace sg {

namespace {

struct NotProved {
  std::string why;
};

// A value as a function of the moved digit m (0 <= m < count), v0 its value at m = 0:
//   Inv: v0;  Lin: v0 + c·m;  Mod: v0 + s·(((u0 + c·m) mod k) - u0), 0 <= u0 < k (a neighbour on
//   a ring: (r + 1) % N, or inside a group, base + (j + 1) % cp · tp).
struct Tag {
  enum Kind : uint8_t { Inv, Lin, Mod, Bad } kind = Inv;
  int64_t c = 0, k = 0, s = 1, u0 = 0;
  const Expr* at = nullptr;  // Bad: the expression that left the domain
};

struct AVal {
  bool group = false;
  int64_t v = 0;  // integer; a group's start
  uint32_t count = 0, stride = 1;
  Tag t;  // integer; a group's start (count and stride are invariant)
};

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

class Prover {
 public:
  Prover(const ShiftProofInput& in, const RankSymmetry& group, const RankShift& s) : in_(in), group_(group), s_(s) {}

  std::string run() {
    try {
      if (!in_.schedule || !in_.program) throw NotProved{"no schedule"};
      const Schedule& sch = *in_.schedule;
      slots_.assign(sch.num_slots, AVal{});
      for (const auto& p : sch.params) {
        if (p.kind != ParamKind::Int) throw NotProved{"a schedule with group or buffer parameters"};
        auto it = std::find_if(in_.params.begin(), in_.params.end(), [&](const auto& kv) { return kv.first == p.name; });
        if (it == in_.params.end()) throw NotProved{"parameter '" + p.name + "' has no value"};
        slots_[static_cast<size_t>(p.slot)].v = it->second;
      }
      block(sch.body);
      check_globals();
    } catch (const NotProved& e) {
      return e.why;
    }
    return "";
  }

 private:
  const ShiftProofInput& in_;
  const RankSymmetry& group_;
  const RankShift& s_;
  std::vector<AVal> slots_;
  bool in_on_ = false;
  uint64_t work_ = 0;

  [[noreturn]] void refuse(const Loc& at, const std::string& why) const {
    throw NotProved{why + " (line " + std::to_string(at.line) + ")"};
  }

  // ------------------------------------------------------------------ values
  Tag lin(int64_t c) const {
    Tag t;
    t.kind = c ? Tag::Lin : Tag::Inv;
    t.c = c;
    return t;
  }
  // A linear value whose every m's value fits (the elaborator would stop at an overflow on some
  // rank: span() refuses it).
  Tag lin_checked(int64_t v0, int64_t c) const {
    if (c) span(v0, c);
    return lin(c);
  }
  // A value the rules do not follow: refused at once, used or not. (Kept for later, an unused
  // one could hide an error that only other ranks meet: `5 / (r - 3)` divides by zero on rank 3
  // alone, which a build of the representatives' programs never runs.)
  [[noreturn]] Tag bad(const Expr& e) const { refuse(e.loc, "a value that depends on the rank in a way the proof does not follow"); }
  static bool affine(const Tag& t) { return t.kind == Tag::Inv || t.kind == Tag::Lin; }
  Tag scaled(Tag t, int64_t q, const Expr& e) const {
    t.s = checked(mul, t.s, q, e);
    if (q == 0) return Tag{};
    return t;
  }
  // The values v0 + c·m takes, lowest and highest (m < count).
  std::pair<int64_t, int64_t> span(int64_t v0, int64_t c) const {
    int64_t step = 0, last = 0;
    if (__builtin_mul_overflow(c, int64_t{s_.count} - 1, &step) || __builtin_add_overflow(v0, step, &last))
      throw NotProved{"a value that overflows for some rank"};
    return {std::min(v0, last), std::max(v0, last)};
  }

  // a op b, refused on overflow (op: __builtin_add_overflow and the like).
  template <class Op>
  int64_t checked(Op op, int64_t a, int64_t b, const Expr& e) const {
    int64_t r = 0;
    if (op(a, b, &r)) refuse(e.loc, "integer overflow");
    return r;
  }
  static bool add(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
  static bool sub(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
  static bool mul(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

  AVal num(const Expr& e) {
    AVal a = eval(e);
    if (a.group) refuse(e.loc, "a group where an integer is needed");
    return a;
  }

  AVal eval(const Expr& e) {
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

  AVal binary(const Expr& e) {
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

  AVal func(const Expr& e) {
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

  // ------------------------------------------------------------------ what steps may depend on
  [[noreturn]] void refuse_tag(const Expr& e, const Tag& t, const char* what) const {
    const Expr& at = t.at ? *t.at : e;
    refuse(at.loc, std::string(what) + " depends on the rank in a way the proof does not follow");
  }
  // The same for every rank of a class.
  int64_t inv(const Expr& e, const char* what) {
    AVal a = num(e);
    if (a.t.kind != Tag::Inv) refuse_tag(e, a.t, what);
    return a.v;
  }
  // The representative's own rank moved: rank r0 + m·inner finds the value's m-th image.
  bool moved_rank(int64_t v, const Tag& t) const {
    if (v < 0 || v >= in_.nranks) return false;
    if (t.kind == Tag::Lin) return t.c == s_.inner && s_.digit(static_cast<uint32_t>(v)) == 0;
    if (t.kind != Tag::Mod) return false;
    const int64_t I = s_.inner, M = s_.count, d = s_.digit(static_cast<uint32_t>(v));
    // The moved digit itself, round its M values: v0 + I·((d + m) mod M - d) is the m-th image.
    if (t.s == I && t.k == M && ((t.c % M) + M) % M == 1 && t.u0 == d) return true;
    // A position round blocks of I·M ranks from the first: (v0 + I·m) mod I·M.
    if (t.s == 1 && t.k == I * M && t.c == I && t.u0 == v && v < I * M) return true;
    return false;
  }
  void rank(const Expr& e, const char* what) {
    AVal a = num(e);
    if (!moved_rank(a.v, a.t)) {
      if (a.t.kind == Tag::Inv) refuse(e.loc, std::string(what) + " is the same rank for every rank of a class");
      refuse_tag(e, a.t, what);
    }
  }
  // Whether the shift maps the set of ranks {start + j·stride} onto itself.
  bool invariant_set(int64_t start, uint32_t count, uint32_t stride) const {
    for (uint32_t j = 0; j < count; ++j) {
      int64_t x = s_.moved(static_cast<uint32_t>(start + int64_t{j} * stride));
      if (x < start || (x - start) % stride || (x - start) / stride >= count) return false;
    }
    return true;
  }
  // A collective's group inside an `on` block: either every member the representative's own
  // moved (the group moves with the rank), or the same group for every rank, mapped onto itself.
  // A collective whose member k reads or writes its own block k (allgather, reduce-scatter)
  // tells its members' places apart: a group mapped onto itself with its members moved to other
  // places does not map the collective's accesses.
  static bool positional(CollKind k) { return k == CollKind::Allgather || k == CollKind::ReduceScatter; }
  void group(const Expr* e, const Loc& at, bool positional_kind) {
    AVal g;
    if (e) {
      g = eval(*e);
      if (!g.group) refuse(e->loc, "an integer where a group is needed");
    } else {
      g.group = true;  // the frame's group: every rank here (calls are refused)
      g.count = in_.nranks;
    }
    if (g.t.kind == Tag::Inv) {
      if (!invariant_set(g.v, g.count, g.stride)) refuse(at, "a group the shift does not map onto itself");
      if (positional_kind)
        refuse(at, "an all-gather or reduce-scatter over a group the shift maps onto itself, its members to other places");
      return;
    }
    for (uint32_t j = 0; j < g.count; ++j)
      if (!moved_rank(g.v + int64_t{j} * g.stride, g.t)) refuse_tag(*e, g.t, "a group member");
  }
  // A chunk reference's indices, invariant; their values appended to `key`. The buffer is then
  // not rotated (a whole buffer may be: it is its own image).
  void ref(const Ref& r, std::vector<int64_t>* key = nullptr) {
    if (r.present() && !r.idx.empty()) rotate(r, 0);
    if (key) key->push_back(r.slot);
    for (const auto& ix : r.idx) {
      int64_t lo = ix.lo ? inv(*ix.lo, "a chunk index") : INT64_MIN;
      int64_t hi = ix.hi ? inv(*ix.hi, "a chunk index") : INT64_MIN;
      if (key) key->insert(key->end(), {lo, hi});
    }
    if (key) key->push_back(INT64_MAX);
  }

  // ------------------------------------------------------------------ global statements
  // A statement outside `on` blocks runs on every member of its group, alike but for the group:
  // each execution is a record (the statement and its values), and each rank's list of
  // (record, group) is compared with its image's after the walk (check_globals).
  // Each record carries the number of `on`-block and rank-loop executions before it: a rank and
  // its image take part in the same executions (their ranges are the shift's own), so equal
  // epochs keep a global statement where it was between them on both.
  struct Global {
    uint32_t rec, group;
    uint64_t epoch;
  };
  uint64_t epoch_ = 0;
  std::map<std::vector<int64_t>, uint32_t> recs_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> group_ids_;
  std::vector<GroupInfo> groups_;
  std::vector<std::vector<Global>> per_rank_;

  std::vector<char> rec_positional_;  // per record: a member's place decides its accesses

  void global(const Stmt& st, const Expr* over, std::vector<int64_t>& key, bool positional_kind) {
    GroupInfo g{0, in_.nranks, 1};
    if (over) {
      AVal a = eval(*over);
      if (!a.group) refuse(over->loc, "an integer where a group is needed");
      g = GroupInfo{static_cast<uint32_t>(a.v), a.count, a.stride};
    }
    key.insert(key.begin(), st.id);
    uint32_t rec = recs_.emplace(key, static_cast<uint32_t>(recs_.size())).first->second;
    if (rec_positional_.size() <= rec) rec_positional_.resize(rec + 1, 0);
    rec_positional_[rec] = positional_kind;
    auto [it, fresh] = group_ids_.emplace(std::make_tuple(g.start, g.count, g.stride), static_cast<uint32_t>(groups_.size()));
    if (fresh) groups_.push_back(g);
    if (per_rank_.empty()) per_rank_.resize(in_.nranks);
    for (uint32_t j = 0; j < g.count; ++j) {
      per_rank_[g.member(j)].push_back(Global{rec, it->second, epoch_});
      tick();
    }
  }

  void check_globals() {
    if (per_rank_.empty()) return;
    // (a, b, places): the shift maps group a onto group b (each member to its own place in b)
    std::set<std::tuple<uint32_t, uint32_t, bool>> mapped;
    auto maps = [&](uint32_t a, uint32_t b, bool places) {
      if (mapped.count({a, b, places})) return true;
      const GroupInfo &ga = groups_[a], &gb = groups_[b];
      if (ga.count != gb.count) return false;
      for (uint32_t j = 0; j < ga.count; ++j) {
        int64_t at = gb.index_of(s_.moved(ga.member(j)));
        if (at < 0 || (places && at != j)) return false;
      }
      mapped.insert({a, b, places});
      return true;
    };
    for (uint32_t x = 0; x < in_.nranks; ++x) {
      const auto &a = per_rank_[x], &b = per_rank_[s_.moved(x)];
      bool same = a.size() == b.size();
      for (size_t i = 0; same && i < a.size(); ++i)
        same = a[i].rec == b[i].rec && a[i].epoch == b[i].epoch && maps(a[i].group, b[i].group, rec_positional_[a[i].rec]);
      if (!same)
        throw NotProved{"ranks " + std::to_string(x) + " and " + std::to_string(s_.moved(x)) +
                        " run different statements outside `on` blocks"};
    }
  }

  // ------------------------------------------------------------------ choreographies
  // A loop over the ranks (`for r in 0 .. N { send B[(r - s) % N] from r to (r + 1) % N; }`) runs
  // once per representative with r abstract, like an `on` block. Its transfers' ends must be the
  // representative's own moved, and a chunk index that moves with r moves its buffer's chunks:
  // each buffer has one rotation δ (chunk c of rank x stands for chunk c + δ·m of rank x moved m
  // times; 0 for every buffer indexed otherwise). Since the shift reorders the loop's iterations,
  // one execution of the loop must not depend on their order: each rank sends in at most one
  // iteration and receives in at most one (its sends, and its local work, keep their order), and
  // no two iterations touch one chunk of one rank where either writes (the hazards between them).
  std::map<std::string, int64_t> delta_;  // buffer -> rotation, once fixed
  bool in_rank_loop_ = false;
  struct Access {
    uint32_t iter;  // the representative's iteration (its index in this execution)
    int64_t rank;   // at m = 0
    std::string buf;
    bool whole;
    int64_t chunk;  // at m = 0 (not whole)
    bool write;
  };
  std::vector<Access> accesses_;
  std::vector<AVal> send_roles_, recv_roles_;  // per iteration: who sends, who receives
  uint32_t iter_ = 0;
  std::set<std::tuple<int64_t, int64_t, int64_t>> invariant_ranges_;

  std::pair<uint32_t, uint32_t> buffer_shape(const Ref& r) const {
    for (const auto& b : in_.buffers)
      if (b.name == r.buf) return {b.chunks, b.dims};
    refuse(r.loc, "buffer '" + r.buf + "' is not known");
  }
  void rotate(const Ref& r, int64_t delta) {
    auto [it, fresh] = delta_.emplace(r.buf, delta);
    if (!fresh && it->second != delta)
      refuse(r.loc, "buffer '" + r.buf + "' is indexed by the rank in one place and not, or otherwise, in another");
  }
  // The chunk a transfer's end names, as it moves with the ranks.
  Access chunk(const Ref& r, int64_t rank, bool write) {
    Access a{iter_, rank, r.buf, r.idx.empty(), 0, write};
    if (a.whole) return a;
    auto [chunks, dims] = buffer_shape(r);
    if (dims != 1 || r.idx.size() != 1 || r.idx[0].hi) {
      ref(r);
      a.whole = false;
      a.chunk = INT64_MIN;  // fixed chunks, compared as one (conservative)
      return a;
    }
    AVal c = num(*r.idx[0].lo);
    a.chunk = c.v;
    const int64_t K = chunks;
    int64_t delta = 0;
    if (c.t.kind == Tag::Inv) {
      delta = 0;
    } else if (c.t.kind == Tag::Lin && span(c.v, c.t.c).first >= 0 && span(c.v, c.t.c).second < K) {
      delta = ((c.t.c % K) + K) % K;
    } else if (c.t.kind == Tag::Mod && c.t.k == K && c.t.s == 1) {
      delta = ((c.t.c % K) + K) % K;
    } else {
      refuse_tag(*r.idx[0].lo, c.t, "a chunk index");
    }
    // Moved count times a rank is itself again: so must its chunks be (chunk c of the last rank
    // of a class, moved once, is chunk c + δ of the first).
    if (delta * s_.count % K) refuse(r.loc, "buffer '" + r.buf + "' rotates by a step that does not come round with the ranks");
    rotate(r, delta);
    return a;
  }
  static bool same_role(const AVal& a, const AVal& b) {
    return a.v == b.v && a.t.kind == b.t.kind && a.t.c == b.t.c && a.t.k == b.t.k && a.t.s == b.t.s && a.t.u0 == b.t.u0;
  }
  void transfer(const SendStmt& st) {
    AVal from = num(*st.from), to = num(*st.to);
    if (!moved_rank(from.v, from.t)) refuse_tag(*st.from, from.t, "a sender");
    if (!moved_rank(to.v, to.t)) refuse_tag(*st.to, to.t, "a receiver");
    for (auto [roles, who] : {std::pair{&send_roles_, &from}, std::pair{&recv_roles_, &to}}) {
      if (roles->size() <= iter_) roles->push_back(*who);
      else if (!same_role((*roles)[iter_], *who)) refuse(st.loc, "one iteration's transfers sent or received by different ranks");
    }
    accesses_.push_back(chunk(st.src, from.v, false));
    accesses_.push_back(chunk(st.into.present() ? st.into : st.src, to.v, true));
  }
  static bool sends_use(const Block& b, int32_t slot) {
    std::vector<int32_t> used;
    for (const auto& st : b) {
      if (st->kind == StmtKind::Send) {
        auto& s = static_cast<const SendStmt&>(*st);
        expr_slots(s.from.get(), used);
        expr_slots(s.to.get(), used);
      } else if (st->kind == StmtKind::For) {
        if (sends_use(static_cast<const ForStmt&>(*st).body, slot)) return true;
      } else if (st->kind == StmtKind::If) {
        auto& s = static_cast<const IfStmt&>(*st);
        if (sends_use(s.then_body, slot) || sends_use(s.else_body, slot)) return true;
      }
    }
    return std::find(used.begin(), used.end(), slot) != used.end();
  }
  // The ranks of lo .. hi (by step) whose moved digit is 0 and that represent their class of the
  // group so far, in order: N / count of them at most, found without visiting the others (a ring's
  // loop over the ranks runs 2(N - 1) times).
  std::vector<int64_t> representatives(int64_t lo, int64_t hi, int64_t step) const {
    std::vector<int64_t> out;
    const int64_t I = s_.inner, block = I * s_.count;
    for (int64_t base = lo - lo % block; base < hi; base += block)
      for (int64_t r = std::max(base, lo); r < std::min(base + I, hi); ++r)
        if ((r - lo) % step == 0 && group_.representative_rank(static_cast<uint32_t>(r))) out.push_back(r);
    return out;
  }

  // One execution of a loop over the ranks.
  void rank_loop(const ForStmt& s) {
    if (in_rank_loop_) refuse(s.loc, "a loop over the ranks inside another");
    if (!group_.none()) refuse(s.loc, "a choreography beside other shifts");
    int64_t lo = inv(*s.lo, "a loop bound"), hi = inv(*s.hi, "a loop bound");
    int64_t step = s.step ? inv(*s.step, "a loop step") : 1;
    if (step <= 0 || lo < 0 || hi > in_.nranks) refuse(s.loc, "a loop over the ranks that is not ascending inside 0 .. N");
    if (!invariant_ranges_.count({lo, hi, step})) {  // (a ring's loop runs 2(N - 1) times over one range)
      auto in_range = [&](int64_t r) { return r >= lo && r < hi && (r - lo) % step == 0; };
      for (int64_t r = lo; r < hi; r += step)
        if (!in_range(s_.moved(static_cast<uint32_t>(r)))) refuse(s.loc, "a loop over the ranks the shift does not map onto itself");
      invariant_ranges_.insert({lo, hi, step});
    }
    in_rank_loop_ = true;
    ++epoch_;
    accesses_.clear();
    send_roles_.clear();
    recv_roles_.clear();
    iter_ = 0;
    for (int64_t r : representatives(lo, hi, step)) {
      slots_[static_cast<size_t>(s.slot)] = AVal{false, r, 0, 1, lin(s_.inner)};
      block(s.body);
      tick();
      if (send_roles_.size() == iter_) send_roles_.emplace_back();  // (an iteration with no transfer)
      if (recv_roles_.size() == iter_) recv_roles_.emplace_back();
      ++iter_;
    }
    in_rank_loop_ = false;
    // Two iterations never send from (receive at) one rank: the representatives' senders are in
    // classes of their own (each class's ranks are one representative's iterations, moved).
    for (const auto* roles : {&send_roles_, &recv_roles_}) {
      std::set<uint32_t> classes;
      for (const AVal& a : *roles)
        if (a.t.kind != Tag::Inv && !classes.insert(s_.class_of(static_cast<uint32_t>(a.v))).second)
          refuse(s.loc, "two iterations of a loop over the ranks on one rank");
    }
    // No two iterations touch one chunk of one rank where either writes: iteration b moved j
    // times is a's where j moves b's rank onto a's.
    for (const Access& a : accesses_)
      for (const Access& b : accesses_) {
        tick();
        if (!(a.write || b.write) || a.buf != b.buf) continue;
        auto ra = static_cast<uint32_t>(a.rank), rb = static_cast<uint32_t>(b.rank);
        if (s_.class_of(ra) != s_.class_of(rb)) continue;
        uint32_t j = s_.times(rb, ra);
        if (j == 0 && a.iter == b.iter) continue;  // one iteration: its own order
        bool clash = a.whole || b.whole || a.chunk == INT64_MIN || b.chunk == INT64_MIN;
        if (!clash) {
          int64_t K = buffer_shape(Ref{a.buf, {}, 1, {}, -1}).first, d = delta_.at(a.buf);
          clash = ((b.chunk + d * j) % K + K) % K == a.chunk;
        }
        if (clash) refuse(s.loc, "two iterations of a loop over the ranks touch one chunk of one rank (their order would decide)");
      }
  }

  // ------------------------------------------------------------------ statements
  void block(const Block& b) {
    for (const auto& st : b) stmt(*st);
  }

  void tick() {
    if (++work_ > in_.max_work) throw NotProved{"the proof would take too long (" + std::to_string(in_.max_work) + " statements)"};
  }

  void stmt(const Stmt& st) {
    tick();
    if (st.erroneous) refuse(st.loc, "a statement with a syntax error");
    if (in_rank_loop_ && st.kind != StmtKind::Let && st.kind != StmtKind::For && st.kind != StmtKind::If && st.kind != StmtKind::Send)
      refuse(st.loc, "a statement beside the transfers of a loop over the ranks");
    switch (st.kind) {
      case StmtKind::Let: {
        auto& s = static_cast<const LetStmt&>(st);
        slots_[static_cast<size_t>(s.slot)] = eval(*s.value);
        return;
      }
      case StmtKind::For: {
        auto& s = static_cast<const ForStmt&>(st);
        if (!in_on_ && sends_use(s.body, s.slot)) {
          rank_loop(s);
          return;
        }
        int64_t lo = inv(*s.lo, "a loop bound"), hi = inv(*s.hi, "a loop bound");
        int64_t step = s.step ? inv(*s.step, "a loop step") : 1;
        if (step == 0) refuse(st.loc, "a loop step of zero");
        for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
          slots_[static_cast<size_t>(s.slot)] = AVal{false, v, 0, 1, Tag{}};
          block(s.body);
          tick();
        }
        return;
      }
      case StmtKind::If: {
        auto& s = static_cast<const IfStmt&>(st);
        block(inv(*s.cond, "a condition") ? s.then_body : s.else_body);
        return;
      }
      case StmtKind::Require:
        if (!inv(*static_cast<const RequireStmt&>(st).cond, "a requirement")) refuse(st.loc, "a requirement fails");
        return;
      case StmtKind::Buffer:
      case StmtKind::Init:
      case StmtKind::Expect:
        // Declarations and postconditions: no steps (values only, which timing does not read).
        if (in_on_) refuse(st.loc, "a declaration inside an `on` block");
        return;
      case StmtKind::Send:
        if (!in_rank_loop_) refuse(st.loc, "a choreographic transfer outside a loop over the ranks");
        transfer(static_cast<const SendStmt&>(st));
        return;
      case StmtKind::P2P: {
        auto& s = static_cast<const P2PStmt&>(st);
        if (!in_on_) refuse(st.loc, "a point-to-point statement outside an `on` block");
        if (!s.peer || s.any_tag) refuse(st.loc, "a receive from any source or with any tag");
        rank(*s.peer, "a peer");
        if (s.tag) inv(*s.tag, "a tag");
        ref(s.buf);
        return;
      }
      case StmtKind::Wait:
        if (!in_on_) refuse(st.loc, "a wait outside an `on` block");
        return;
      case StmtKind::Copy: {
        auto& s = static_cast<const CopyStmt&>(st);
        if (s.at) refuse(st.loc, "a statement at one rank");
        std::vector<int64_t> key;
        ref(s.src, &key);
        ref(s.dst, &key);
        if (!in_on_) global(st, nullptr, key, false);
        return;
      }
      case StmtKind::Compute: {
        auto& s = static_cast<const ComputeStmt&>(st);
        if (s.at) refuse(st.loc, "a statement at one rank");
        std::vector<int64_t> key;
        if (s.flops) key.push_back(inv(*s.flops, "a compute's flops"));
        for (const auto* list : {&s.inputs, &s.outputs, &s.reads, &s.writes})
          for (const Ref& r : *list) ref(r, &key);
        if (!in_on_) global(st, nullptr, key, false);
        return;
      }
      case StmtKind::Coll: {
        auto& s = static_cast<const CollStmt&>(st);
        std::vector<int64_t> key;
        ref(s.buf, &key);
        ref(s.into, &key);
        if (!in_on_) {
          if (s.root) refuse(st.loc, "a rooted collective outside an `on` block (its root would have to move)");
          global(st, s.over.get(), key, positional(s.what));
          return;
        }
        if (s.root) rank(*s.root, "a root");
        group(s.over.get(), st.loc, positional(s.what));
        return;
      }
      case StmtKind::On: on(static_cast<const OnStmt&>(st)); return;
      case StmtKind::Call: refuse(st.loc, "a call");
    }
    refuse(st.loc, "a statement of an unknown kind");
  }

  void on(const OnStmt& s) {
    if (in_on_) refuse(s.loc, "an `on` block inside another");
    if (s.rank) refuse(s.loc, "an `on` block for one rank");
    int64_t lo = inv(*s.lo, "an `on` range"), hi = inv(*s.hi, "an `on` range");
    int64_t step = s.step ? inv(*s.step, "an `on` step") : 1;
    if (step <= 0) refuse(s.loc, "an `on` range that is not ascending");
    lo = std::max<int64_t>(lo, 0);
    hi = std::min<int64_t>(hi, in_.nranks);
    if (lo >= hi) return;
    auto in_range = [&](int64_t r) { return r >= lo && r < hi && (r - lo) % step == 0; };
    for (int64_t r = lo; r < hi; r += step)
      if (!in_range(s_.moved(static_cast<uint32_t>(r)))) refuse(s.loc, "an `on` range the shift does not map onto itself");
    in_on_ = true;
    ++epoch_;
    for (int64_t r : representatives(lo, hi, step)) {
      AVal& var = slots_[static_cast<size_t>(s.slot)];
      var = AVal{false, r, 0, 1, lin(s_.inner)};
      block(s.body);
    }
    in_on_ = false;
  }
};

}  // namespace

std::string prove_shift(const ShiftProofInput& in, const RankSymmetry& group, const RankShift& s) {
  if (s.count < 2 || uint64_t{s.inner} * s.count > in.nranks || in.nranks % (s.inner * s.count)) return "not a shift of these ranks";
  return Prover(in, group, s).run();
}

}  // namespace sg

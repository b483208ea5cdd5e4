// The value domain of the shift proof (core/graph/shift_proof.hpp): each value of a schedule as a
// function of the moved digit m, and the evaluator that computes it from an expression. Internal
// to core/graph/shift_proof.cpp, which runs the statements and choreographies over it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/ast.hpp"
#include "core/graph/shift_proof.hpp"

namespace sg::shift_proof {

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

inline int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// The values of expressions at a class representative, as functions of the moved digit, in the
// schedule's slots; what leaves the domain is refused (NotProved) where it appears.
class Values {
 public:
  Values(const ShiftProofInput& in, const RankShift& s) : in_(in), s_(s) {}

 protected:
  const ShiftProofInput& in_;
  const RankShift& s_;
  std::vector<AVal> slots_;

  [[noreturn]] void refuse(const Loc& at, const std::string& why) const {
    throw NotProved{why + " (line " + std::to_string(at.line) + ")"};
  }

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

  AVal num(const Expr& e);
  AVal eval(const Expr& e);
  AVal binary(const Expr& e);
  AVal func(const Expr& e);
};

}  // namespace sg::shift_proof

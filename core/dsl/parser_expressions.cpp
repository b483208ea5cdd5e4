// The parser's chunk references (B[i], B[a .. b]) and expressions, by precedence climbing, with
// the nesting limits that keep a deep expression an error rather than a stack overflow. Apart
// from the statements that use them; the Parser class is in core/dsl/parser_impl.hpp.
#include <string>
#include <utility>

#include "core/dsl/parser_impl.hpp"

namespace sg::parser_detail {

// ---- chunk references ----
Ref Parser::ref() {
  Ref r;
  r.loc = peek().loc;
  r.buf = ident("a buffer name");
  uint32_t start_col = r.loc.col;
  if (accept(Tok::LBracket)) {
    do {
      Index ix;
      ix.lo = expr();
      if (accept(Tok::DotDot)) ix.hi = expr();
      r.idx.push_back(std::move(ix));
    } while (accept(Tok::Comma));
    const Token& close = peek();
    expect(Tok::RBracket, "to close the index");
    if (close.loc.line == r.loc.line) r.length = close.loc.col + 1 - start_col;
  } else {
    r.length = static_cast<uint32_t>(r.buf.size());
  }
  return r;
}

// ---- expressions (precedence climbing) ----
ExprPtr Parser::expr() {
  auto e = cond();
  return std::move(span(e));
}

ExprPtr Parser::cond() {
  auto c = binary(0);
  if (accept(Tok::Question)) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Cond;
    e->loc = c->loc;
    e->args.push_back(std::move(c));
    // Both arms recurse (`1 ? 1 ? … : 1 : 1`, `c ? a : c ? b : …`): counted, so a long chain
    // is an error at the first `?` past the limit, not a stack overflow.
    Nest nest(*this);
    e->args.push_back(expr());
    expect(Tok::Colon, "in a conditional expression (c ? a : b)");
    e->args.push_back(cond());
    e->depth = depth_of(*e);
    if (e->depth > kMaxExprDepth) error_here("expression nested too deeply (more than 1000 levels)");
    return e;
  }
  return c;
}

int Parser::prec(Tok t) {
  switch (t) {
    case Tok::OrOr: return 1;
    case Tok::AndAnd: return 2;
    case Tok::Eq:
    case Tok::Ne: return 3;
    case Tok::Lt:
    case Tok::Le:
    case Tok::Gt:
    case Tok::Ge: return 4;
    case Tok::Plus:
    case Tok::Minus: return 5;
    case Tok::Star:
    case Tok::Slash:
    case Tok::Percent: return 6;
    case Tok::StarStar: return 7;
    default: return -1;
  }
}

BinOp Parser::binop(Tok t) {
  switch (t) {
    case Tok::OrOr: return BinOp::Or;
    case Tok::AndAnd: return BinOp::And;
    case Tok::Eq: return BinOp::Eq;
    case Tok::Ne: return BinOp::Ne;
    case Tok::Lt: return BinOp::Lt;
    case Tok::Le: return BinOp::Le;
    case Tok::Gt: return BinOp::Gt;
    case Tok::Ge: return BinOp::Ge;
    case Tok::Plus: return BinOp::Add;
    case Tok::Minus: return BinOp::Sub;
    case Tok::Star: return BinOp::Mul;
    case Tok::Slash: return BinOp::Div;
    case Tok::Percent: return BinOp::Mod;
    default: return BinOp::Pow;
  }
}

ExprPtr Parser::binary(int min_prec) {
  auto lhs = unary();
  for (;;) {
    int p = prec(peek().kind);
    if (p < 0 || p < min_prec) break;
    Tok t = next().kind;
    // ** is right-associative, the rest left-associative. The right operand recurses: for a
    // chain of ** once per operator, so that recursion is counted (an error at the first
    // operator past the limit, not a stack overflow: `1**1**…` with 75,000 operators crashed).
    Nest nest(*this);
    auto rhs = binary(t == Tok::StarStar ? p : p + 1);
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Binary;
    e->bop = binop(t);
    e->loc = lhs->loc;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    e->depth = depth_of(*e);
    if (e->depth > kMaxExprDepth) error_here("expression nested too deeply (more than 1000 levels)");
    lhs = std::move(e);
    span(lhs);
  }
  return lhs;
}

ExprPtr Parser::unary() {
  Nest nest(*this);
  if (at(Tok::Minus) || at(Tok::Bang)) {
    const Token& t = next();
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::Unary;
    e->uop = t.kind == Tok::Minus ? UnOp::Neg : UnOp::Not;
    e->loc = t.loc;
    e->args.push_back(unary());
    e->depth = depth_of(*e);
    return e;
  }
  return primary();
}

ExprPtr Parser::primary() {
  const Token& t = peek();
  auto e = std::make_unique<Expr>();
  e->loc = t.loc;
  e->length = t.length;
  if (t.kind == Tok::Int) {
    next();
    e->kind = ExprKind::Int;
    e->value = t.value;
    e->name = t.text;  // the spelling, e.g. 64MiB, so printing keeps it
    return e;
  }
  if (t.kind == Tok::Error) {
    // The lexer has reported it; parse on with a placeholder to find later errors too.
    next();
    e->kind = ExprKind::Int;
    return e;
  }
  if (accept(Tok::LParen)) {
    auto inner = expr();
    expect(Tok::RParen, "to close the parenthesis");
    return inner;
  }
  if (t.kind != Tok::Ident) error_here("expected an expression, found " + describe(t));
  std::string name = next().text;
  e->name = name;
  if (name == "world") {
    e->kind = ExprKind::World;
    return e;
  }
  if (at(Tok::LParen)) {
    static const std::pair<const char*, Func> funcs[] = {
        {"min", Func::Min},   {"max", Func::Max},     {"pow2", Func::Pow2},     {"cdiv", Func::Cdiv},
        {"log2", Func::Log2}, {"flog2", Func::Flog2}, {"ispow2", Func::IsPow2}, {"size", Func::Size},
    };
    bool known = false;
    if (name == "ranks") {
      e->kind = ExprKind::Ranks;
      known = true;
    } else {
      for (const auto& [n, f] : funcs) {
        if (name == n) {
          e->kind = ExprKind::Func;
          e->fn = f;
          known = true;
        }
      }
    }
    if (!known) {
      diags_.error(t.loc, "unknown function '" + name + "'", t.length);
      throw ParseError{};
    }
    next();
    if (!at(Tok::RParen)) {
      do e->args.push_back(expr());
      while (accept(Tok::Comma));
    }
    expect(Tok::RParen, "to close the argument list");
    span(e);
    e->depth = depth_of(*e);
    auto arity_error = [&](const char* want) {
      diags_.error(t.loc,
                   "'" + name + "' takes " + want + " argument" + (std::string(want) == "one" ? "" : "s") + ", got " +
                       std::to_string(e->args.size()),
                   t.length);
      throw ParseError{};
    };
    size_t n = e->args.size();
    if (e->kind == ExprKind::Ranks) {
      if (n != 2 && n != 3) arity_error("two or three (start, count[, stride])");
    } else {
      switch (e->fn) {
        case Func::Min:
        case Func::Max:
          if (n < 2) arity_error("at least two");
          break;
        case Func::Cdiv:
          if (n != 2) arity_error("two");
          break;
        default:
          if (n != 1) arity_error("one");
      }
    }
    return e;
  }
  if (at(Tok::LBracket)) {
    next();
    e->kind = ExprKind::GroupAt;
    e->args.push_back(expr());
    expect(Tok::RBracket, "after the member index");
    span(e);
    return e;
  }
  e->kind = ExprKind::Var;
  return e;
}

}  // namespace sg::parser_detail

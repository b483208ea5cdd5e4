// The parser's blocks (with their error recovery) and the statements that shape a schedule rather
// than become steps: let, for, if, require, buffer, init, expect, on, call. Apart from the
// statements that become steps (parser_step_statements.cpp) and from expressions
// (parser_expressions.cpp); the Parser class is in core/dsl/parser_impl.hpp.
#include <string>

#include "core/dsl/parser_impl.hpp"

namespace sg::parser_detail {

Block Parser::block() {
  Nest nest(*this);
  expect(Tok::LBrace, "to open a block");
  Block b;
  while (!at(Tok::RBrace) && !at(Tok::End)) {
    size_t before = pos_;
    if (at(Tok::Semi)) {  // a run of stray ';' is one mistake, one error
      if (!after_lex_error()) diags_.error(peek().loc, "expected a statement, found ';'");
      while (at(Tok::Semi)) next();
      continue;
    }
    try {
      auto st = statement();
      if (st) b.push_back(std::move(st));
    } catch (const ParseError&) {
      recover();
      if (salvaged_) b.push_back(std::move(salvaged_));
    }
    if (pos_ == before) next();  // always make progress
  }
  expect(Tok::RBrace, "to close the block");
  return b;
}

// Skip to just after the next ';' at this nesting level, or to a '}' that closes it.
void Parser::recover() {
  int depth = 0;
  while (!at(Tok::End)) {
    if (at(Tok::LBrace)) ++depth;
    if (at(Tok::RBrace)) {
      if (depth == 0) return;
      --depth;
      next();
      if (depth == 0) return;
      continue;
    }
    if (at(Tok::Semi) && depth == 0) {
      next();
      return;
    }
    if (depth == 0 && is_word("schedule") && peek().loc.col == 1) return;
    next();
  }
}

// A missing ';' is reported just past the statement's last token, as clang and rustc do: that
// is where the ';' goes, and the token found instead usually starts the next line's statement.
void Parser::end_stmt() {
  if (accept(Tok::Semi)) return;
  const Token& last = toks_[pos_ - 1];  // a statement has at least its keyword
  Loc loc = last.loc;
  loc.col += last.length;
  if (!after_lex_error()) diags_.error(loc, "expected ';' after the '" + stmt_word_ + "' statement, found " + describe(peek()));
  // When the next token is on a later line, or closes the block, the statement is complete and
  // only its ';' is missing: keep it and parse on from that token, so that recovery does not
  // swallow the next statement. Anything else on the same line is a garbled statement: skip it.
  if (peek().loc.line > last.loc.line || at(Tok::RBrace) || at(Tok::End)) return;
  throw ParseError{};
}

StmtPtr Parser::statement() {
  const Token& kw = peek();
  if (kw.kind != Tok::Ident) error_here("expected a statement, found " + describe(kw));
  const std::string& w = kw.text;
  stmt_word_ = w;
  if (w == "let") return let_stmt();
  if (w == "for") return for_stmt();
  if (w == "if") return if_stmt();
  if (w == "require") return require_stmt();
  if (w == "buffer") return buffer_stmt();
  if (w == "init") return init_stmt();
  if (w == "expect") return expect_stmt();
  if (w == "send" || w == "isend") return send_stmt();
  if (w == "recv" || w == "irecv") return recv_stmt();
  if (w == "wait" || w == "waitall") return wait_stmt();
  if (w == "copy") return copy_stmt(false);
  if (w == "reduce") {
    // `reduce B[i] into C[j]` is a local reduction, `reduce B[i] root R` the collective.
    size_t save = pos_;
    next();
    ref();
    bool local = is_word("into");
    pos_ = save;
    return local ? copy_stmt(true) : coll_stmt();
  }
  if (w == "compute") return compute_stmt();
  if (w == "allreduce" || w == "bcast" || w == "allgather" || w == "reduce_scatter" || w == "alltoall" || w == "barrier")
    return coll_stmt();
  if (w == "on") return on_stmt();
  if (w == "call") return call_stmt();
  if (w == "schedule") error_here("a schedule cannot be defined inside another (missing '}'?)");
  diags_.error(kw.loc, "unknown statement '" + w + "'", kw.length);
  throw ParseError{};
}

StmtPtr Parser::let_stmt() {
  auto s = make_stmt<LetStmt>(next());
  s->name = ident("a name after 'let'");
  return declaration(std::move(s), [&](LetStmt& d) {
    expect(Tok::Assign, "after the name");
    d.value = expr();
    end_stmt();
  });
}

StmtPtr Parser::for_stmt() {
  auto s = make_stmt<ForStmt>(next());
  s->var = ident("a loop variable");
  expect_word("in", "after the loop variable");
  s->lo = expr();
  expect(Tok::DotDot, "in the loop range (a .. b)");
  s->hi = expr();
  if (accept_word("step")) s->step = expr();
  s->body = block();
  return s;
}

StmtPtr Parser::if_stmt() {
  auto s = make_stmt<IfStmt>(next());
  s->cond = expr();
  s->then_body = block();
  if (accept_word("else")) {
    if (is_word("if")) {
      s->else_body.push_back(if_stmt());
    } else {
      s->else_body = block();
    }
  }
  return s;
}

StmtPtr Parser::require_stmt() {
  auto s = make_stmt<RequireStmt>(next());
  s->cond = expr();
  if (accept(Tok::Comma)) {
    if (!at(Tok::String)) error_here("expected a message string after ','");
    s->message = next().text;
  }
  end_stmt();
  return s;
}

StmtPtr Parser::buffer_stmt() {
  auto s = make_stmt<BufferStmt>(next());
  s->name = ident("a buffer name");
  return declaration(std::move(s), [&](BufferStmt& d) {
    expect(Tok::LBracket, "after the buffer name (buffer NAME[count] …)");
    do d.dims.push_back(expr());
    while (accept(Tok::Comma));
    expect(Tok::RBracket, "after the buffer dimensions");
    if (accept_word("bytes")) {
      d.bytes = expr();
      if (is_word("layout")) error_here("a layout names the extents of a shape: write `shape [...] layout LETTERS`, not `bytes`");
    } else if (accept_word("shape")) {
      expect(Tok::LBracket, "after 'shape'");
      do d.shape.push_back(expr());
      while (accept(Tok::Comma));
      expect(Tok::RBracket, "after the chunk shape");
      if (is_word("layout")) {
        next();
        d.layout_loc = peek().loc;
        d.layout = ident("a layout (the shape's axes as letters, e.g. bshd)");
      }
    } else {
      error_here("expected 'bytes' or 'shape' after the buffer dimensions, found " + describe(peek()));
    }
    if (is_word("dtype")) {
      next();
      d.dtype_loc = peek().loc;
      d.dtype = ident("an element type");
    }
    end_stmt();
  });
}

StmtPtr Parser::init_stmt() {
  auto s = make_stmt<InitStmt>(next());
  s->target = ref();
  if (accept_word("contrib")) {
    s->mode = InitKind::Contrib;
  } else if (accept_word("owned")) {
    s->mode = InitKind::Owned;
  } else if (accept_word("on")) {
    s->mode = InitKind::OnRank;
    s->rank = expr();
  } else {
    error_here("expected 'contrib', 'owned' or 'on RANK' after the buffer, found " + describe(peek()));
  }
  if (s->mode != InitKind::OnRank && !s->target.idx.empty())
    diags_.error(s->target.loc, "'init … contrib' and 'init … owned' take a whole buffer, without an index");
  end_stmt();
  return s;
}

Mask Parser::mask_word() {
  if (accept_word("causal")) return Mask::Causal;
  if (accept_word("full")) return Mask::Full;
  error_here("expected 'causal' or 'full', found " + describe(peek()));
}

StmtPtr Parser::expect_stmt() {
  auto s = make_stmt<ExpectStmt>(next());
  if (accept_word("nothing")) {
    s->what = ExpectKind::Nothing;
    end_stmt();
    return s;
  }
  const Token& name = peek();
  std::string w = ident(
      "a postcondition (allreduce, reduce, reduce_scatter, allgather, broadcast, gather, "
      "scatter, alltoall, attention, attention_backward, nothing)");
  struct Shape {
    const char* name;
    ExpectKind kind;
    int bufs;
    bool root;
    bool mask;
  };
  static const Shape shapes[] = {
      {"allreduce", ExpectKind::Allreduce, 1, false, false},
      {"reduce", ExpectKind::Reduce, 1, true, false},
      {"reduce_scatter", ExpectKind::ReduceScatter, 1, false, false},
      {"allgather", ExpectKind::Allgather, 1, false, false},
      {"broadcast", ExpectKind::Broadcast, 1, true, false},
      {"gather", ExpectKind::Gather, 1, true, false},
      {"scatter", ExpectKind::Scatter, 1, true, false},
      {"alltoall", ExpectKind::Alltoall, 2, false, false},
      {"attention", ExpectKind::Attention, 3, false, true},
      {"attention_backward", ExpectKind::AttentionBackward, 4, false, true},
  };
  const Shape* sh = nullptr;
  for (const auto& x : shapes)
    if (w == x.name) sh = &x;
  if (!sh) {
    diags_.error(name.loc, "unknown postcondition '" + w + "'", name.length);
    throw ParseError{};
  }
  s->what = sh->kind;
  expect(Tok::LParen, "after the postcondition name");
  for (int i = 0; i < sh->bufs; ++i) {
    if (i) expect(Tok::Comma, "between the arguments");
    s->bufs.push_back(ref());
  }
  // Attention with K and V apart: attention(Q, K, V, O, mask), attention_backward(Q, K, V, dQ,
  // dK, dV, mask). More buffers until the mask word (elaborate checks the count).
  while (sh->mask && at(Tok::Comma) && peek(1).kind == Tok::Ident && peek(1).text != "causal" && peek(1).text != "full" &&
         s->bufs.size() < 6) {
    next();
    s->bufs.push_back(ref());
  }
  if (sh->root) {
    expect(Tok::Comma, "before the root rank");
    s->root = expr();
  }
  if (sh->mask) {
    expect(Tok::Comma, "before the mask");
    s->mask = mask_word();
    // `, heads H`: Q and KV items are (block, head group) pairs, item = block * H + head.
    if (accept(Tok::Comma)) {
      expect_word("heads", "after the mask's comma (attention(Q, KV, O, causal, heads H))");
      s->heads = expr();
    }
  }
  expect(Tok::RParen, "to close the postcondition");
  if (accept_word("over")) s->over = expr();
  end_stmt();
  return s;
}

StmtPtr Parser::on_stmt() {
  auto s = make_stmt<OnStmt>(next());
  if (peek().kind == Tok::Ident && is_word("in", 1)) {
    s->var = next().text;
    next();
    s->lo = expr();
    expect(Tok::DotDot, "in the rank range (on r in a .. b)");
    s->hi = expr();
    if (accept_word("step")) s->step = expr();
  } else {
    s->rank = expr();
  }
  s->body = block();
  return s;
}

StmtPtr Parser::call_stmt() {
  auto s = make_stmt<CallStmt>(next());
  s->callee_loc = peek().loc;
  s->callee = ident("a schedule name after 'call'");
  expect(Tok::LParen, "after the schedule name");
  if (!at(Tok::RParen)) {
    do {
      CallArg a;
      a.loc = peek().loc;
      if (peek().kind == Tok::Ident && peek(1).kind == Tok::Assign) {
        a.key = next().text;
        next();
        a.value = expr();
      } else if (peek().kind == Tok::Ident && peek(1).kind == Tok::LBracket) {
        a.ref = ref();
      } else if (peek().kind == Tok::Ident && (peek(1).kind == Tok::Comma || peek(1).kind == Tok::RParen) && peek().text != "world") {
        a.bare_name = true;
        a.ref.buf = peek().text;
        a.ref.loc = peek().loc;
        a.ref.length = peek().length;
        a.value = primary();
      } else {
        a.value = expr();
      }
      s->args.push_back(std::move(a));
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "to close the argument list");
  end_stmt();
  return s;
}

}  // namespace sg::parser_detail

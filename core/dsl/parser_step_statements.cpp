// The parser's statements that become steps: send, recv (and their nonblocking forms), wait,
// copy and local reduce, compute, and the collectives. Apart from the statements that shape a
// schedule (parser_statements.cpp); the Parser class is in core/dsl/parser_impl.hpp.
#include <string>

#include "core/dsl/parser_impl.hpp"

namespace sg::parser_detail {

bool Parser::reduce_op(ReduceOp& op) {
  if (accept_word("sum")) return op = ReduceOp::Sum, true;
  if (accept_word("max")) return op = ReduceOp::Max, true;
  if (accept_word("min")) return op = ReduceOp::Min, true;
  if (accept_word("prod")) return op = ReduceOp::Prod, true;
  return false;
}

void Parser::op_clause(ReduceOp& op) {
  if (accept_word("op") && !reduce_op(op)) error_here("expected sum, max, min or prod after 'op', found " + describe(peek()));
}

StmtPtr Parser::send_stmt() {
  const Token& kw = peek();
  bool nb = kw.text == "isend";
  // A choreographic send names its source rank: `send B[i] from A to P`.
  size_t save = pos_;
  next();
  ref();
  bool choreo = is_word("from");
  pos_ = save;
  if (choreo) {
    if (nb) {
      diags_.error(kw.loc, "'isend' is a local-view statement: write 'isend B[i] to P' inside an 'on' block", kw.length);
      throw ParseError{};
    }
    auto s = make_stmt<SendStmt>(next());
    s->src = ref();
    expect_word("from", "");
    s->from = expr();
    expect_word("to", "after the source rank");
    s->to = expr();
    if (accept_word("into")) s->into = ref();
    if (accept_word("reduce")) reduce_op(s->op), s->reduce = true;
    end_stmt();
    return s;
  }
  auto s = make_stmt<P2PStmt>(next());
  s->is_send = true;
  s->nonblocking = nb;
  s->buf = ref();
  expect_word("to", "after the buffer (send B[i] to P, or send B[i] from A to P)");
  s->peer = expr();
  if (accept_word("tag")) {
    if (is_word("any")) error_here("a send needs a concrete tag, not 'any'");
    s->tag = expr();
  }
  if (accept_word("as")) s->handle = ident("a handle name after 'as'");
  end_stmt();
  return s;
}

StmtPtr Parser::recv_stmt() {
  const Token& kw = peek();
  auto s = make_stmt<P2PStmt>(next());
  s->is_send = false;
  s->nonblocking = kw.text == "irecv";
  s->buf = ref();
  expect_word("from", "after the buffer (recv B[i] from P)");
  if (!accept_word("any")) s->peer = expr();
  if (accept_word("tag")) {
    if (accept_word("any")) s->any_tag = true;
    else s->tag = expr();
  }
  if (accept_word("reduce")) reduce_op(s->op), s->reduce = true;
  if (accept_word("as")) s->handle = ident("a handle name after 'as'");
  end_stmt();
  return s;
}

StmtPtr Parser::wait_stmt() {
  const Token& kw = peek();
  auto s = make_stmt<WaitStmt>(next());
  if (kw.text == "waitall") {
    s->all = true;
  } else {
    do {
      s->handle_locs.push_back(peek().loc);
      s->handles.push_back(ident("a handle name"));
    } while (accept(Tok::Comma));
  }
  end_stmt();
  return s;
}

StmtPtr Parser::copy_stmt(bool reduce) {
  auto s = make_stmt<CopyStmt>(next());
  s->reduce = reduce;
  s->src = ref();
  expect_word("into", "after the source chunk");
  s->dst = ref();
  if (reduce) op_clause(s->op);
  if (accept_word("at")) s->at = expr();
  end_stmt();
  return s;
}

StmtPtr Parser::compute_stmt() {
  auto s = make_stmt<ComputeStmt>(next());
  s->name = ident("a kernel name after 'compute'");
  if (s->name == "attn" || s->name == "attn_bwd") {
    s->what = s->name == "attn" ? ComputeKind::Attn : ComputeKind::AttnBwd;
    expect(Tok::LParen, "after the kernel name");
    s->inputs.push_back(ref());
    expect(Tok::Comma, "between Q and KV");
    s->inputs.push_back(ref());
    if (accept(Tok::Comma)) s->inputs.push_back(ref());  // attn(Q[i], K[j], V[j])
    expect(Tok::RParen, "after the operands");
    expect_word("into", "after the operands");
    s->outputs.push_back(ref());
    if (s->what == ComputeKind::AttnBwd) {
      expect(Tok::Comma, "between dQ and dKV (attn_bwd writes into dQ[i], dKV[j])");
      s->outputs.push_back(ref());
      if (s->inputs.size() == 3) {
        expect(Tok::Comma, "between dK and dV (attn_bwd(Q[i], K[j], V[j]) writes into dQ[i], dK[j], dV[j])");
        s->outputs.push_back(ref());
      }
    }
    expect_word("mask", "after the output");
    s->mask = mask_word();
    if (accept_word("flops")) s->flops = expr();
  } else {
    s->what = ComputeKind::Generic;
    expect_word("flops", "after the kernel name (compute NAME flops F reads … writes …)");
    s->flops = expr();
    if (accept_word("reads")) {
      do s->reads.push_back(ref());
      while (accept(Tok::Comma));
    }
    if (accept_word("writes")) {
      do s->writes.push_back(ref());
      while (accept(Tok::Comma));
    }
  }
  if (accept_word("at")) s->at = expr();
  end_stmt();
  return s;
}

StmtPtr Parser::coll_stmt() {
  const Token& kw = peek();
  auto s = make_stmt<CollStmt>(next());
  const std::string& w = kw.text;
  if (w == "allreduce") s->what = CollKind::Allreduce;
  else if (w == "bcast") s->what = CollKind::Bcast;
  else if (w == "reduce") s->what = CollKind::Reduce;
  else if (w == "allgather") s->what = CollKind::Allgather;
  else if (w == "reduce_scatter") s->what = CollKind::ReduceScatter;
  else if (w == "alltoall") s->what = CollKind::Alltoall;
  else s->what = CollKind::Barrier;
  if (s->what != CollKind::Barrier) s->buf = ref();
  if (s->what == CollKind::Bcast || s->what == CollKind::Reduce) {
    expect_word("root", "(a rooted collective names its root: … root R)");
    s->root = expr();
  }
  if (s->what == CollKind::Alltoall && accept_word("into")) s->into = ref();
  if (s->what == CollKind::Allreduce || s->what == CollKind::Reduce || s->what == CollKind::ReduceScatter) op_clause(s->op);
  if (accept_word("over")) s->over = expr();
  end_stmt();
  return s;
}

}  // namespace sg::parser_detail

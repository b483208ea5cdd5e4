// The .sched parser's one class, shared by its files (internal to core/dsl/parser*.cpp, included
// by nothing else): its token helpers and error reporting are defined here, inline, because every
// part of the grammar calls them; the grammar itself is split by what it parses:
//   parser.cpp                  the entry points, the top level: files, schedules, their parameters
//   parser_statements.cpp       blocks, recovery, and the statements that shape a schedule
//                               (let, for, if, require, buffer, init, expect, on, call)
//   parser_step_statements.cpp  the statements that become steps (send, recv, wait, copy, reduce,
//                               compute, the collectives)
//   parser_expressions.cpp      chunk references and expressions
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dsl/ast.hpp"
#include "core/dsl/diagnostics.hpp"
#include "core/dsl/token.hpp"

namespace sg::parser_detail {

struct ParseError {};

class Parser {
 public:
  Parser(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>* stmt_locs);

  std::unique_ptr<Program> program();
  ExprPtr lone_expression();

 private:
  // ---- token helpers ----
  const Token& peek(size_t k = 0) const {
    size_t i = pos_ + k;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  bool at(Tok t) const { return peek().kind == t; }
  bool is_word(const char* w, size_t k = 0) const { return peek(k).kind == Tok::Ident && peek(k).text == w; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  // Sets an expression's underline to run from its first token to the last one consumed.
  ExprPtr& span(ExprPtr& e) {
    if (pos_ > 0) {
      const Token& last = toks_[pos_ - 1];
      if (last.loc.line == e->loc.line && last.loc.col + last.length > e->loc.col) e->length = last.loc.col + last.length - e->loc.col;
    }
    return e;
  }
  bool accept(Tok t) {
    if (at(t)) {
      next();
      return true;
    }
    return false;
  }
  bool accept_word(const char* w) {
    if (is_word(w)) {
      next();
      return true;
    }
    return false;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::Ident: return "'" + t.text + "'";
      case Tok::Int: return "'" + t.text + "'";
      case Tok::String: return "a string";
      default: return tok_spelling(t.kind);
    }
  }
  // Whether the lexer reported (and dropped) a bad character between the previous token and the
  // next one: a parse error there is that character's consequence, and would only repeat it.
  bool after_lex_error() const {
    if (pos_ == 0 || lex_errors_.empty()) return false;
    Loc a = toks_[pos_ - 1].loc, b = peek().loc;
    auto before = [](Loc x, Loc y) { return x.line < y.line || (x.line == y.line && x.col < y.col); };
    for (Loc e : lex_errors_)
      if (before(a, e) && before(e, b)) return true;
    return false;
  }
  [[noreturn]] void error_here(const std::string& msg) {
    const Token& t = peek();
    // Errors at the end of the file point just after the last real token.
    Loc loc = t.loc;
    if (t.kind == Tok::End && pos_ > 0) {
      const Token& prev = toks_[pos_ - 1];
      loc = prev.loc;
      loc.col += prev.length;
    }
    if (!after_lex_error()) diags_.error(loc, msg, t.length ? t.length : 1);
    throw ParseError{};
  }
  void expect(Tok t, const char* what) {
    if (!accept(t)) error_here(std::string("expected ") + tok_spelling(t) + " " + what + ", found " + describe(peek()));
  }
  void expect_word(const char* w, const char* what) {
    if (!accept_word(w)) error_here(std::string("expected '") + w + "' " + what + ", found " + describe(peek()));
  }
  std::string ident(const char* what) {
    if (!at(Tok::Ident)) error_here(std::string("expected ") + what + ", found " + describe(peek()));
    return next().text;
  }

  // ---- the top level: schedules and their parameters (parser.cpp) ----
  std::string leading_comment(uint32_t from_line);
  std::unique_ptr<Schedule> schedule();
  void skip_parameter(size_t start);

  // ---- shared by the statement parsers ----
  template <class T>
  std::unique_ptr<T> make_stmt(const Token& kw) {
    auto s = std::make_unique<T>();
    s->loc = kw.loc;
    s->length = kw.length;
    s->id = static_cast<uint32_t>(stmt_locs_->size());
    stmt_locs_->push_back(kw.loc);
    return s;
  }

  // A declaration whose name has been read keeps it when the rest does not parse: the statement
  // is marked erroneous and handed to the enclosing block (salvaged_), which recovers and keeps
  // it, so later uses of the name raise no "unknown name" errors of their own.
  template <class T, class F>
  StmtPtr declaration(std::unique_ptr<T> s, F&& rest) {
    try {
      rest(*s);
    } catch (const ParseError&) {
      s->erroneous = true;
      salvaged_ = std::move(s);
      throw;
    }
    return s;
  }

  // Nesting limits keep every recursive walk of the tree (resolve, elaborate, print) far from
  // the stack's end, whatever the input.
  static constexpr int kMaxNesting = 200;
  static constexpr uint32_t kMaxExprDepth = 1000;
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxNesting) {
        --p_.nesting_;
        p_.error_here("nesting too deep (more than " + std::to_string(kMaxNesting) + " levels)");
      }
    }
    ~Nest() { --p_.nesting_; }
    Parser& p_;
  };
  static uint32_t depth_of(const Expr& e) {
    uint32_t d = 0;
    for (const auto& a : e.args) d = std::max(d, a->depth);
    return d + 1;
  }

  // ---- blocks and the statements that shape a schedule (parser_statements.cpp) ----
  Block block();
  void recover();
  void end_stmt();
  StmtPtr statement();
  StmtPtr let_stmt();
  StmtPtr for_stmt();
  StmtPtr if_stmt();
  StmtPtr require_stmt();
  StmtPtr buffer_stmt();
  StmtPtr init_stmt();
  Mask mask_word();
  StmtPtr expect_stmt();
  StmtPtr on_stmt();
  StmtPtr call_stmt();

  // ---- the statements that become steps (parser_step_statements.cpp) ----
  bool reduce_op(ReduceOp& op);
  void op_clause(ReduceOp& op);
  StmtPtr send_stmt();
  StmtPtr recv_stmt();
  StmtPtr wait_stmt();
  StmtPtr copy_stmt(bool reduce);
  StmtPtr compute_stmt();
  StmtPtr coll_stmt();

  // ---- chunk references and expressions (parser_expressions.cpp) ----
  Ref ref();
  ExprPtr expr();
  ExprPtr cond();
  static int prec(Tok t);
  static BinOp binop(Tok t);
  ExprPtr binary(int min_prec);
  ExprPtr unary();
  ExprPtr primary();

  const SourceManager& sm_;
  uint32_t file_;
  Diagnostics& diags_;
  std::vector<Loc>* stmt_locs_;
  std::vector<Token> toks_;
  std::vector<Loc> lex_errors_;  // where the lexer reported an error (it drops bad characters)
  size_t pos_ = 0;
  int nesting_ = 0;
  std::string stmt_word_;  // the keyword of the statement being parsed, for the missing-';' error
  StmtPtr salvaged_;       // an erroneous declaration on its way to its block (see declaration())
};

}  // namespace sg::parser_detail

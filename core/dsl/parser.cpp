#include "core/dsl/parser.hpp"

#include <algorithm>

#include "core/dsl/lexer.hpp"
#include "core/dsl/resolve.hpp"

namespace sg {

namespace {

struct ParseError {};

class Parser {
 public:
  Parser(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>* stmt_locs)
      : sm_(sm), file_(file), diags_(diags), stmt_locs_(stmt_locs) {
    size_t before = diags.all().size();
    toks_ = lex(sm, file, diags);
    for (size_t i = before; i < diags.all().size(); ++i) lex_errors_.push_back(diags.all()[i].loc);
  }

  std::unique_ptr<Program> program() {
    auto prog = std::make_unique<Program>();
    prog->file = file_;
    prog->header = leading_comment(1);
    while (!at(Tok::End)) {
      if (is_word("schedule")) {
        try {
          auto s = schedule();
          if (s) {
            if (prog->find(s->name))
              diags_.error(s->loc, "schedule '" + s->name + "' is defined twice in this file", static_cast<uint32_t>(s->name.size()));
            prog->schedules.push_back(std::move(s));
          }
        } catch (const ParseError&) {
          salvaged_.reset();
          // skip to the next `schedule` keyword at the start of a line
          while (!at(Tok::End) && !(is_word("schedule") && peek().loc.col == 1)) next();
        }
      } else {
        diags_.error(peek().loc, "expected 'schedule' at the top level of a file, found " + describe(peek()),
                     peek().length ? peek().length : 1);
        next();
        while (!at(Tok::End) && !is_word("schedule")) next();
      }
    }
    return prog;
  }

  ExprPtr lone_expression() {
    try {
      auto e = expr();
      if (!at(Tok::End)) error_here("unexpected " + describe(peek()) + " after the value");
      return e;
    } catch (const ParseError&) {
      return nullptr;
    }
  }

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

  // The comment block ending just above `line` (used for file headers and schedule docs).
  std::string leading_comment(uint32_t from_line) {
    const SourceFile& f = sm_.file(file_);
    std::string out;
    for (uint32_t l = from_line; l <= f.line_count(); ++l) {
      std::string_view s = f.line(l);
      size_t i = s.find_first_not_of(" \t");
      if (i == std::string_view::npos) {
        if (!out.empty()) break;
        continue;
      }
      if (s[i] != '#') break;
      std::string_view body = s.substr(i + 1);
      if (!body.empty() && body[0] == ' ') body.remove_prefix(1);
      out += body;
      out += '\n';
    }
    return out;
  }

  template <class T>
  std::unique_ptr<T> make_stmt(const Token& kw) {
    auto s = std::make_unique<T>();
    s->loc = kw.loc;
    s->length = kw.length;
    s->id = static_cast<uint32_t>(stmt_locs_->size());
    stmt_locs_->push_back(kw.loc);
    return s;
  }

  // ---- schedules ----
  std::unique_ptr<Schedule> schedule() {
    const Token& kw = next();  // 'schedule'
    auto s = std::make_unique<Schedule>();
    s->loc = kw.loc;
    s->doc = leading_comment(1);
    const Token& name = peek();
    s->name = ident("a schedule name");
    s->loc = name.loc;
    expect(Tok::LParen, "after the schedule name");
    bool at_body = false;  // a broken parameter list ran into the body's '{' (the error is reported)
    if (!at(Tok::RParen)) {
      do {
        Param p;
        p.loc = peek().loc;
        size_t start = pos_;
        try {
          if (is_word("group") && peek(1).kind == Tok::Ident) {
            next();
            p.kind = ParamKind::Group;
          } else if (is_word("buffer") && peek(1).kind == Tok::Ident) {
            next();
            p.kind = ParamKind::Buffer;
          }
          p.loc = peek().loc;
          p.name = ident("a parameter name");
          if (p.kind == ParamKind::Int && accept(Tok::Assign)) p.def = expr();
          if (!at(Tok::Comma) && !at(Tok::RParen)) error_here("expected ',' or ')' after the parameter, found " + describe(peek()));
        } catch (const ParseError&) {
          // Keep a parameter whose default did not parse, so the body's uses of it are not
          // errors too, and parse on from the next parameter (not from the next schedule).
          p.erroneous = true;
          p.def.reset();
          skip_parameter(start);
          at_body = at(Tok::LBrace);
        }
        if (!p.name.empty()) s->params.push_back(std::move(p));
      } while (!at_body && accept(Tok::Comma));
    }
    if (!at_body) expect(Tok::RParen, "to close the parameter list");
    s->body = block();
    resolve_schedule(*s, diags_);
    return s;
  }

  // Skips the rest of a parameter that did not parse: to the ',' or ')' at the nesting level the
  // parameter started at (parentheses opened since `start` are closed first), or to the '{' of
  // the body when the ')' is missing.
  void skip_parameter(size_t start) {
    int depth = 0;
    for (size_t i = start; i < pos_; ++i) depth += toks_[i].kind == Tok::LParen ? 1 : toks_[i].kind == Tok::RParen ? -1 : 0;
    while (!at(Tok::End) && !at(Tok::LBrace)) {
      if (depth <= 0 && (at(Tok::Comma) || at(Tok::RParen))) return;
      if (at(Tok::LParen)) ++depth;
      if (at(Tok::RParen)) --depth;
      next();
    }
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

  Block block() {
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
  void recover() {
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
  void end_stmt() {
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

  StmtPtr statement() {
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

  StmtPtr let_stmt() {
    auto s = make_stmt<LetStmt>(next());
    s->name = ident("a name after 'let'");
    return declaration(std::move(s), [&](LetStmt& d) {
      expect(Tok::Assign, "after the name");
      d.value = expr();
      end_stmt();
    });
  }

  StmtPtr for_stmt() {
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

  StmtPtr if_stmt() {
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

  StmtPtr require_stmt() {
    auto s = make_stmt<RequireStmt>(next());
    s->cond = expr();
    if (accept(Tok::Comma)) {
      if (!at(Tok::String)) error_here("expected a message string after ','");
      s->message = next().text;
    }
    end_stmt();
    return s;
  }

  StmtPtr buffer_stmt() {
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

  StmtPtr init_stmt() {
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

  Mask mask_word() {
    if (accept_word("causal")) return Mask::Causal;
    if (accept_word("full")) return Mask::Full;
    error_here("expected 'causal' or 'full', found " + describe(peek()));
  }

  StmtPtr expect_stmt() {
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

  bool reduce_op(ReduceOp& op) {
    if (accept_word("sum")) return op = ReduceOp::Sum, true;
    if (accept_word("max")) return op = ReduceOp::Max, true;
    if (accept_word("min")) return op = ReduceOp::Min, true;
    if (accept_word("prod")) return op = ReduceOp::Prod, true;
    return false;
  }
  void op_clause(ReduceOp& op) {
    if (accept_word("op") && !reduce_op(op)) error_here("expected sum, max, min or prod after 'op', found " + describe(peek()));
  }

  StmtPtr send_stmt() {
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

  StmtPtr recv_stmt() {
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

  StmtPtr wait_stmt() {
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

  StmtPtr copy_stmt(bool reduce) {
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

  StmtPtr compute_stmt() {
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

  StmtPtr coll_stmt() {
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

  StmtPtr on_stmt() {
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

  StmtPtr call_stmt() {
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

  // ---- chunk references ----
  Ref ref() {
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
  ExprPtr expr() {
    auto e = cond();
    return std::move(span(e));
  }

  ExprPtr cond() {
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

  static int prec(Tok t) {
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
  static BinOp binop(Tok t) {
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

  ExprPtr binary(int min_prec) {
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

  ExprPtr unary() {
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

  ExprPtr primary() {
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

}  // namespace

std::unique_ptr<Program> parse(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>& stmt_locs) {
  Parser p(sm, file, diags, &stmt_locs);
  return p.program();
}

ExprPtr parse_expression(const SourceManager& sm, uint32_t file, Diagnostics& diags) {
  std::vector<Loc> unused;
  Parser p(sm, file, diags, &unused);
  return p.lone_expression();
}

}  // namespace sg

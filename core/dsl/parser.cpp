// The parser's entry points and the top level of a file: schedules and their parameter lists.
// The rest of the grammar (statements, expressions) is in the other parser_*.cpp files, around
// the one Parser class of core/dsl/parser_impl.hpp.
#include "core/dsl/parser.hpp"

#include "core/dsl/lexer.hpp"
#include "core/dsl/parser_impl.hpp"
#include "core/dsl/resolve.hpp"

namespace sg {

namespace parser_detail {

Parser::Parser(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>* stmt_locs)
    : sm_(sm), file_(file), diags_(diags), stmt_locs_(stmt_locs) {
  size_t before = diags.all().size();
  toks_ = lex(sm, file, diags);
  for (size_t i = before; i < diags.all().size(); ++i) lex_errors_.push_back(diags.all()[i].loc);
}

std::unique_ptr<Program> Parser::program() {
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

ExprPtr Parser::lone_expression() {
  try {
    auto e = expr();
    if (!at(Tok::End)) error_here("unexpected " + describe(peek()) + " after the value");
    return e;
  } catch (const ParseError&) {
    return nullptr;
  }
}

// The comment block ending just above `line` (used for file headers and schedule docs).
std::string Parser::leading_comment(uint32_t from_line) {
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

std::unique_ptr<Schedule> Parser::schedule() {
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
void Parser::skip_parameter(size_t start) {
  int depth = 0;
  for (size_t i = start; i < pos_; ++i) depth += toks_[i].kind == Tok::LParen ? 1 : toks_[i].kind == Tok::RParen ? -1 : 0;
  while (!at(Tok::End) && !at(Tok::LBrace)) {
    if (depth <= 0 && (at(Tok::Comma) || at(Tok::RParen))) return;
    if (at(Tok::LParen)) ++depth;
    if (at(Tok::RParen)) --depth;
    next();
  }
}

}  // namespace parser_detail

std::unique_ptr<Program> parse(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>& stmt_locs) {
  parser_detail::Parser p(sm, file, diags, &stmt_locs);
  return p.program();
}

ExprPtr parse_expression(const SourceManager& sm, uint32_t file, Diagnostics& diags) {
  std::vector<Loc> unused;
  parser_detail::Parser p(sm, file, diags, &unused);
  return p.lone_expression();
}

}  // namespace sg

// Tokens of the schedule language. Keywords are contextual, so the lexer only knows identifiers.
#pragma once
#include <cstdint>
#include <string>

#include "core/dsl/source.hpp"

namespace sg {

enum class Tok : uint8_t {
  End,
  Ident,
  Int,
  String,
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Semi,
  Colon,
  Question,
  Assign,
  DotDot,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  StarStar,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  AndAnd,
  OrOr,
  Bang,
  Error,
};

const char* tok_spelling(Tok t);

struct Token {
  Tok kind = Tok::End;
  Loc loc;
  uint32_t length = 0;
  std::string text;   // identifier name, string contents, or the raw spelling of an integer
  int64_t value = 0;  // integer value (suffix applied)
};

}  // namespace sg

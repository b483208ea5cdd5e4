#include "core/dsl/lexer.hpp"

#include <cctype>
#include <cstdio>

#include "core/base/sizes.hpp"

namespace sg {

const char* tok_spelling(Tok t) {
  switch (t) {
    case Tok::End: return "end of file";
    case Tok::Ident: return "identifier";
    case Tok::Int: return "integer";
    case Tok::String: return "string";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::Comma: return "','";
    case Tok::Semi: return "';'";
    case Tok::Colon: return "':'";
    case Tok::Question: return "'?'";
    case Tok::Assign: return "'='";
    case Tok::DotDot: return "'..'";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::Percent: return "'%'";
    case Tok::StarStar: return "'**'";
    case Tok::Eq: return "'=='";
    case Tok::Ne: return "'!='";
    case Tok::Lt: return "'<'";
    case Tok::Le: return "'<='";
    case Tok::Gt: return "'>'";
    case Tok::Ge: return "'>='";
    case Tok::AndAnd: return "'&&'";
    case Tok::OrOr: return "'||'";
    case Tok::Bang: return "'!'";
    case Tok::Error: return "invalid token";
  }
  return "token";
}

std::vector<Token> lex(const SourceManager& sm, uint32_t file, Diagnostics& diags) {
  const std::string& s = sm.file(file).text();
  std::vector<Token> out;
  uint32_t line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < s.size(); ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    Token t;
    t.loc = Loc{file, line, col};
    size_t start = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) advance(1);
      t.kind = Tok::Ident;
      t.text = s.substr(start, i - start);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) advance(1);
      std::string digits = s.substr(start, i - start);
      size_t sfx = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) advance(1);
      std::string suffix = s.substr(sfx, i - sfx);
      t.kind = Tok::Int;
      t.text = s.substr(start, i - start);
      int64_t v = 0;
      bool overflow = false;
      for (char d : digits) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d - '0', &v)) overflow = true;
      }
      if (!suffix.empty()) {
        // The size suffixes are the command line's (core/base/sizes.hpp): one table.
        uint64_t mult = size_suffix_factor(suffix);
        if (mult && __builtin_mul_overflow(v, static_cast<int64_t>(mult), &v)) overflow = true;
        if (!mult) {
          diags.error(t.loc, "unknown size suffix '" + suffix + "' (use KiB MiB GiB TiB or K M G T)", static_cast<uint32_t>(i - start));
          t.kind = Tok::Error;
        }
      }
      if (overflow) {
        diags.error(t.loc, "integer literal '" + t.text + "' does not fit in 64 bits", static_cast<uint32_t>(i - start));
        t.kind = Tok::Error;
      }
      t.value = v;
    } else if (c == '"') {
      advance(1);
      std::string val;
      bool closed = false;
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\\')) {
          val += s[i + 1];
          advance(2);
          continue;
        }
        if (s[i] == '"') {
          closed = true;
          advance(1);
          break;
        }
        val += s[i];
        advance(1);
      }
      if (!closed) {
        diags.error(t.loc, "unterminated string");
        t.kind = Tok::Error;
      } else {
        t.kind = Tok::String;
      }
      t.text = val;
    } else {
      auto two = [&](char a, char b) { return c == a && i + 1 < s.size() && s[i + 1] == b; };
      Tok k = Tok::Error;
      size_t n = 1;
      if (two('.', '.')) k = Tok::DotDot, n = 2;
      else if (two('*', '*')) k = Tok::StarStar, n = 2;
      else if (two('=', '=')) k = Tok::Eq, n = 2;
      else if (two('!', '=')) k = Tok::Ne, n = 2;
      else if (two('<', '=')) k = Tok::Le, n = 2;
      else if (two('>', '=')) k = Tok::Ge, n = 2;
      else if (two('&', '&')) k = Tok::AndAnd, n = 2;
      else if (two('|', '|')) k = Tok::OrOr, n = 2;
      else {
        switch (c) {
          case '(': k = Tok::LParen; break;
          case ')': k = Tok::RParen; break;
          case '{': k = Tok::LBrace; break;
          case '}': k = Tok::RBrace; break;
          case '[': k = Tok::LBracket; break;
          case ']': k = Tok::RBracket; break;
          case ',': k = Tok::Comma; break;
          case ';': k = Tok::Semi; break;
          case ':': k = Tok::Colon; break;
          case '?': k = Tok::Question; break;
          case '=': k = Tok::Assign; break;
          case '+': k = Tok::Plus; break;
          case '-': k = Tok::Minus; break;
          case '*': k = Tok::Star; break;
          case '/': k = Tok::Slash; break;
          case '%': k = Tok::Percent; break;
          case '<': k = Tok::Lt; break;
          case '>': k = Tok::Gt; break;
          case '!': k = Tok::Bang; break;
          default: break;
        }
      }
      if (k == Tok::Error) {
        unsigned char uc = static_cast<unsigned char>(c);
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", uc);  // (hex, not the decimal 208 of 0xD0)
        std::string shown = std::isprint(uc) ? std::string("'") + c + "'" : std::string("byte ") + hex;
        diags.error(t.loc, "unexpected character " + shown);
        // Skip a whole UTF-8 sequence so one bad character gives one error.
        advance(1);
        while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) advance(1);
        continue;
      }
      t.kind = k;
      t.text = s.substr(i, n);
      advance(n);
    }
    t.length = static_cast<uint32_t>(i - start);
    out.push_back(std::move(t));
  }
  Token end;
  end.kind = Tok::End;
  end.loc = Loc{file, line, col};
  out.push_back(end);
  return out;
}

}  // namespace sg

// Turns a SourceFile into tokens; malformed tokens become diagnostics and Tok::Error tokens.
#pragma once
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/dsl/token.hpp"

namespace sg {

std::vector<Token> lex(const SourceManager& sm, uint32_t file, Diagnostics& diags);

}  // namespace sg

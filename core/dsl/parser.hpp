// Recursive-descent parser for .sched files. Recovers at ';' and '}' so one run reports several
// errors. Statement locations are appended to `stmt_locs` (the session's statement table).
#pragma once
#include <vector>

#include "core/dsl/ast.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg {

std::unique_ptr<Program> parse(const SourceManager& sm, uint32_t file, Diagnostics& diags, std::vector<Loc>& stmt_locs);

// Parses a stand-alone integer expression (a --set value); names are left unresolved.
ExprPtr parse_expression(const SourceManager& sm, uint32_t file, Diagnostics& diags);

}  // namespace sg

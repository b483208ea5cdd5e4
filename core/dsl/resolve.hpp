// Name resolution for one schedule: binds every variable and buffer name to a frame slot,
// reports unknown and reserved names, and marks loops whose step count is the same in every
// iteration (so the size estimate can multiply instead of iterate).
#pragma once
#include "core/dsl/ast.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg {

void resolve_schedule(Schedule& s, Diagnostics& diags);
bool is_reserved_name(const std::string& name);
// Appends the frame slots expression e reads (variables and groups; after resolution).
void expr_slots(const Expr* e, std::vector<int32_t>& out);

}  // namespace sg

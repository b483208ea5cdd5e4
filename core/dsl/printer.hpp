// Prints an AST back as schedule source. print(parse(x)) parses to the same tree, which the
// property tests check; `--dump-after parse` shows this text.
#pragma once
#include <string>

#include "core/dsl/ast.hpp"

namespace sg {

std::string print_expr(const Expr& e);
std::string print_schedule(const Schedule& s);
std::string print_program(const Program& p);

}  // namespace sg

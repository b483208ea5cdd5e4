#include "core/base/errors.hpp"

#include <cstring>

namespace sg {

namespace {

// "…/stepgraph/core/graph/validate.cpp" -> "core/graph/validate.cpp": the part a maintainer
// finds in the repository, whatever directory the build ran in.
std::string repo_path(const char* file) {
  std::string f(file);
  for (const char* top : {"core/", "sim/", "verify/", "exec/", "cli/", "bench/", "tests/"}) {
    auto k = f.rfind(std::string("/") + top);
    if (k != std::string::npos) return f.substr(k + 1);
    if (f.rfind(top, 0) == 0) return f;
  }
  return f;
}

}  // namespace

InternalError::InternalError(std::string message, Loc input, std::source_location where)
    : message_(std::move(message)), origin_(repo_path(where.file_name()) + ":" + std::to_string(where.line())), input_(input) {
  text_ = message_ + " (" + origin_ + ")";
}

void internal_error(const std::string& message, Loc input, std::source_location where) { throw InternalError(message, input, where); }

}  // namespace sg

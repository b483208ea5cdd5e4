// MSCCL XML as a front end of the pipeline (core/pipeline.cpp's table): which targets it claims,
// how it opens one, and how an opened one is elaborated (lowered) into a step graph.
#pragma once
#include <memory>
#include <string>

#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/step_graph.hpp"
#include "core/msccl/program.hpp"

namespace sg::msccl {

// What open_target leaves in Target::other: the program read, under the name the commands show.
struct Opened : OpenedProgram {
  std::shared_ptr<const Program> program;
};

// A spec whose name ends in .xml (any case).
bool claims(const std::string& spec);

// Reads and checks the file (errors in s.diags, an unopened Target then). The program is kept by
// the session; the Target names it (the <algo> name, else the file's stem), takes size and
// inplace, and is written for the program's ngpus ranks.
Target open_target(Session& s, const std::string& path);

// Lowers a Target this front end opened (an internal error for any other).
std::unique_ptr<StepGraph> elaborate_target(Session& s, const Target& t, const ElabOptions& o);

}  // namespace sg::msccl

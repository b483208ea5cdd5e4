// A session owns everything read in one run: sources, parsed programs, the statement table and
// the diagnostics. It resolves "FILE[:SCHEDULE]" and library names to schedules, and `call`
// targets (same file first, then the library).
#pragma once
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dsl/ast.hpp"
#include "core/dsl/diagnostics.hpp"

namespace sg {

// What a front end other than the language opened (core/msccl/open.hpp's msccl::Opened derives
// from it): the commands need its name, where it starts and the parameters it takes; the front
// end that opened it reads the rest (a checked downcast in that front end's elaborate).
struct OpenedProgram {
  virtual ~OpenedProgram() = default;
  std::string name;
  Loc loc;
  std::vector<std::string> params;
};

// An opened target. The schedule language's front end fills program and schedule; another front
// end fills `other` (owned by the session). Commands use only opened(), name(), loc(), declares()
// and fixed_ranks (and pass the Target on to build(), which hands it to the front end that
// opened it).
struct Target {
  Target() = default;
  Target(const Program* p, const Schedule* s) : program(p), schedule(s) {}
  const Program* program = nullptr;
  const Schedule* schedule = nullptr;
  uint8_t front_end = 0;                 // the front end that opened it (core/pipeline.cpp's table)
  const OpenedProgram* other = nullptr;  // what another front end opened
  // The one rank count the target is written for (an MSCCL XML's ngpus), 0 when any N goes:
  // the commands take it when -n is left out.
  uint32_t fixed_ranks = 0;
  bool opened() const { return schedule != nullptr || other != nullptr; }
  // The schedule's name, and where it is declared (diagnostics about the whole instance point there).
  const std::string& name() const {
    static const std::string none;
    return schedule ? schedule->name : other ? other->name : none;
  }
  Loc loc() const { return schedule ? schedule->loc : other ? other->loc : Loc{}; }
  // Whether it takes a parameter of that name (--set NAME=…).
  bool declares(const std::string& param) const {
    if (!schedule) return other && std::find(other->params.begin(), other->params.end(), param) != other->params.end();
    for (const auto& p : schedule->params)
      if (p.name == param) return true;
    return false;
  }
};

// The library name closest to `name` (a likely misspelling), or "".
std::string nearest_library_name(const std::string& name);

class Session {
 public:
  Session();
  SourceManager sources;
  Diagnostics diags;
  std::vector<Loc> stmt_locs;  // statement id -> location
  uint32_t cmdline_file = 0;   // a source file holding the command-line text, for --set errors

  // Parses a file from disk (cached). Returns null after reporting an error.
  const Program* load_file(const std::string& path);
  // Parses a library schedule by name (cached). Returns null if there is no such entry.
  const Program* load_library(const std::string& name);
  // Parses text given directly (tests, property tests).
  const Program* load_text(const std::string& name, const std::string& text);
  // "FILE[:SCHEDULE]" or a library name. Reports errors; returns an empty Target on failure.
  Target open_schedule(const std::string& spec);
  // A `call` target seen from `from`.
  Target find_callee(const Program& from, const std::string& name);
  // Keeps a front end's program alive as long as the session (Target::other points into it).
  const OpenedProgram* keep(std::shared_ptr<const OpenedProgram> program) {
    kept_.push_back(std::move(program));
    return kept_.back().get();
  }

 private:
  const Program* parse_and_keep(const std::string& key, uint32_t file);
  Target pick(const Program* prog, const std::string& wanted, const std::string& stem);
  std::map<std::string, std::unique_ptr<Program>> programs_;  // by path or "lib:NAME"
  std::vector<std::shared_ptr<const OpenedProgram>> kept_;
};

}  // namespace sg

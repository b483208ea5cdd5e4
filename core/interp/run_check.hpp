// `stepgraph check`: elaborate, run the passes, interpret, check the postconditions, and turn
// every finding into a diagnostic that points at the source line of the step concerned.
#pragma once
#include <memory>

#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/interp/interpret.hpp"
#include "core/interp/postcondition.hpp"

namespace sg {

struct CheckOutcome {
  bool built = false;  // false: bad input (diagnostics in the session)
  bool ok = false;     // the run completed and every postcondition holds
  std::unique_ptr<StepGraph> graph;
  InterpResult interp;
  PostconditionReport post;
  Diagnostics findings;  // defects, as diagnostics
};

CheckOutcome run_check(Session& s, const Target& t, const ElabOptions& opts);

// Counts the interpreter's state against opts.max_memory in elaboration's estimate, so that an N
// too big to interpret is refused before its graph is built.
void count_interpreter(ElabOptions& opts);

// Reports an error and returns false when interpreting g would exceed opts.max_memory.
bool interpreter_fits(const StepGraph& g, const Target& t, const ElabOptions& opts, Diagnostics& diags);

// The verdict of a check, the first kind of defect found in the design's order: "stuck",
// "unmatched", "undefined-data", "wrong-result", or "ok"; a receive that took a message of
// another size is "unmatched" before all (as in `verify`: docs/verify.md). `ok`: CheckOutcome::ok.
const char* check_verdict(const InterpResult& r, bool ok);

// Runs g again following one term of each of the first wrong chunks (trail_notes.hpp) and puts
// the trails in r.trails, so render_findings can say where those terms went. Nothing to do when
// the postconditions hold.
void follow_wrong_terms(const StepGraph& g, const PostconditionReport& p, InterpResult& r);

// Appends one diagnostic per interpreter issue and postcondition failure.
void render_findings(const StepGraph& g, const InterpResult& r, const PostconditionReport& p, Diagnostics& out);

}  // namespace sg

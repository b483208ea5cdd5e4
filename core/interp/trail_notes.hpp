// Where a wrong result's terms went, for check's report: a chunk's "missing d(4, 3)" says what
// is wrong, not which step is. The interpreter follows one term of each of the first few wrong
// chunks through a second run (InterpOptions::follow) and these notes say:
//  - for a missing term, the first step that put it where it does not belong (a chunk whose
//    expected value lacks it: a send into the wrong chunk); else where it was lost: the step that
//    brought it to a chunk and the step that overwrote it there before anything read it (with the
//    send that carried it: a misrouted send); else the last step that moved it and the chunks
//    where it ended (a dropped send: where the term stopped); else that no step ever moved it;
//  - for an extra term, the step that first put it where it does not belong: into a chunk whose
//    expected value lacks it (a send to the wrong chunk or the wrong rank), or, for a term counted
//    twice, the first step that added it to a chunk that held it already.
// So a misrouted or dropped send, or a send into the wrong chunk, is named by its own line, not
// only by the line of the step that last wrote the wrong chunk.
#pragma once
#include <cstddef>
#include <functional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/dsl/diagnostics.hpp"
#include "core/interp/interpret.hpp"
#include "core/interp/postcondition.hpp"

namespace sg {

// The term to follow for each of the first `max` postcondition issues that have a missing or an
// extra term: (index into p.issues, one atom).
std::vector<std::pair<size_t, Run>> trail_atoms(const PostconditionReport& p, size_t max = 4);

// Every chunk a postcondition covers, with its expected value: whether a chunk is one a term
// does not belong in.
class ExpectedIndex {
 public:
  ExpectedIndex(const StepGraph& g, const MachineState& initial);
  // A postcondition covers the chunk and expects it not to hold `atom`.
  bool covered_without(uint32_t rank, uint32_t buf, uint32_t chunk, const Run& atom) const;

 private:
  std::unordered_map<uint64_t, Value> expected_;
};

// Adds to `d` (the diagnostic of issue `is`) the notes trail `t` gives (r: the run it came from).
void add_trail_notes(const StepGraph& g, const InterpResult& r, const Issue& is, const Trail& t, const ExpectedIndex& where, Diagnostic& d);

// For the verifier: the notes of issue `issue` of `p` (found in a run of g under `opts`, which
// must replay the same execution: its mode and wildcard choices), from that run again following
// the issue's term. Empty when the issue has no term to follow.
std::vector<DiagNote> trail_notes(const StepGraph& g, InterpOptions opts, const PostconditionReport& p, size_t issue);

}  // namespace sg

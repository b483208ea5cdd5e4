// Collective postconditions (the `expect` statements): the expected multiset of every covered
// chunk, compared with the final state. Reports missing terms, terms counted twice, foreign
// terms, stale and undefined chunks, each with the rank, the chunk and the step that last
// wrote it.
#pragma once
#include <vector>

#include "core/interp/interpret.hpp"

namespace sg {

struct PostconditionReport {
  uint64_t chunks_checked = 0;
  uint64_t chunks_wrong = 0;
  std::vector<Issue> issues;  // at most `max_issues`
};

PostconditionReport check_postconditions(const StepGraph& g, const MachineState& initial, const MachineState& final,
                                         size_t max_issues = 16);

}  // namespace sg

// Collective postconditions (the `expect` statements): the expected multiset of every covered
// chunk, compared with the final state. Reports missing terms, terms counted twice, foreign
// terms, stale and undefined chunks, each with the rank, the chunk and the step that last
// wrote it.
#pragma once
#include <functional>
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

// Calls visit for every chunk a postcondition covers, with the value it must hold at the end
// (the verifier's symbolic engine checks the same expectations). Returns the number of chunks.
using ExpectedVisitor = std::function<void(const Expectation& x, uint32_t rank, uint32_t buf, uint32_t chunk, const Value& expected)>;
uint64_t for_each_expected(const StepGraph& g, const MachineState& initial, const ExpectedVisitor& visit);

}  // namespace sg

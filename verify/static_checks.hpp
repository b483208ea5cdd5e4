// The checks that need no execution: lifecycle (a nonblocking operation no wait completes, a
// wait on an unknown or completed handle) and races of in-flight nonblocking operations.
//
// Why races need no execution here: elaboration gives every access a dependency on the earlier
// conflicting accesses of its rank (hazards), so two conflicting accesses are always ordered by
// a path, except where the path goes through a nonblocking operation, which only orders later
// steps after its *start*. Its chunks stay in use until its wait, so a conflicting access that
// the rank's program puts between the operation and its wait can overlap it in every semantics.
#pragma once
#include <optional>

#include "verify/verdict.hpp"

namespace sg::verify {

std::optional<Counterexample> find_lifecycle(const StepGraph& g);
std::optional<Counterexample> find_race(const StepGraph& g);
// Graphs whose dependencies are the program's own (StepGraph::unordered_hazards: MSCCL's thread
// blocks): two accesses to one chunk of one rank, one a write, with no dependency path between
// them, can run at once. Decided on the dependency graph's reachability, rank by rank.
std::optional<Counterexample> find_unordered_race(const StepGraph& g);

CxStep cx_step(const StepGraph& g, StepId s, std::string role = "", std::string note = "");

// Counterexamples both engines build the same way.
Counterexample unmatched_cx(const StepGraph& g, StepId pending);
// A receive that takes a message of another size (the `unmatched` verdict: docs/verify.md): the
// receive first (the error's line), then the send.
Counterexample size_mismatch_cx(const StepGraph& g, StepId recv, StepId send);
Counterexample undefined_cx(const StepGraph& g, StepId reader, uint32_t buf, uint32_t chunk);
void set_chunk(Counterexample& cx, const StepGraph& g, uint32_t rank, uint32_t buf, uint32_t chunk);
// A wrong chunk no step wrote: the counterexample points at the `expect` statement instead.
CxStep unwritten_step(const StepGraph& g, uint32_t expect_stmt, uint32_t rank);

}  // namespace sg::verify

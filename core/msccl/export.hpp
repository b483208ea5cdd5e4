// A step graph as an MSCCL algorithm file (`compile --format msccl`), the inverse of lower.hpp:
// what MSCCL, RCCL and this front end load. docs/msccl.md, "Export", states the mapping:
// - the postcondition's buffer becomes `i` (`o` for an all-gather), in place; every other
//   buffer is a window of the scratch buffer `s`; a chunk is the greatest common divisor of the
//   buffers' chunk sizes, so nchunksperloop = the collective's bytes / that;
// - each rank's steps go onto thread blocks: sends to one peer, receives from one peer, and the
//   local copies and reductions, each split into chains of steps that already follow one another
//   (so that no thread block makes a step wait that the schedule lets run); the k-th chain of
//   transfers from a to b is channel k, on both ends, so a connection carries its messages in the
//   order the receives take them;
// - every dependency on another thread block of the rank is a depid/deps, the extra ones on nop
//   steps before the step (MSCCL keeps one per step), and the step waited on says hasdep.
// Refused, with the reason at the statement: collectives (export with --expand), compute steps,
// wildcard receives, and postconditions other than one all-reduce, all-gather, reduce-scatter or
// all-to-all over every rank.
#pragma once
#include <ostream>
#include <string>

#include "core/dsl/diagnostics.hpp"
#include "core/graph/step_graph.hpp"

namespace sg::msccl {

struct ExportOptions {
  std::string proto = "Simple";  // Simple, LL or LL128: the connections' slots and the wire cost
  std::string comment;           // a first line saying where the file comes from
};

// Writes g (every rank's program) as MSCCL XML; false after errors in diags (nothing written).
bool write_msccl(std::ostream& out, const StepGraph& g, const ExportOptions& o, Diagnostics& diags);

}  // namespace sg::msccl

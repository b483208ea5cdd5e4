// An MSCCL program as a step graph (docs/msccl.md states each rule and where it comes from):
// - one rank per <gpu>; buffers i, o and s of the file's chunk counts (in place, i and o are one
//   buffer, aliased as RCCL aliases them: allreduce and alltoall chunk for chunk, allgather's i
//   as rank r's window of o, reducescatter's o as rank r's window of i); a chunk is
//   size / nchunksperloop bytes (`--set size=…`, the collective's bytes as RCCL counts them);
// - every <step> becomes steps of its gpu's program: sends and receives on the connection
//   (this gpu, the tb's peer, its channel), matched in order, the local copies and reductions
//   of the fused types; a tb's steps depend on each other in order, and `depid`/`deps` on the
//   other tb's step. Nothing else orders two thread blocks: they run concurrently, and the graph
//   says so (StepGraph::unordered_hazards), so the verifier reports two unordered accesses to a
//   chunk, one a write, as a race;
// - the postcondition of `coll`, on the output (the aliased buffer in place).
// Parameters: size (bytes; default the file's maxBytes, else 64 MiB) and inplace (0 or 1; by
// default the mode the file declares, in place when it declares both).
#pragma once
#include <memory>

#include "core/graph/elaborate.hpp"
#include "core/msccl/program.hpp"

namespace sg::msccl {

// The parameters a program takes (`--set`): size and inplace.
bool declares(const std::string& param);

// Builds the instance; null after located errors in s.diags. opts.nranks must be the file's
// ngpus; opts.only_rank builds that gpu's program only.
std::unique_ptr<StepGraph> lower(Session& s, const Program& p, const ElabOptions& opts);

}  // namespace sg::msccl

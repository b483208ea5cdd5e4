// Elaboration: a schedule, N and parameter values -> the step graph. Unrolls loops, evaluates
// indices, emits steps in textual order, computes dependencies (dataflow hazards for
// choreographic statements, MPI program order inside `on` blocks) and pairs choreographic
// sends with their receives. Errors point at the statement that caused them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/step_graph.hpp"

namespace sg {

struct SizeEstimate {
  uint64_t steps = 0;
  uint64_t transfers = 0;    // choreographic sends (each a send and a receive step)
  uint64_t p2p = 0;          // local-view sends and receives
  uint64_t collectives = 0;  // collective steps
  uint64_t computes = 0;
  uint64_t chunks = 0;         // chunks of the buffers declared (each rank holds them all)
  uint64_t hazard_bytes = 0;   // transient per-chunk state while building
  uint64_t bytes = 0;          // estimated peak memory of building
  uint64_t work = 0;           // statements executed (loops multiplied where the estimate could)
  bool ok = true;              // false: the estimate itself hit an error (elaboration will report it)
  bool too_much_work = false;  // counting stopped at ElabOptions::max_work
  bool too_big = false;        // elaborate() refused it: past the memory limit or 2^32 steps
  Loc work_loc;                // the loop running when it stopped
};

struct ElabOptions {
  uint32_t nranks = 0;
  std::vector<std::pair<std::string, std::string>> sets;  // --set k=v, unparsed
  int64_t only_rank = -1;                                 // elaborate one rank's program only
  // Elaborate these ranks' programs only (sorted, distinct; empty: every rank): a symmetry's
  // representatives (sim/symmetry.hpp). For MPI-style programs: a choreographic transfer is refused.
  std::vector<uint32_t> only_ranks;
  uint64_t max_memory = 0;  // refuse instances whose estimate exceeds this (0: no limit)
  // What the graph's consumer will need on top of the graph itself (the interpreter's state for
  // check and verify), from the estimate: counted against max_memory before anything is built.
  std::function<uint64_t(const SizeEstimate&, uint32_t nranks)> consumer_bytes;
  const char* consumer = "";  // what it is, for the refusal ("the interpreter")
  // Refuse instances whose elaboration would execute more statements and loop iterations than
  // this beyond the steps it builds (a loop of 10^18 empty iterations builds nothing but would
  // never finish). Counting runs at about 150 M per second: a refusal comes within 2 s.
  uint64_t max_work = 300'000'000;
  // A wait on an unknown or already-waited handle: an input error (false), or recorded in
  // StepGraph::bad_waits for the verifier's lifecycle verdict (true).
  bool lifecycle_as_findings = false;
};

// Counts what elaborate() would build, without building it. Loops whose bodies emit the same
// number of steps in every iteration are multiplied, not iterated.
SizeEstimate estimate_size(Session& session, const Target& target, const ElabOptions& opts);

// Builds the graph; returns null after reporting errors to session.diags.
std::unique_ptr<StepGraph> elaborate(Session& session, const Target& target, const ElabOptions& opts, SizeEstimate* estimate = nullptr);

// What a failed `require` says (its message, without the condition and N that follow it in the
// diagnostic): "check NAME N = 6: unsupported (REASON)".
std::string unsupported_reason(const Diagnostic& d);

}  // namespace sg

// The reference interpreter: runs the step graph on symbolic values in one valid order (eager
// sends, steps taken in textual order whenever several are ready) and records what went wrong
// on the way: undefined reads, bad operands, a stuck state, messages nobody received.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/graph/elaborate.hpp"
#include "core/graph/step_graph.hpp"
#include "core/interp/state.hpp"
#include "core/interp/value.hpp"

namespace sg {

enum class IssueKind : uint8_t {
  UndefinedRead,  // a step read a chunk never written
  BadOperand,     // an attention tile got operands that are not a single q(i) / kv(m)
  Stuck,          // nothing can run and some rank has not finished
  Unmatched,      // a message was sent that no receive took
  SizeMismatch,   // a receive took a message of another size (larger: MPI's truncation error)
  Lifecycle,      // a nonblocking operation never waited for
  Missing,        // postcondition: a term is missing
  Duplicate,      // postcondition: a term is counted more than once
  Foreign,        // postcondition: a term that does not belong (another chunk's, item's or buffer's data)
  Stale,          // postcondition: the chunk still holds its initial value
  Undefined,      // postcondition: the chunk was never written
};
const char* issue_name(IssueKind k);

struct Issue {
  IssueKind kind = IssueKind::Stuck;
  uint32_t rank = 0;
  uint32_t buf = 0, chunk = 0;
  StepId step = kNoStep;        // the step concerned (for postconditions: the last writer)
  StepId send = kNoStep;        // SizeMismatch: the send whose message the receive (`step`) took
  uint32_t stmt = 0xffffffffu;  // a statement to point at when there is no step (the expect)
  std::string text;
  std::string expected, actual;  // postcondition findings: the two values, as terms
  std::vector<Run> extra;        // postcondition findings: the terms beyond the expected value
  std::vector<Run> missing;      // postcondition findings: the expected terms the chunk lacks

  // A finding of the run (not of the postcondition): kind, the rank and step it concerns, and
  // what it says; the chunk where one is concerned.
  static Issue of_run(IssueKind kind, uint32_t rank, StepId step, std::string text, uint32_t buf = 0, uint32_t chunk = 0) {
    Issue is;
    is.kind = kind;
    is.rank = rank;
    is.buf = buf;
    is.chunk = chunk;
    is.step = step;
    is.text = std::move(text);
    return is;
  }
};

// Where one atom went during a run (InterpOptions::follow): every step that put it into a chunk,
// and every chunk where it was overwritten before anything read it.
struct TrailEvent {
  enum Kind : uint8_t { Arrive, Lost };
  Kind kind = Arrive;
  StepId step = kNoStep;  // Arrive: the step that put it there; Lost: the step that overwrote it
  uint32_t rank = 0, buf = 0, chunk = 0;
  StepId brought = kNoStep;  // Lost: the step that had put it there
  bool again = false;        // Arrive: the chunk held it already (now counted twice)
};
struct Trail {
  Run atom;                                                    // one atom (count 1, lo + 1 == hi)
  std::vector<TrailEvent> events;                              // in the order the run made them
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> ends;  // (rank, buf, chunk) holding it at the end
};

// When a send completes: eager (at once, the message is buffered) or rendezvous (when its
// receive has been posted: MPI's zero-buffer mode), or bounded: a connection (source,
// destination, tag, communicator) holds StepGraph::connection_slots messages not yet received,
// and a send completes once its message has a slot (NCCL's and MSCCL's FIFOs: docs/msccl.md).
// Choreographic receives are posted from the start, so choreographic sends complete at once
// under all three.
enum class SendMode : uint8_t { Eager, Rendezvous, Bounded };
const char* mode_name(SendMode m);  // "eager" / "rendezvous" / "bounded" (stuck.cpp)

struct InterpOptions {
  SendMode mode = SendMode::Eager;
  // Deferred wildcard matching (for exploring every matching): a posted wildcard receive takes
  // no message while anything else can run; then `choose` picks one (receive, send) pair among
  // every pending wildcard receive and each message it could take (the earliest eligible one
  // of each source). Which receive goes first matters too: resolving one can let a rank send
  // the message another would take. Without `choose`, wildcards match greedily like others.
  std::function<size_t(const std::vector<std::pair<StepId, StepId>>& options)> choose;
  bool report_stuck = true;
  // State caching for the search over matchings: called where a wildcard choice among several
  // options is about to be made, with a 128-bit fingerprint of the state (every step's status,
  // every chunk's value, the queued messages and posted receives). Returning false stops the
  // run there (InterpResult::pruned): every continuation of that state was explored before.
  std::function<bool(uint64_t, uint64_t)> fresh_state;
  // The run stops here, unfinished (InterpResult::interrupted), so a caller with a time limit
  // is never held past it by one long run.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Atoms to follow through the run (InterpResult::trails): where a wrong result's missing or
  // extra terms went (check's report). Empty: nothing is recorded, at no cost.
  std::vector<Run> follow;
};

enum : uint8_t { kStepIssued = 1, kStepCompleted = 2 };

struct InterpResult {
  bool completed = false;    // every step ran
  bool interrupted = false;  // stopped at the deadline: nothing but `executed` is meaningful
  bool pruned = false;       // stopped at a state fresh_state had seen: only `issues` so far count
  uint64_t executed = 0;
  std::vector<Issue> issues;
  MachineState initial;
  MachineState final;
  std::vector<uint8_t> status;           // per step: kStepIssued | kStepCompleted
  std::vector<StepId> partner;           // per point-to-point step: what it matched, or kNoStep
  std::vector<StepId> pending_messages;  // sends whose message no receive took
  // Per attention atom, the last tile step that produced it (tile_key): a wrong result made of
  // a tile's term (an upper tile under a causal mask, a stale kv block) points at that tile.
  std::unordered_map<uint64_t, StepId> tile_steps;
  std::vector<Trail> trails;  // one per InterpOptions::follow atom
};

// The key of one attention atom (a run's family, at coordinate `at`) in InterpResult::tile_steps.
uint64_t tile_key(const Run& family, uint32_t at);
// The tile step that produced the first attention term among a postcondition finding's extra
// terms, or kNoStep.
StepId tile_culprit(const InterpResult& r, const Issue& is);

InterpResult interpret(const StepGraph& g, const InterpOptions& opts = {});

// Why a receive may not take a send's message of another size, in one line: a larger message is
// MPI's truncation error (MPI_ERR_TRUNCATE); a smaller one leaves chunks of the receive's range
// unwritten, which a receive (it writes its whole range) cannot mean. The interpreter's issue and
// the verifier's counterexample share it.
std::string size_mismatch_text(const StepGraph& g, StepId recv, StepId send);

// About how much memory interpret() needs for g: two copies of every chunk's value on every
// rank, and per-step bookkeeping. Callers refuse graphs that would not fit.
uint64_t interpreter_bytes(const StepGraph& g);
// The same from elaboration's estimate, before the graph is built (ElabOptions::consumer_bytes).
uint64_t interpreter_bytes(const SizeEstimate& e, uint32_t nranks);

}  // namespace sg

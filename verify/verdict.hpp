// Verdicts, their order, and counterexamples: what both engines return, engine-independent.
//
// The verdict of one semantics is the first of unmatched, deadlock, race, undefined-data,
// lifecycle, wrong-result that any execution the semantics allows shows; otherwise ok
// (the design's CLI contract). Unmatched includes a receive that some execution pairs with a
// message of another size (larger: MPI's truncation error): the pair MPI makes is one the
// program cannot take (docs/verify.md, "Message sizes").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dsl/source.hpp"
#include "core/graph/step_graph.hpp"
#include "core/interp/interpret.hpp"

namespace sg::verify {

enum class Verdict : uint8_t {
  Unmatched,  // a pending operation nothing left can match, or a receive taking a message of another size
  Deadlock,
  Race,
  UndefinedData,
  Lifecycle,
  WrongResult,
  Ok,
  Unknown
};
const char* verdict_name(Verdict v);
// Lower is reported first; Ok and Unknown come last.
inline int priority(Verdict v) { return static_cast<int>(v); }

using sg::mode_name;

// One step as a counterexample shows it.
struct CxStep {
  StepId step = kNoStep;
  uint32_t rank = 0;
  std::string what;  // "send data[3] to r1"
  Loc loc;
  std::string role;  // "stuck", "first access", "writer", …
  std::string note;  // what it waits for, which access, …
};

struct Counterexample {
  Verdict verdict = Verdict::Ok;
  SendMode mode = SendMode::Rendezvous;
  std::string engine;           // "explicit" or "z3"
  std::string summary;          // one line
  std::vector<CxStep> steps;    // deadlock: one stuck step per rank; race: the two accesses; …
  std::vector<uint32_t> cycle;  // deadlock: the wait-for cycle (ranks, first repeated at the end)
  std::string reason;           // race: why nothing orders them; deadlock: how the cycle closes
  int64_t rank = -1;            // wrong-result / undefined-data / race: where
  uint32_t buf = 0, chunk = 0;
  std::string chunk_name;                           // "data[3]" (set with buf and chunk)
  std::string expected, actual;                     // wrong-result: terms
  std::vector<std::pair<StepId, StepId>> matching;  // the wildcard matches (recv, send) of this execution
};

struct EngineResult {
  Verdict verdict = Verdict::Unknown;
  Counterexample cx;  // when verdict is a defect
  std::string note;   // why Unknown, or what was explored ("3 executions")
  double seconds = 0;
  uint64_t executions = 0;  // explicit: executions explored
  bool complete = true;     // every execution considered (false: a bound or the time limit cut it short)
  bool timed_out = false;   // stopped at the time limit
};

// Renders a counterexample as diagnostics-style text (source lines and carets).
std::string render_text(const Counterexample& cx, const SourceManager& sm);
// The same as a JSON object.
std::string render_json(const Counterexample& cx, const SourceManager& sm);

}  // namespace sg::verify

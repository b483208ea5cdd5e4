// `stepgraph verify`: elaborate, run the passes, and decide the verdict of the schedule under
// each send semantics with the explicit engine, the Z3 engine, or both (which must agree).
#pragma once
#include <string>
#include <vector>

#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "verify/explicit_engine.hpp"
#include "verify/verdict.hpp"
#include "verify/z3_engine.hpp"

namespace sg::verify {

enum class Engine : uint8_t { Auto, Explicit, Z3, Both };

struct VerifyOptions {
  std::vector<SendMode> modes = {SendMode::Rendezvous, SendMode::Eager};
  Engine engine = Engine::Auto;
  uint64_t auto_z3_max_steps = 20000;  // auto: z3 too, up to this many steps
  ExplicitOptions explicit_opts;
  Z3Options z3_opts;
};

struct ModeResult {
  SendMode mode = SendMode::Rendezvous;
  Verdict verdict = Verdict::Unknown;  // the agreed verdict (Unknown if undecided or disagreeing)
  bool ran_explicit = false, ran_z3 = false;
  EngineResult explicit_result, z3_result;
  bool disagree = false;
};

struct VerifyReport {
  bool built = false;  // false: bad input (diagnostics in the session)
  std::string schedule;
  uint32_t ranks = 0;
  uint64_t steps = 0;
  std::vector<ModeResult> modes;
  std::string note;  // e.g. why z3 was skipped
  // The first defect's counterexample, in the order the modes were asked for.
  const Counterexample* counterexample() const;
  Verdict worst() const;  // the defect with the lowest priority number, or Ok/Unknown
  bool disagreement() const;
};

// Decides a graph built with ElabOptions::lifecycle_as_findings (so bad waits are findings).
VerifyReport verify_graph(const StepGraph& g, const VerifyOptions& vo);

}  // namespace sg::verify

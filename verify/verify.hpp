// `stepgraph verify`: decide the verdict of a step graph under each send semantics with the
// explicit engine, the Z3 engine, or both (which must agree).
//
// The default (auto) lets the explicit engine decide and uses Z3 where it adds something: to
// decide what the explicit search could not finish (wildcard matchings past its bound), and as
// a cross-check, bounded in size and time, of what it did decide.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/step_graph.hpp"
#include "verify/explicit_engine.hpp"
#include "verify/verdict.hpp"
#include "verify/z3_engine.hpp"

namespace sg::verify {

enum class Engine : uint8_t { Auto, Explicit, Z3, Both };

struct VerifyOptions {
  std::vector<SendMode> modes = {SendMode::Rendezvous, SendMode::Eager};
  Engine engine = Engine::Auto;
  uint64_t crosscheck_max_steps = 5000;  // auto: cross-check with z3 up to this many steps
  double crosscheck_seconds = 2.0;       // auto: the cross-check's time per semantics
  // The whole verification stops here: what is undecided then is Unknown (timed_out).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  ExplicitOptions explicit_opts;
  Z3Options z3_opts;
};

struct ModeResult {
  SendMode mode = SendMode::Rendezvous;
  Verdict verdict = Verdict::Unknown;  // the agreed verdict (Unknown if undecided or disagreeing)
  bool ran_explicit = false, ran_z3 = false;
  EngineResult explicit_result, z3_result;
  bool disagree = false;
  bool shared = false;     // same executions as the semantics before it: its results, not a second run
  bool timed_out = false;  // undecided because the time limit came first
  std::string decided_by;  // "explicit, z3 agrees", "z3 (explicit: …)", …
};

struct VerifyReport {
  bool built = false;  // false: bad input (diagnostics in the session)
  std::string schedule;
  uint32_t ranks = 0;
  uint64_t steps = 0;
  std::vector<ModeResult> modes;
  std::string note;  // e.g. why z3 did not run
  // The first defect's counterexample, in the order the modes were asked for.
  const Counterexample* counterexample() const;
  Verdict worst() const;  // the defect with the lowest priority number, or Ok/Unknown
  bool disagreement() const;
  bool timed_out() const;
  // Seconds each engine ran, each run counted once (a shared semantics adds nothing).
  double explicit_seconds() const;
  double z3_seconds() const;
};

// Decides a graph built with ElabOptions::lifecycle_as_findings (so bad waits are findings).
// `on_mode`, when set, is called as each semantics is decided (for output that must survive a
// kill or the time limit).
VerifyReport verify_graph(const StepGraph& g, const VerifyOptions& vo, const std::function<void(const VerifyReport&)>& on_mode = nullptr);

}  // namespace sg::verify

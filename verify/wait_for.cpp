// Deadlock counterexamples, for both engines, from the stuck-state analysis in core.
#include "verify/wait_for.hpp"

#include "core/interp/stuck.hpp"
#include "verify/static_checks.hpp"

namespace sg::verify {

Counterexample build_deadlock(const StepGraph& g, const ExecState& r, SendMode mode) {
  StuckState st = analyze_stuck(g, r.status, r.partner, mode);
  Counterexample cx;
  cx.verdict = Verdict::Deadlock;
  for (const StuckRank& sr : st.ranks) {
    if (cx.steps.size() < 16) cx.steps.push_back(cx_step(g, sr.step, "stuck", sr.why));
    // A step that waits for an event nothing produces (an MSCCL flag no step posts): the line it
    // waits on is shown too.
    if (sr.cause.valid() && cx.steps.size() < 16) {
      CxStep c;
      c.rank = sr.rank;
      c.loc = sr.cause;
      c.what = "rank " + std::to_string(sr.rank) + ": the step it waits for";
      c.role = "never posts";
      cx.steps.push_back(c);
    }
  }
  cx.cycle = st.cycle;
  cx.summary = std::to_string(st.ranks.size()) + " rank" + (st.ranks.size() == 1 ? "" : "s") + " can never go on";
  if (!st.cycle.empty()) {
    cx.reason = "wait-for cycle:";
    for (size_t i = 0; i < st.cycle.size(); ++i) cx.reason += (i ? " -> rank " : " rank ") + std::to_string(st.cycle[i]);
  } else if (st.awaited_finished.empty()) {
    cx.reason = "no cycle: the stuck ranks wait for operations that nothing will issue";
  } else {
    // No cycle: the chain ends at ranks that finished their programs.
    const auto& done = st.awaited_finished;
    cx.reason = std::string("no cycle: the stuck ranks wait for rank") + (done.size() == 1 ? " " : "s ");
    for (size_t i = 0; i < done.size(); ++i) cx.reason += (i ? ", " : "") + std::to_string(done[i]);
    cx.reason += done.size() == 1 ? ", which has finished its program" : ", which have finished their programs";
  }
  return cx;
}

}  // namespace sg::verify

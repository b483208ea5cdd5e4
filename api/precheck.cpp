// sim's and exec's check before they run (api/precheck.hpp): build the schedule at an N that fits
// the budget, verify it with the explicit engine, and say what was found.
//
// Semantics: an MSCCL file (a program with FIFO connections) under its bounded connections, as
// `verify` does; anything else under eager sends. A schedule that deadlocks only when sends wait
// for their receives (rendezvous) is a defect `verify` reports, but sim simulates that protocol
// itself (and shows the deadlock) and exec's watchdog reports such a hang with each rank's step:
// refusing it here would refuse every program that relies on MPI's buffering of small messages.
#include "api/precheck.hpp"

#include <algorithm>
#include <chrono>

#include "core/base/sizes.hpp"
#include "core/interp/run_check.hpp"
#include "core/interp/send_policy.hpp"
#include "core/pipeline.hpp"
#include "verify/verify.hpp"

namespace sg::api {

std::string Precheck::line() const {
  switch (state) {
    case State::Ok: return "checked: ok (verify at N = " + std::to_string(n) + ", " + semantics + " sends)";
    case State::Defect: return "defect: " + summary;
    case State::NotChecked: return "not checked: " + why_not;
  }
  return "";
}

nlohmann::json Precheck::json() const {
  nlohmann::json j;
  j["state"] = state == State::Ok ? "ok" : state == State::Defect ? "defect" : "not checked";
  if (state != State::NotChecked) {
    j["n"] = n;
    j["semantics"] = semantics;
  }
  if (state == State::Defect) {
    j["verdict"] = verdict;
    j["summary"] = summary;
  }
  if (state == State::NotChecked) j["why_not"] = why_not;
  return j;
}

Precheck Precheck::from_json(const nlohmann::json& j) {
  Precheck p;
  std::string st = j.value("state", "not checked");
  p.state = st == "ok" ? State::Ok : st == "defect" ? State::Defect : State::NotChecked;
  p.n = j.value("n", 0u);
  p.semantics = j.value("semantics", "");
  p.verdict = j.value("verdict", "");
  p.summary = j.value("summary", "");
  p.why_not = j.value("why_not", "");
  return p;
}

Precheck precheck(const std::string& target, uint32_t n, const std::vector<std::pair<std::string, std::string>>& sets, uint64_t max_memory,
                  bool rendezvous) {
  Precheck pc;
  Session s;
  Target t = open_target(s, target);
  if (!t.opened()) {
    pc.why_not = "the target does not open";
    return pc;
  }
  // The N to verify at: the file's own, this one, or the largest small one the schedule accepts.
  std::vector<uint32_t> ns;
  if (t.fixed_ranks > 0) ns = {t.fixed_ranks};
  else if (n <= 64) ns = {n};
  else
    for (uint32_t k : {64u, 32u, 16u, 8u, 4u, 2u}) ns.push_back(k);
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t k : ns) {
    s.diags.clear();
    BuildOptions bo;
    bo.elab.nranks = k;
    bo.elab.sets = sets;
    bo.elab.max_memory = max_memory;
    bo.elab.lifecycle_as_findings = true;
    count_interpreter(bo.elab);
    Built b = build(s, t, bo);
    if (!b.ok()) continue;  // this N is refused (or the input is bad: the run itself says so)
    StepGraph& g = *b.graph;
    if (g.size() > kPrecheckMaxSteps) {
      pc.why_not = "N = " + std::to_string(k) + " has " + with_commas(g.size()) + " steps, more than the check's budget of " +
                   with_commas(kPrecheckMaxSteps) + " (stepgraph verify checks it without a budget)";
      return pc;
    }
    verify::VerifyOptions vo;
    vo.engine = verify::Engine::Explicit;
    vo.modes = {send_policy(g).fifo() ? SendMode::Bounded : rendezvous ? SendMode::Rendezvous : SendMode::Eager};
    vo.deadline = t0 + std::chrono::milliseconds(static_cast<int64_t>(kPrecheckSeconds * 1000));
    verify::VerifyReport rep = verify::verify_graph(g, vo);
    verify::Verdict w = rep.worst();
    pc.n = k;
    pc.semantics = mode_name(vo.modes[0]);
    if (w == verify::Verdict::Ok) {
      pc.state = Precheck::State::Ok;
    } else if (w == verify::Verdict::Unknown) {
      pc.why_not = "verify did not decide within the check's " + std::to_string(static_cast<int>(kPrecheckSeconds)) +
                   " s at N = " + std::to_string(k) + " (stepgraph verify decides it without a budget)";
    } else {
      pc.state = Precheck::State::Defect;
      pc.verdict = verify::verdict_name(w);
      const verify::Counterexample* cx = rep.counterexample();
      std::string at;
      if (cx && !cx->steps.empty() && cx->steps.front().loc.valid()) {
        Loc l = cx->steps.front().loc;
        at = " at " + s.sources.file(l.file).name() + ":" + std::to_string(l.line);
      }
      pc.summary = pc.verdict + " (" + pc.semantics + " sends, verify at N = " + std::to_string(k) + ")" + at +
                   (cx && !cx->summary.empty() ? ": " + cx->summary : std::string());
      if (cx) pc.detail = verify::render_text(*cx, s.sources);
    }
    return pc;
  }
  pc.why_not = t.fixed_ranks > 0 || n <= 64 ? "the schedule does not build at N = " + std::to_string(ns.front())
                                            : "the schedule accepts none of N = 64, 32, 16, 8, 4, 2";
  return pc;
}

}  // namespace sg::api

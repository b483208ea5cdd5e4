// `verify` as a library call: build one N and hand it to the engines (verify/verify.hpp), with
// the program's own send semantics where it has them (an MSCCL file's connection slots).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "api/api.hpp"
#include "core/interp/run_check.hpp"
#include "core/interp/send_policy.hpp"
#include "core/io/writers.hpp"

namespace sg::api {

namespace {

using Clock = std::chrono::steady_clock;

double rounded(double s) { return std::round(s * 1000) / 1000; }

nlohmann::json engine_json(const verify::EngineResult& e, bool timing, bool shared) {
  nlohmann::json j = {{"verdict", verify::verdict_name(e.verdict)}};
  if (timing) j["seconds"] = shared ? 0.0 : rounded(e.seconds);
  if (!e.note.empty()) j["note"] = e.note;
  if (e.executions) j["executions"] = e.executions;
  return j;
}

}  // namespace

std::optional<Semantics> semantics_named(const std::string& name) {
  if (name == "auto") return Semantics::Auto;
  if (name == "rendezvous") return Semantics::Rendezvous;
  if (name == "eager") return Semantics::Eager;
  if (name == "bounded") return Semantics::Bounded;
  return std::nullopt;
}

std::optional<verify::Engine> engine_named(const std::string& name) {
  if (name == "auto") return verify::Engine::Auto;
  if (name == "explicit") return verify::Engine::Explicit;
  if (name == "z3") return verify::Engine::Z3;
  if (name == "both") return verify::Engine::Both;
  return std::nullopt;
}

verify::VerifyOptions verify_options(const VerifyRequest& r) {
  verify::VerifyOptions vo;
  if (r.semantics == Semantics::Rendezvous) vo.modes = {SendMode::Rendezvous};
  else if (r.semantics == Semantics::Eager) vo.modes = {SendMode::Eager};
  else if (r.semantics == Semantics::Bounded) vo.modes = {SendMode::Bounded};
  vo.engine = r.engine;
  vo.explicit_opts.max_executions = r.max_executions;
  if (r.timeout_s > 0) vo.deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(r.timeout_s * 1000));
  return vo;
}

VerifyPoint verify_point(Opened& o, const BuildOptions& bo_in, const VerifyRequest& r, verify::VerifyOptions vo,
                         const std::function<void()>& on_built, const std::function<void(const verify::VerifyReport&)>& on_mode) {
  auto t_n = Clock::now();
  VerifyPoint p;
  p.schedule = o.t.name();
  p.n = bo_in.elab.nranks;
  o.s.diags.clear();
  BuildOptions bo = bo_in;
  bo.elab.lifecycle_as_findings = true;
  if (vo.engine != verify::Engine::Z3) count_interpreter(bo.elab);  // the explicit engine runs it
  std::unique_ptr<StepGraph> g = build(o.s, o.t, bo).graph;
  bool built = g != nullptr;
  if (built) {
    // The program's own send semantics when it has them (MSCCL: its connections' slots).
    SendPolicy sp = send_policy(*g, r.slots);
    if (r.semantics == Semantics::Auto) vo.modes = sp.default_modes();
    if (sp.fifo() || std::find(vo.modes.begin(), vo.modes.end(), SendMode::Bounded) != vo.modes.end())
      g->connection_slots = sp.bounded_slots();
  }
  // The explicit engine runs the interpreter: refuse what it could not hold.
  if (built && vo.engine != verify::Engine::Z3) built = interpreter_fits(*g, o.t, bo.elab, o.s.diags);
  if (!built) {
    p.status = 2;
    p.diagnostics = o.s.diags.render(o.s.sources);
    p.located = diagnostics_json(o.s.diags, o.s.sources);
    // A `require` that refuses this N: the schedule does not apply, the input is not wrong.
    const Diagnostic* why = o.s.diags.unsupported_since(0);
    p.json = {{"schedule", p.schedule}, {"ranks", p.n}, {"verdicts", nlohmann::json::array()}};
    if (why) p.json["unsupported"] = p.unsupported = unsupported_reason(*why);
    else p.json["error"] = p.diagnostics;
    return p;
  }
  p.built = true;
  if (on_built) on_built();
  p.report = verify::verify_graph(*g, vo, [&](const verify::VerifyReport& rep) {
    if (on_mode) on_mode(rep);
  });
  const verify::VerifyReport& rep = p.report;
  p.total_s = std::chrono::duration<double>(Clock::now() - t_n).count();
  verify::Verdict worst = rep.worst();
  if (rep.disagreement() || worst == verify::Verdict::Unknown) p.status = 3;
  else if (worst != verify::Verdict::Ok) p.status = 1;
  const verify::Counterexample* cx = rep.counterexample();
  p.params_text = parameter_values(*g);
  if (cx) p.counterexample_text = verify::render_text(*cx, o.s.sources);
  nlohmann::json v = nlohmann::json::array();
  for (const auto& m : rep.modes) {
    nlohmann::json e = {
        {"semantics", verify::mode_name(m.mode)}, {"verdict", verify::verdict_name(m.verdict)}, {"decided_by", m.decided_by}};
    nlohmann::json engines = nlohmann::json::object();
    if (m.ran_explicit) engines["explicit"] = engine_json(m.explicit_result, r.timing, m.shared);
    if (m.ran_z3) engines["z3"] = engine_json(m.z3_result, r.timing, m.shared);
    e["engines"] = engines;
    if (m.disagree) e["disagree"] = true;
    if (m.timed_out) e["timed_out"] = true;
    v.push_back(e);
  }
  p.json = {{"schedule", rep.schedule}, {"ranks", p.n}, {"steps", rep.steps}, {"params", params_json(*g)}, {"verdicts", v}};
  p.json["counterexample"] = cx ? nlohmann::json::parse(verify::render_json(*cx, o.s.sources)) : nlohmann::json(nullptr);
  if (!rep.note.empty()) p.json["note"] = rep.note;
  if (r.timing)
    p.json["time"] = {
        {"explicit_s", rounded(rep.explicit_seconds())}, {"z3_s", rounded(rep.z3_seconds())}, {"total_s", rounded(p.total_s)}};
  return p;
}

nlohmann::json VerifyResult::json() const {
  if (points.size() == 1 && not_started.empty()) return points[0].json;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points) out.push_back(p.json);
  return out;
}

VerifyResult verify(const VerifyRequest& r) {
  verify::VerifyOptions vo = verify_options(r);  // the deadline starts here
  Opened o;
  open(r.target, o, true);
  VerifyResult res;
  for (size_t i = 0; i < o.ns.size(); ++i) {
    if (Clock::now() >= vo.deadline) {
      res.not_started.assign(o.ns.begin() + static_cast<std::ptrdiff_t>(i), o.ns.end());
      res.status = std::max(res.status, 3);
      break;
    }
    BuildOptions bo = build_options(o, o.ns[i]);
    bo.dump.after.clear();
    res.points.push_back(verify_point(o, bo, r, vo));
    res.status = std::max(res.status, res.points.back().status);
    if (res.points.back().built && res.points.back().report.timed_out()) {
      res.not_started.assign(o.ns.begin() + static_cast<std::ptrdiff_t>(i) + 1, o.ns.end());
      if (!res.not_started.empty()) res.status = std::max(res.status, 3);
      break;
    }
  }
  return res;
}

}  // namespace sg::api

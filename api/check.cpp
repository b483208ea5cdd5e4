// `check` as a library call: build one N, run the reference interpreter on symbolic values and
// check the postconditions (core/interp/run_check.hpp).
#include <algorithm>

#include "api/api.hpp"
#include "core/base/sizes.hpp"
#include "core/interp/run_check.hpp"
#include "core/io/writers.hpp"

namespace sg::api {

CheckPoint check_point(Opened& o, const BuildOptions& bo_in) {
  CheckPoint p;
  p.schedule = o.t.name();
  p.n = bo_in.elab.nranks;
  // Each N reports its own errors (a loop error repeated at another N is not a "repeat").
  o.s.diags.clear();
  BuildOptions bo = bo_in;
  count_interpreter(bo.elab);
  std::unique_ptr<StepGraph> g = build(o.s, o.t, bo).graph;
  bool fits = g && interpreter_fits(*g, o.t, bo.elab, o.s.diags);
  if (!fits || o.s.diags.has_errors()) {
    p.status = 2;
    p.diagnostics = o.s.diags.render(o.s.sources);
    p.located = diagnostics_json(o.s.diags, o.s.sources);
    // An N the schedule refuses through `require` is not a mistake in the input.
    if (const Diagnostic* why = o.s.diags.unsupported_since(0)) {
      p.result = "unsupported";
      p.message = unsupported_reason(*why);
    } else {
      p.result = "bad-input";
    }
    return p;
  }
  p.built = true;
  InterpResult r = interpret(*g);
  PostconditionReport post;
  if (r.completed) post = check_postconditions(*g, r.initial, r.final);
  follow_wrong_terms(*g, post, r);
  Diagnostics findings;
  render_findings(*g, r, post, findings);
  bool ok = r.completed && post.chunks_wrong == 0 && !findings.has_errors();
  // The verdict names the first kind of defect found, in the design's order.
  p.result = check_verdict(r, ok);
  p.status = ok ? 0 : 1;
  for (StepId s = 0; s < g->size(); ++s)
    if (g->kind(s) == StepKind::Send && g->match(s) != kNoStep) ++p.transfers;
  p.steps = g->size();
  p.chunks_checked = post.chunks_checked;
  p.chunks_wrong = post.chunks_wrong;
  p.params = params_json(*g);
  p.params_text = parameter_values(*g);
  p.findings = diagnostics_json(findings, o.s.sources);
  p.findings_text = findings.render(o.s.sources);
  return p;
}

nlohmann::json to_json(const CheckPoint& p) {
  if (p.result == "unsupported")
    return {{"schedule", p.schedule}, {"ranks", p.n}, {"result", "unsupported"}, {"message", p.message}, {"diagnostics", p.diagnostics}};
  if (!p.built) return {{"schedule", p.schedule}, {"ranks", p.n}, {"result", "bad-input"}, {"diagnostics", p.diagnostics}};
  return {{"schedule", p.schedule},
          {"ranks", p.n},
          {"result", p.result},
          {"steps", p.steps},
          {"transfers", p.transfers},
          {"chunks_checked", p.chunks_checked},
          {"chunks_wrong", p.chunks_wrong},
          {"params", p.params},
          {"findings", p.findings}};
}

nlohmann::json CheckResult::json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points) out.push_back(to_json(p));
  return out;
}

CheckResult check(const TargetRequest& r) {
  Opened o;
  open(r, o, true);
  CheckResult res;
  for (uint32_t n : o.ns) {
    BuildOptions bo = build_options(o, n);
    bo.dump.after.clear();
    res.points.push_back(check_point(o, bo));
    res.status = std::max(res.status, res.points.back().status);
  }
  return res;
}

}  // namespace sg::api

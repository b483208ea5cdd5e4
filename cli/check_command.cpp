// `stepgraph check`: for each N, build the graph, run the reference interpreter on symbolic
// values and check the postconditions; print a verdict per N (or JSON) and the findings.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/base/sizes.hpp"
#include "core/interp/check.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"

namespace sg::cli {

int cmd_check(const CheckOpts& o) {
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  int rc = 0;
  nlohmann::json out = nlohmann::json::array();
  FoldedWarnings warnings;
  for (uint32_t n : p.ns) {
    // Each N reports its own errors (a loop error repeated at another N is not a "repeat").
    p.s.diags.clear();
    uint64_t errors_before = 0;
    size_t diags_before = 0;
    BuildOptions bo = build_options(o.c, p, n, std::cout, true);
    count_interpreter(bo.elab);
    std::unique_ptr<StepGraph> g = build(p.s, p.t, bo).graph;
    bool dumped_ok = g != nullptr;
    if (dumped_ok) dumped_ok = interpreter_fits(*g, p.t, bo.elab, p.s.diags);
    std::string head = "check " + p.t.name() + " N = " + std::to_string(n) + ": ";
    if (!g || !dumped_ok || p.s.diags.error_count() > errors_before) {
      rc = 2;
      std::string text;
      text = p.s.diags.render(p.s.sources, diags_before);
      // An N the schedule refuses through `require` is not a mistake in the input: it says so,
      // with the reason; -q leaves it out (the exit code still tells).
      if (const Diagnostic* why = p.s.diags.unsupported_since(diags_before)) {
        if (o.json) {
          out.push_back({{"schedule", p.t.name()},
                         {"ranks", n},
                         {"result", "unsupported"},
                         {"message", unsupported_reason(*why)},
                         {"diagnostics", text}});
        } else if (!o.quiet) {
          std::cout << head << "unsupported (" << unsupported_reason(*why) << ")\n";
          std::cerr << text;
        }
        continue;
      }
      if (o.json) {
        out.push_back({{"schedule", p.t.name()}, {"ranks", n}, {"result", "bad-input"}, {"diagnostics", text}});
      } else {
        std::cout << head << "bad input\n";
        std::cerr << text;
      }
      continue;
    }
    warnings.add(p.s.diags, n);  // a failed N above shows its warnings with its errors
    InterpResult r = interpret(*g);
    PostconditionReport post;
    if (r.completed) post = check_postconditions(*g, r.initial, r.final);
    follow_wrong_terms(*g, post, r);
    Diagnostics findings;
    render_findings(*g, r, post, findings);
    bool ok = r.completed && post.chunks_wrong == 0 && !findings.has_errors();
    // The verdict names the first kind of defect found, in the design's order.
    std::string verdict = check_verdict(r, ok);
    if (!ok) rc = std::max(rc, 1);
    uint64_t transfers = 0;
    for (StepId s = 0; s < g->size(); ++s)
      if (g->kind(s) == StepKind::Send && g->match(s) != kNoStep) ++transfers;
    if (o.json) {
      nlohmann::json f = nlohmann::json::array();
      for (const auto& d : findings.all()) {
        nlohmann::json notes = nlohmann::json::array();
        for (const DiagNote& nt : d.notes)
          notes.push_back({{"file", nt.loc.file ? p.s.sources.file(nt.loc.file).name() : ""},
                           {"line", nt.loc.line},
                           {"col", nt.loc.col},
                           {"message", nt.message}});
        f.push_back({{"severity", d.severity == Severity::Error ? "error" : "warning"},
                     {"file", d.loc.file ? p.s.sources.file(d.loc.file).name() : ""},
                     {"line", d.loc.line},
                     {"col", d.loc.col},
                     {"message", d.message},
                     {"notes", notes}});
      }
      out.push_back({{"schedule", p.t.name()},
                     {"ranks", n},
                     {"result", verdict},
                     {"steps", g->size()},
                     {"transfers", transfers},
                     {"chunks_checked", post.chunks_checked},
                     {"chunks_wrong", post.chunks_wrong},
                     {"params", params_json(*g)},
                     {"findings", f}});
      continue;
    }
    if (!ok || !o.quiet) {
      std::cout << head << verdict << "  (" << with_commas(g->size()) << " steps, " << with_commas(transfers) << " transfers, "
                << post.chunks_checked << " chunks checked";
      if (post.chunks_wrong) std::cout << ", " << post.chunks_wrong << " wrong";
      if (std::string pv = parameter_values(*g); !pv.empty()) std::cout << "; " << pv;
      std::cout << ")\n";
    }
    std::cout << findings.render(p.s.sources);
  }
  // After the results, once per statement (-q: only failures are printed).
  if (!o.quiet) warnings.print(std::cerr, p.s.sources);
  if (o.json) std::cout << out.dump(2) << "\n";
  return rc;
}

}  // namespace sg::cli

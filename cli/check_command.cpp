// `stepgraph check`: for each N, build the graph, run the reference interpreter on symbolic
// values and check the postconditions; print a verdict per N (or JSON) and the findings.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/api.hpp"
#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/base/sizes.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"

namespace sg::cli {

int cmd_check(const CheckOpts& o) {
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  int rc = 0;
  api::CheckResult all;
  FoldedWarnings warnings;
  for (uint32_t n : p.ns) {
    api::CheckPoint cp = api::check_point(p, build_options(o.c, p, n, std::cout, true));
    rc = std::max(rc, cp.status);
    std::string head = "check " + cp.schedule + " N = " + std::to_string(n) + ": ";
    if (o.json) {
      all.points.push_back(cp);
      if (cp.built) warnings.add(p.s.diags, n);
      continue;
    }
    if (!cp.built) {
      // An N the schedule refuses through `require` is not a mistake in the input: it says so,
      // with the reason; -q leaves it out (the exit code still tells).
      if (cp.result == "unsupported") {
        if (!o.quiet) {
          std::cout << head << "unsupported (" << cp.message << ")\n";
          std::cerr << cp.diagnostics;
        }
      } else {
        std::cout << head << "bad input\n";
        std::cerr << cp.diagnostics;
      }
      continue;
    }
    warnings.add(p.s.diags, n);  // a failed N above shows its warnings with its errors
    if (cp.status != 0 || !o.quiet) {
      std::cout << head << cp.result << "  (" << with_commas(cp.steps) << " steps, " << with_commas(cp.transfers) << " transfers, "
                << cp.chunks_checked << " chunks checked";
      if (cp.chunks_wrong) std::cout << ", " << cp.chunks_wrong << " wrong";
      if (!cp.params_text.empty()) std::cout << "; " << cp.params_text;
      std::cout << ")\n";
    }
    std::cout << cp.findings_text;
  }
  // After the results, once per statement (-q: only failures are printed).
  if (!o.quiet) warnings.print(std::cerr, p.s.sources);
  if (o.json) std::cout << all.json().dump(2) << "\n";
  return rc;
}

}  // namespace sg::cli

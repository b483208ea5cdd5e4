// `stepgraph analyze`: what a schedule costs each rank, from its step graph alone — bytes and
// messages, compute, peak extra memory and the load imbalance (core/graph/analysis.hpp).
// Collectives are expanded first (--algo, or Open MPI's choice), so their traffic counts.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "api/api.hpp"
#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/base/sizes.hpp"
#include "core/graph/analysis.hpp"
#include "core/graph/expand_collectives.hpp"
#include "core/graph/passes.hpp"

namespace sg::cli {

namespace {

std::string human_flops(double f) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int u = 0;
  while (f >= 1000 && u < 6) f /= 1000, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %sFLOP" : "%.2f %sFLOP", f, units[u]);
  return buf;
}

}  // namespace

int cmd_analyze(const AnalyzeOpts& o) {
  api::AnalyzeRequest req;
  if (Diagnostics diags; !o.algo.empty() && !parse_algo_choice(o.algo, req.algo, diags)) return fail(diags.messages());
  req.unit = o.unit;
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  api::AnalyzeResult all;
  int rc = 0;
  const auto& cols = api::analyze_columns();
  for (uint32_t n : p.ns) {
    api::AnalyzePoint ap = api::analyze_point(p, build_options(o.c, p, n, std::cout, true), req);
    if (!ap.built && ap.error.empty()) {
      if (!ap.unsupported.empty()) {
        std::cout << "analyze " << ap.schedule << " N = " << n << ": unsupported (" << ap.unsupported << ")\n";
        if (rc == 0) rc = 2;
        continue;
      }
      p.s.diags.print(std::cerr, p.s.sources);
      rc = 2;
      continue;
    }
    print_warnings(p.s);
    if (!ap.error.empty()) return fail(ap.error);
    if (o.json) {
      all.points.push_back(ap);
      continue;
    }
    auto show = [&](const api::AnalyzeColumn& c, double v) -> std::string {
      char buf[48];
      if (c.bytes && !ap.unit_name.empty()) {
        std::snprintf(buf, sizeof buf, "%.4g %s", v / ap.unit, ap.unit_name.c_str());
        return buf;
      }
      if (c.bytes) return human_bytes(static_cast<uint64_t>(std::llround(v)));
      if (std::string(c.key) == "flops") return human_flops(v);
      std::snprintf(buf, sizeof buf, "%.4g", v);
      return buf;
    };
    std::string params, extras;
    for (const auto& [k, v] : ap.params) params += (params.empty() ? "" : " ") + k + "=" + v;
    for (const auto& e : ap.extra_buffers_text) extras += (extras.empty() ? "" : ", ") + e;
    std::cout << "analyze " << ap.schedule << " N = " << n << (params.empty() ? "" : "  (" + params + ")") << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-6s", "");
    std::cout << line;
    for (const api::AnalyzeColumn& c : cols) {
      std::snprintf(line, sizeof line, " %14s", c.name);
      std::cout << line;
    }
    std::cout << "\n";
    auto row = [&](const std::string& label, const std::vector<double>& v) {
      std::snprintf(line, sizeof line, "  %-6s", label.c_str());
      std::cout << line;
      for (size_t k = 0; k < v.size(); ++k) {
        std::snprintf(line, sizeof line, " %14s", show(cols[k], v[k]).c_str());
        std::cout << line;
      }
      std::cout << "\n";
    };
    if (o.per_rank)
      for (uint32_t r = 0; r < n; ++r) {
        std::vector<double> v;
        for (const api::AnalyzeColumn& c : cols) v.push_back(c.get(ap.cost.ranks[r]));
        row("rank " + std::to_string(r), v);
      }
    row("min", ap.min);
    row("mean", ap.mean);
    row("max", ap.max);
    std::snprintf(line, sizeof line, "  imbalance (max / mean compute): %.4f\n", ap.cost.imbalance);
    std::cout << line;
    std::cout << "  extra buffers: " << (extras.empty() ? "none" : extras) << "\n";
    for (const auto& e : ap.expansions) std::cout << "  expanded: " << e << "\n";
    if (!ap.unit_name.empty())
      std::cout << "  bytes in chunks of " << ap.unit_name << " (" << human_bytes(static_cast<uint64_t>(ap.unit)) << ")\n";
  }
  if (o.json) std::cout << all.json().dump(2) << "\n";
  return rc;
}

}  // namespace sg::cli

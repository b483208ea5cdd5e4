// `stepgraph analyze`: what a schedule costs each rank, from its step graph alone — bytes and
// messages, compute, peak extra memory and the load imbalance (core/graph/analysis.hpp).
// Collectives are expanded first (--algo, or Open MPI's choice), so their traffic counts.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

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

struct Column {
  const char* name;
  const char* key;
  bool bytes;  // shown in bytes (or --unit chunks)
  double (*get)(const RankCost&);
};

const Column kColumns[] = {
    {"sent", "bytes_sent", true, [](const RankCost& c) { return static_cast<double>(c.bytes_sent); }},
    {"received", "bytes_received", true, [](const RankCost& c) { return static_cast<double>(c.bytes_received); }},
    {"msgs out", "messages_sent", false, [](const RankCost& c) { return static_cast<double>(c.messages_sent); }},
    {"msgs in", "messages_received", false, [](const RankCost& c) { return static_cast<double>(c.messages_received); }},
    {"compute", "flops", false, [](const RankCost& c) { return c.flops; }},
    {"tiles", "tiles", false, [](const RankCost& c) { return static_cast<double>(c.tiles); }},
    {"reduced", "reduced_bytes", true, [](const RankCost& c) { return static_cast<double>(c.reduced_bytes); }},
    {"peak extra", "peak_extra_bytes", true, [](const RankCost& c) { return static_cast<double>(c.peak_extra_bytes); }},
};

}  // namespace

int cmd_analyze(const AnalyzeOpts& o) {
  AlgoChoice choice;
  std::string err;
  if (!o.algo.empty() && !parse_algo_choice(o.algo, choice, err)) return fail(err);
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  nlohmann::json out = nlohmann::json::array();
  int rc = 0;
  for (uint32_t n : p.ns) {
    p.s.diags.clear();
    // Memory is read off the graph as written: a collective step writes the user's buffer in
    // place (an all-gather fills every block of it), while its expansion works on buffers of its
    // own. Traffic is read off the expansion.
    BuildOptions bo = build_options(o.c, p, n, std::cout, true);
    bo.dump.sink = nullptr;  // (analyze accepts --dump-after but has never printed it)
    bo.expand = Expansion::ForCost;
    bo.algo = choice;
    bo.keep_as_written = true;
    Built built = build(p.s, p.t, bo);
    bool ok = built.ok();
    std::unique_ptr<StepGraph>& g = built.graph;
    std::unique_ptr<StepGraph>& as_written = built.as_written;
    std::vector<std::string> expansions;
    if (ok) {
      std::map<std::string, int> lines;
      for (const auto& e : built.expansion.instances)
        if (e.expanded && !e.schedule.empty()) ++lines[expansion_line(e)];
      for (const auto& [l, k] : lines) expansions.push_back(l + (k > 1 ? "; " + std::to_string(k) + " instances" : ""));
    }
    if (!ok) {
      if (built.unsupported) {
        std::cout << "analyze " << p.t.name() << " N = " << n << ": unsupported (" << built.unsupported_reason << ")\n";
        if (rc == 0) rc = 2;
        continue;
      }
      p.s.diags.print(std::cerr, p.s.sources);
      rc = 2;
      continue;
    }
    print_warnings(p.s);
    double unit = 1;
    std::string unit_name;
    if (!o.unit.empty()) {
      auto it = std::find_if(g->buffers.begin(), g->buffers.end(), [&](const BufferInfo& b) { return b.name == o.unit; });
      if (it == g->buffers.end()) return fail("--unit " + o.unit + ": the schedule has no buffer of that name");
      unit = static_cast<double>(it->chunk_bytes);
      unit_name = o.unit;
    }
    GraphCost cost = analyze_cost(*g);
    if (as_written) {
      GraphCost mem = analyze_cost(*as_written);
      for (uint32_t r = 0; r < n; ++r) cost.ranks[r].peak_extra_bytes = mem.ranks[r].peak_extra_bytes;
      cost.extra_buffers = mem.extra_buffers;
    }
    std::string extras;
    for (uint32_t b : cost.extra_buffers) {
      const BufferInfo& bi = (as_written ? *as_written : *g).buffers[b];
      if (!extras.empty()) extras += ", ";
      extras += bi.name + " (" + std::to_string(bi.chunks) + " × " + human_bytes(bi.chunk_bytes) + ")";
    }
    std::string params;
    for (const auto& [k, v] : g->params) params += (params.empty() ? "" : " ") + k + "=" + std::to_string(v);
    auto show = [&](const Column& c, double v) -> std::string {
      char buf[48];
      if (c.bytes && !unit_name.empty()) {
        std::snprintf(buf, sizeof buf, "%.4g %s", v / unit, unit_name.c_str());
        return buf;
      }
      if (c.bytes) return human_bytes(static_cast<uint64_t>(std::llround(v)));
      if (std::string(c.key) == "flops") return human_flops(v);
      std::snprintf(buf, sizeof buf, "%.4g", v);
      return buf;
    };
    // min / mean / max per column
    std::vector<double> mn, mean, mx;
    for (const Column& c : kColumns) {
      double a = INFINITY, s = 0, b = 0;
      for (const RankCost& rc2 : cost.ranks) {
        double v = c.get(rc2);
        a = std::min(a, v), b = std::max(b, v), s += v;
      }
      mn.push_back(a), mean.push_back(s / n), mx.push_back(b);
    }
    if (o.json) {
      nlohmann::json j;
      j["schedule"] = p.t.name();
      j["ranks"] = n;
      nlohmann::json pj = nlohmann::json::object();
      for (const auto& [k, v] : g->params) pj[k] = v;
      j["params"] = pj;
      nlohmann::json per = nlohmann::json::array();
      for (uint32_t r = 0; r < n; ++r) {
        nlohmann::json x;
        x["rank"] = r;
        for (const Column& c : kColumns) x[c.key] = c.get(cost.ranks[r]);
        per.push_back(x);
      }
      j["per_rank"] = per;
      nlohmann::json jmin, jmean, jmax;
      for (size_t k = 0; k < std::size(kColumns); ++k) {
        jmin[kColumns[k].key] = mn[k];
        jmean[kColumns[k].key] = mean[k];
        jmax[kColumns[k].key] = mx[k];
      }
      j["min"] = jmin;
      j["mean"] = jmean;
      j["max"] = jmax;
      j["imbalance"] = cost.imbalance;
      nlohmann::json eb = nlohmann::json::array();
      for (uint32_t b : cost.extra_buffers) eb.push_back((as_written ? *as_written : *g).buffers[b].name);
      j["extra_buffers"] = eb;
      j["expansions"] = expansions;
      if (!unit_name.empty()) j["unit"] = {{"buffer", unit_name}, {"bytes", unit}};
      out.push_back(j);
      continue;
    }
    std::cout << "analyze " << p.t.name() << " N = " << n << (params.empty() ? "" : "  (" + params + ")") << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-6s", "");
    std::cout << line;
    for (const Column& c : kColumns) {
      std::snprintf(line, sizeof line, " %14s", c.name);
      std::cout << line;
    }
    std::cout << "\n";
    auto row = [&](const std::string& label, const std::vector<double>& v) {
      std::snprintf(line, sizeof line, "  %-6s", label.c_str());
      std::cout << line;
      for (size_t k = 0; k < v.size(); ++k) {
        std::snprintf(line, sizeof line, " %14s", show(kColumns[k], v[k]).c_str());
        std::cout << line;
      }
      std::cout << "\n";
    };
    if (o.per_rank)
      for (uint32_t r = 0; r < n; ++r) {
        std::vector<double> v;
        for (const Column& c : kColumns) v.push_back(c.get(cost.ranks[r]));
        row("rank " + std::to_string(r), v);
      }
    row("min", mn);
    row("mean", mean);
    row("max", mx);
    std::snprintf(line, sizeof line, "  imbalance (max / mean compute): %.4f\n", cost.imbalance);
    std::cout << line;
    std::cout << "  extra buffers: " << (extras.empty() ? "none" : extras) << "\n";
    for (const auto& e : expansions) std::cout << "  expanded: " << e << "\n";
    if (!unit_name.empty()) std::cout << "  bytes in chunks of " << unit_name << " (" << human_bytes(static_cast<uint64_t>(unit)) << ")\n";
  }
  if (o.json) std::cout << (out.size() == 1 ? out[0].dump(2) : out.dump(2)) << "\n";
  return rc;
}

}  // namespace sg::cli

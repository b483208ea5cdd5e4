// `analyze` as a library call: what a schedule costs each rank, from its step graph alone
// (core/graph/analysis.hpp). Collectives are expanded first, so their traffic counts; memory is
// read off the graph as written (a collective step writes the user's buffer in place, while its
// expansion works on buffers of its own).
#include <algorithm>
#include <cmath>
#include <map>

#include "api/api.hpp"
#include "core/base/sizes.hpp"

namespace sg::api {

const std::vector<AnalyzeColumn>& analyze_columns() {
  static const std::vector<AnalyzeColumn> columns = {
      {"sent", "bytes_sent", true, [](const RankCost& c) { return static_cast<double>(c.bytes_sent); }},
      {"received", "bytes_received", true, [](const RankCost& c) { return static_cast<double>(c.bytes_received); }},
      {"msgs out", "messages_sent", false, [](const RankCost& c) { return static_cast<double>(c.messages_sent); }},
      {"msgs in", "messages_received", false, [](const RankCost& c) { return static_cast<double>(c.messages_received); }},
      {"compute", "flops", false, [](const RankCost& c) { return c.flops; }},
      {"tiles", "tiles", false, [](const RankCost& c) { return static_cast<double>(c.tiles); }},
      {"reduced", "reduced_bytes", true, [](const RankCost& c) { return static_cast<double>(c.reduced_bytes); }},
      {"peak extra", "peak_extra_bytes", true, [](const RankCost& c) { return static_cast<double>(c.peak_extra_bytes); }},
  };
  return columns;
}

AnalyzePoint analyze_point(Opened& o, BuildOptions bo, const AnalyzeRequest& r) {
  AnalyzePoint p;
  p.schedule = o.t.name();
  p.n = bo.elab.nranks;
  o.s.diags.clear();
  bo.dump.sink = nullptr;  // (analyze accepts --dump-after but has never printed it)
  bo.expand = Expansion::ForCost;
  bo.algo = r.algo;
  bo.keep_as_written = true;
  Built built = build(o.s, o.t, bo);
  if (!built.ok()) {
    p.status = 2;
    if (built.unsupported) p.unsupported = built.unsupported_reason;
    return p;
  }
  const StepGraph& g = *built.graph;
  const StepGraph& mem_graph = built.as_written ? *built.as_written : g;
  std::map<std::string, int> lines;
  for (const auto& e : built.expansion.instances)
    if (e.expanded && !e.schedule.empty()) ++lines[expansion_line(e)];
  for (const auto& [l, k] : lines) p.expansions.push_back(l + (k > 1 ? "; " + std::to_string(k) + " instances" : ""));
  if (!r.unit.empty()) {
    auto it = std::find_if(g.buffers.begin(), g.buffers.end(), [&](const BufferInfo& b) { return b.name == r.unit; });
    if (it == g.buffers.end()) {
      p.status = 2;
      p.error = "--unit " + r.unit + ": the schedule has no buffer of that name";
      return p;
    }
    p.unit = static_cast<double>(it->chunk_bytes);
    p.unit_name = r.unit;
  }
  p.built = true;
  p.cost = analyze_cost(g);
  if (built.as_written) {
    GraphCost mem = analyze_cost(*built.as_written);
    for (uint32_t k = 0; k < p.n; ++k) p.cost.ranks[k].peak_extra_bytes = mem.ranks[k].peak_extra_bytes;
    p.cost.extra_buffers = mem.extra_buffers;
  }
  for (uint32_t b : p.cost.extra_buffers) {
    const BufferInfo& bi = mem_graph.buffers[b];
    p.extra_buffers.push_back(bi.name);
    p.extra_buffers_text.push_back(bi.name + " (" + std::to_string(bi.chunks) + " × " + human_bytes(bi.chunk_bytes) + ")");
  }
  for (const auto& [k, v] : g.params) p.params.emplace_back(k, std::to_string(v));
  const auto& cols = analyze_columns();
  for (const AnalyzeColumn& c : cols) {
    double a = INFINITY, s = 0, b = 0;
    for (const RankCost& rc : p.cost.ranks) {
      double v = c.get(rc);
      a = std::min(a, v), b = std::max(b, v), s += v;
    }
    p.min.push_back(a), p.mean.push_back(s / p.n), p.max.push_back(b);
  }
  nlohmann::json& j = p.json;
  j["schedule"] = p.schedule;
  j["ranks"] = p.n;
  j["params"] = params_json(g);
  nlohmann::json per = nlohmann::json::array();
  for (uint32_t k = 0; k < p.n; ++k) {
    nlohmann::json x;
    x["rank"] = k;
    for (const AnalyzeColumn& c : cols) x[c.key] = c.get(p.cost.ranks[k]);
    per.push_back(x);
  }
  j["per_rank"] = per;
  nlohmann::json jmin, jmean, jmax;
  for (size_t k = 0; k < cols.size(); ++k) {
    jmin[cols[k].key] = p.min[k];
    jmean[cols[k].key] = p.mean[k];
    jmax[cols[k].key] = p.max[k];
  }
  j["min"] = jmin;
  j["mean"] = jmean;
  j["max"] = jmax;
  j["imbalance"] = p.cost.imbalance;
  j["extra_buffers"] = p.extra_buffers;
  j["expansions"] = p.expansions;
  if (!p.unit_name.empty()) j["unit"] = {{"buffer", p.unit_name}, {"bytes", p.unit}};
  return p;
}

nlohmann::json AnalyzeResult::json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : points)
    if (p.built) out.push_back(p.json);
  return out.size() == 1 ? out[0] : out;
}

AnalyzeResult analyze(const AnalyzeRequest& r) {
  Opened o;
  open(r.target, o, true);
  AnalyzeResult res;
  for (uint32_t n : o.ns) {
    res.points.push_back(analyze_point(o, build_options(o, n), r));
    const AnalyzePoint& p = res.points.back();
    if (!p.error.empty()) throw BadInput(p.error);
    if (!p.built && p.unsupported.empty())
      throw BadInput("analyze " + p.schedule + " N = " + std::to_string(n) + ": bad input", o.s.diags.render(o.s.sources),
                     diagnostics_json(o.s.diags, o.s.sources));
    res.status = std::max(res.status, p.status);
  }
  return res;
}

}  // namespace sg::api

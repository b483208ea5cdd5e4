#include "sim/point.hpp"

#include <fstream>
#include <sstream>

#include "core/base/format.hpp"
#include "core/base/sizes.hpp"
#include "core/interp/bus_bandwidth.hpp"
#include "core/io/trace.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "sim/link_intervals.hpp"
#ifdef STEPGRAPH_HAVE_SIMGRID
#include "sim/simgrid_platform.hpp"
#endif

namespace sg::sim {

void to_json(nlohmann::json& j, const PointResult& r) {
  j = {{"schedule", r.schedule}, {"ranks", r.n},          {"platform", r.platform},     {"model", r.model},
       {"time_s", r.time_s},     {"algbw_GBps", r.algbw}, {"busbw_GBps", r.busbw},      {"messages", r.messages},
       {"bytes", r.bytes},       {"wall_s", r.wall_s},    {"size_bytes", r.size_bytes}, {"completed", r.completed}};
  if (!r.param.empty()) j[r.param] = r.param_value;
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.expansions.empty()) j["collectives"] = r.expansions;
  if (r.compute_s > 0) j["overlap"] = {{"compute_s", r.compute_s}, {"comm_s", r.comm_s}, {"hidden_s", r.overlap_s}};
  if (r.completed) {
    j["slowest_rank"] = r.slowest_rank;
    j["critical_path"] = r.critical_json;
    j["links"] = r.links_json;
  }
}

nlohmann::json point_to_json(const PointResult& r) {
  nlohmann::json j;
  to_json(j, r);
  j["_text"] = r.text;
  j["_diag"] = r.diag;
  j["_status"] = r.status;
  j["_param"] = r.param;
  j["_factor"] = r.factor_name;
  j["_events"] = r.events;
  j["_slowest_s"] = r.slowest_s;
  return j;
}

PointResult point_from_json(const nlohmann::json& j) {
  PointResult r;
  r.schedule = j.at("schedule");
  r.n = j.at("ranks");
  r.platform = j.at("platform");
  r.model = j.at("model");
  r.time_s = j.at("time_s");
  r.algbw = j.at("algbw_GBps");
  r.busbw = j.at("busbw_GBps");
  r.messages = j.at("messages");
  r.bytes = j.at("bytes");
  r.wall_s = j.at("wall_s");
  r.size_bytes = j.at("size_bytes");
  r.completed = j.at("completed");
  r.param = j.at("_param");
  if (!r.param.empty()) r.param_value = j.at(r.param);
  if (j.contains("error")) r.error = j.at("error");
  if (r.completed) {
    r.slowest_rank = j.at("slowest_rank");
    r.critical_json = j.at("critical_path");
    r.links_json = j.at("links");
  }
  r.text = j.at("_text");
  r.diag = j.at("_diag");
  r.status = j.at("_status");
  r.factor_name = j.at("_factor");
  r.events = j.at("_events");
  r.slowest_s = j.at("_slowest_s");
  if (j.contains("overlap")) {
    r.compute_s = j.at("overlap").at("compute_s");
    r.comm_s = j.at("overlap").at("comm_s");
    r.overlap_s = j.at("overlap").at("hidden_s");
  }
  if (j.contains("collectives")) r.expansions = j.at("collectives").get<std::vector<std::string>>();
  return r;
}

PointResult run_point(const PointSpec& p) {
  PointResult r;
  r.n = p.n;
  Session s;
  Target t = open_target(s, p.target);
  r.schedule = t.opened() ? t.name() : p.target;
  // Collective steps become the point-to-point traffic of a library algorithm.
  BuildOptions bo;
  bo.elab.nranks = p.n;
  bo.elab.sets = p.sets;
  bo.elab.max_memory = p.max_memory;
  bo.expand = Expansion::ForCost;
  bo.algo = p.algo;
  Built b = build(s, t, bo);
  if (!b.ok()) {
    r.status = 2;
    r.error = b.unsupported ? "unsupported (" + b.unsupported_reason + ")" : "bad input";
    r.diag = b.unsupported && p.quiet ? "" : s.diags.render(s.sources);
    r.unsupported = b.unsupported;
    return r;
  }
  for (const auto& e : b.expansion.instances)
    if (e.expanded) r.expansions.push_back(expansion_line(e));
  const std::unique_ptr<StepGraph>& g = b.graph;
  std::ostringstream warn;
  for (const auto& d : s.diags.all())
    if (d.severity == Severity::Warning) warn << render_diagnostic(d, s.sources);
  r.warnings = warn.str();
  Platform platform;
  std::string perr;
  std::string spec = p.platform.empty() ? default_platform_spec() : p.platform;
  if (!parse_platform(spec, p.n, platform, perr)) {
    r.status = 2;
    r.error = "bad --platform '" + spec + "': " + perr;
    return r;
  }
#ifdef STEPGRAPH_HAVE_SIMGRID
  if (platform.kind == PlatformKind::Xml && !resolve_xml_platform(platform, perr)) {
    r.status = 2;
    r.error = "bad --platform '" + spec + "': " + perr;
    return r;
  }
#endif
  if (p.platform.empty()) platform.spec += " (the default; --platform to choose)";
  SimOptions so = p.options;
  so.trace = !p.trace_file.empty();
  if (!so.map.empty() && so.map.size() < p.n) {
    r.status = 2;
    r.error = "--map gives hosts for " + std::to_string(so.map.size()) + " ranks; N = " + std::to_string(p.n);
    return r;
  }
  for (uint32_t k = 0; k < p.n && !so.map.empty(); ++k)
    if (so.map[k] >= platform.hosts) {
      r.status = 2;
      r.error = "--map puts rank " + std::to_string(k) + " on host " + std::to_string(so.map[k]) + ", but the platform has " +
                std::to_string(platform.hosts) + " hosts";
      return r;
    }
  if (so.map.empty() && platform.hosts < p.n) {
    r.status = 2;
    r.error = "the platform has " + std::to_string(platform.hosts) + " hosts for " + std::to_string(p.n) + " ranks";
    return r;
  }
  SimResult res = simulate(*g, platform, so);
  r.platform = res.platform;
  r.model = res.model;
  r.time_s = res.time_s;
  r.messages = res.messages;
  r.bytes = res.bytes;
  r.wall_s = res.wall_s;
  r.events = res.events;
  r.completed = res.completed && res.error.empty();
  r.slowest_rank = res.slowest_rank;
  r.slowest_s = res.slowest_rank_s;
  r.compute_s = res.compute_s;
  r.comm_s = res.comm_s;
  r.overlap_s = res.overlap_s;
  ExpectKind kind;
  r.size_bytes = expected_size(*g, kind);
  double factor = bus_factor(kind, p.n, r.factor_name);
  if (r.time_s > 0 && r.size_bytes) {
    r.algbw = static_cast<double>(r.size_bytes) / r.time_s / 1e9;
    r.busbw = r.algbw * factor;
  }
  if (!res.error.empty()) {
    r.status = 3;
    r.error = res.error;
    return r;
  }
  // Critical path and links, rendered here: the source lines are this process's.
  std::ostringstream text;
  r.critical_json = nlohmann::json::array();
  for (const auto& c : res.critical) {
    std::string where =
        c.loc.valid() ? s.sources.file(c.loc.file).name() + ":" + std::to_string(c.loc.line) + ":" + std::to_string(c.loc.col) : "?";
    r.critical_json.push_back({{"seconds", c.seconds}, {"source", where}, {"what", c.what}, {"steps", c.steps}});
    text << "    " << human_time(c.seconds) << "  " << where << "  " << c.what << " (" << with_commas(c.steps) << " step"
         << (c.steps == 1 ? "" : "s") << ")\n";
    if (c.loc.valid()) {
      std::string line(s.sources.file(c.loc.file).line(c.loc.line));
      line.erase(0, line.find_first_not_of(" \t"));
      if (line.size() > 90) line = line.substr(0, 87) + "...";
      text << "        " << line << "\n";
    }
  }
  r.text = text.str();
  r.links_json = nlohmann::json::array();
  for (const auto& l : res.links) r.links_json.push_back({{"link", l.name}, {"bytes", l.bytes}, {"busy", l.busy}});
  if (!r.completed) {
    r.status = 1;
    std::ostringstream st;
    st << "    deadlock: " << res.stuck.ranks.size() << " rank" << (res.stuck.ranks.size() == 1 ? "" : "s") << " can never go on\n";
    for (const auto& sr : res.stuck.ranks) {
      if (sr.step == kNoStep) continue;
      Loc loc = g->loc(sr.step);
      st << "    rank " << sr.rank << " at " << describe_step(*g, sr.step) << " ("
         << (loc.valid() ? s.sources.file(loc.file).name() + ":" + std::to_string(loc.line) : std::string("?")) << "): it " << sr.why
         << "\n";
    }
    if (!res.stuck.cycle.empty()) {
      st << "    wait-for cycle:";
      for (size_t i = 0; i < res.stuck.cycle.size(); ++i) st << (i ? " -> " : " ") << "rank " << res.stuck.cycle[i];
      st << "\n";
    }
    r.text = st.str();
  }
  if (!p.trace_file.empty()) {
    const std::string& file = p.trace_file;
    std::ofstream out(file);
    if (!out) {
      r.status = 2;
      r.error = "cannot write the trace '" + file + "'";
      return r;
    }
    write_chrome_trace(out, *g, s.sources, trace_run(*g, platform, so, res));
    r.trace_file = file;
  }
  return r;
}

}  // namespace sg::sim

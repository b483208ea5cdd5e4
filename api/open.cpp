// Opening a request's target (api/api.hpp): the one place where a parameter given twice, an
// unknown --dump-after point, a missing rank count or one out of range is refused, for the
// command line and the Python module alike.
#include <algorithm>

#include "api/api.hpp"

namespace sg::api {

std::string repeated_param(const Params& params) {
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (params[j].first == params[i].first)
        return "--set " + params[i].first + " given twice ('" + params[j].second + "', then '" + params[i].second +
               "'): give each parameter once";
  return {};
}

nlohmann::json diagnostics_json(const Diagnostics& d, const SourceManager& sm) {
  nlohmann::json out = nlohmann::json::array();
  auto file = [&](const Loc& l) { return l.file ? sm.file(l.file).name() : std::string(); };
  for (const auto& x : d.all()) {
    nlohmann::json notes = nlohmann::json::array();
    for (const DiagNote& nt : x.notes)
      notes.push_back({{"file", file(nt.loc)}, {"line", nt.loc.line}, {"col", nt.loc.col}, {"message", nt.message}});
    out.push_back({{"severity", x.severity == Severity::Error     ? "error"
                                : x.severity == Severity::Warning ? "warning"
                                                                  : "note"},
                   {"file", file(x.loc)},
                   {"line", x.loc.line},
                   {"col", x.loc.col},
                   {"message", x.message},
                   {"notes", notes}});
  }
  return out;
}

nlohmann::json params_json(const StepGraph& g) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : g.params) j[k] = v;
  return j;
}

void open(const TargetRequest& r, Opened& o, bool many, const DumpRequest* parse_dump) {
  if (std::string twice = repeated_param(r.params); !twice.empty()) throw BadInput(twice);
  for (const auto& [k, v] : r.params)
    if (k.empty() || v.empty()) throw BadInput("--set needs NAME=VALUE, got '" + k + "=" + v + "'");
  o.opts.sets = r.params;
  o.opts.max_memory = r.max_memory ? *r.max_memory : default_memory_limit();
  auto points = dump_point_names();
  for (const auto& d : r.dump_after) {
    if (d != "all" && std::find(points.begin(), points.end(), d) == points.end()) {
      std::string names;
      for (const auto& x : points) names += (names.empty() ? "" : ", ") + x;
      throw BadInput("unknown pass '" + d + "' for --dump-after (passes: " + names + ", all)");
    }
  }
  o.dump_after = r.dump_after;
  o.t = open_target(o.s, r.target, parse_dump);
  if (o.s.diags.has_errors() || !o.t.opened()) {
    std::string text = o.s.diags.render(o.s.sources);
    throw BadInput("cannot open " + r.target, text, diagnostics_json(o.s.diags, o.s.sources));
  }
  // The rank count may be left out only where the target is written for one count.
  if (r.ranks.empty()) {
    if (o.t.fixed_ranks == 0) throw BadInput("--ranks (-n) is required");
    o.ns = {o.t.fixed_ranks};
    return;
  }
  for (uint32_t n : r.ranks)
    if (n < 1) throw BadInput("the number of ranks must be at least 1");
  if (!many && r.ranks.size() != 1) throw BadInput("this command takes one rank count (-n N), got " + std::to_string(r.ranks.size()));
  o.ns = r.ranks;
}

std::unique_ptr<Opened> open(const TargetRequest& r, bool many) {
  auto o = std::make_unique<Opened>();
  open(r, *o, many);
  return o;
}

BuildOptions build_options(const Opened& o, uint32_t n) {
  BuildOptions bo;
  bo.elab = o.opts;
  bo.elab.nranks = n;
  bo.dump.after = o.dump_after;
  return bo;
}

}  // namespace sg::api

// `sim` as a library call: each rank count checked first (api/precheck.hpp), then simulated
// through sim::run_point.
#include <algorithm>
#include <map>
#include <mutex>

#include "api/api.hpp"
#include "api/precheck.hpp"

namespace sg::api {

sim::PointResult sim_point(const sim::PointSpec& spec, bool allow_defects, const std::string& name) {
  // The check before the run, once per target, N and parameters (a sweep repeats them).
  static std::mutex mu;
  static std::map<std::string, Precheck> checked;
  std::string key = spec.target + "\n" + std::to_string(spec.n) + "\n" + std::to_string(spec.max_memory);
  for (const auto& [k, v] : spec.sets) key += "\n" + k + "=" + v;
  Precheck pc;
  {
    std::unique_lock<std::mutex> l(mu);
    auto it = checked.find(key);
    if (it != checked.end()) pc = it->second;
    else {
      l.unlock();
      pc = precheck(spec.target, spec.n, spec.sets, spec.max_memory);
      l.lock();
      checked.emplace(key, pc);
    }
  }
  sim::PointResult r;
  if (pc.state == Precheck::State::Defect && !allow_defects) {
    // Not timed as if it were sound: refused with the verdict (exit 1: a defect was found).
    r.schedule = name;
    r.n = spec.n;
    r.status = 1;
    r.error = "refused: " + pc.line() + " (--allow-defects simulates it anyway)";
    r.diag = pc.detail;
  } else {
    r = sim::run_point(spec);
  }
  r.check = pc.json();
  r.check_line = pc.line();
  return r;
}

nlohmann::json SimResult::json() const {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : points) {
    nlohmann::json j;
    sim::to_json(j, r);
    all.push_back(j);
  }
  return all.size() == 1 ? all[0] : all;
}

sim::PlatformChoice read_platform(const std::string& given) {
  if (given.empty()) return sim::default_platform();
  sim::PlatformChoice c;
  Session s;
  if (sim::read_platform(given, c, s.sources, s.diags)) return c;
  sim::PlatformError e = sim::platform_error(s, 0);
  throw BadInput("bad --platform '" + given + "': " + e.message, e.located, diagnostics_json(s.diags, s.sources));
}

SimResult simulate(const SimRequest& r) {
  Opened o;  // opened here too: a target that does not open is bad input before anything runs
  open(r.target, o, true);
  SimResult res;
  for (uint32_t n : o.ns) {
    sim::PointSpec spec;
    spec.target = r.target.target;
    spec.n = n;
    spec.sets = r.target.params;
    spec.max_memory = o.opts.max_memory;
    spec.algo = r.algo;
    spec.platform = r.platform;
    spec.options = r.options;
    spec.memo = r.memo;
    res.points.push_back(sim_point(spec, r.allow_defects, o.t.name()));
    const sim::PointResult& p = res.points.back();
    res.status = std::max(res.status, p.unsupported ? 2 : p.status);
  }
  return res;
}

}  // namespace sg::api

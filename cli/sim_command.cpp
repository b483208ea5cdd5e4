// `stepgraph sim`: simulate points — schedules × rank counts × values of one swept parameter —
// and report them as text, JSON, CSV, a gnuplot plot and Chrome traces. Under mpiexec the points
// are split over the processes and rank 0 prints the merged result (cli/sim_mpi.cpp).
#include "cli/sim_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/shared.hpp"
#include "core/base/format.hpp"
#include "core/base/sizes.hpp"
#include "core/base/units.hpp"
#include "core/pipeline.hpp"
#include "sim/sim.hpp"

namespace sg::cli {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int sim_options(const SimOpts& o, sim::SimOptions& so) {
  if (o.model == "simgrid") so.model = sim::Model::SimGrid;
  else if (o.model == "analytic") so.model = sim::Model::Analytic;
  else return fail("--model is simgrid or analytic, got '" + o.model + "'");
  if (o.protocol == "eager") so.runtime.protocol = sim::Protocol::Eager;
  else if (o.protocol == "rendezvous") so.runtime.protocol = sim::Protocol::Rendezvous;
  else if (o.protocol == "auto") so.runtime.protocol = sim::Protocol::Auto;
  else return fail("--protocol is eager, rendezvous or auto, got '" + o.protocol + "'");
  if (!parse_size(o.eager_limit, so.runtime.eager_limit)) return fail("bad --eager-limit '" + o.eager_limit + "'");
  // A platform file from `stepgraph calibrate` carries the measured reduction speed as a
  // `# gamma=…` line: used unless --gamma says otherwise (sim and exec --predict alike).
  std::string gamma = o.gamma;
  if (gamma.empty() && !o.platform.empty() && o.platform[0] == '@') {
    std::ifstream f(o.platform.substr(1));
    for (std::string line; std::getline(f, line);)
      if (auto at = line.find("# gamma="); at != std::string::npos) gamma = line.substr(at + 8);
  }
  std::string why;
  if (!gamma.empty() && !parse_seconds(gamma, so.runtime.gamma, why))
    return fail("bad --gamma '" + gamma + "' (seconds per reduced byte, e.g. 0.1ns)");
  if (!o.loggp.empty()) {
    std::stringstream ss(o.loggp);
    std::string kv;
    while (std::getline(ss, kv, ',')) {
      auto eq = kv.find('=');
      std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
      double* dst = k == "o"   ? &so.loggp.o
                    : k == "g" ? &so.loggp.g
                    : k == "O" ? &so.loggp.O
                    : k == "L" ? &so.loggp.L
                    : k == "G" ? &so.loggp.G
                               : nullptr;
      if (!dst || !parse_seconds(v, *dst, why))
        return fail("bad --loggp item '" + kv +
                    "' (o=TIME, g=TIME, O=TIME per byte, L=TIME, G=TIME per byte; e.g. o=1.5us,g=1us,L=2.5us,G=6ps)");
    }
    so.loggp.enabled = true;
    if (so.model != sim::Model::Analytic) return fail("--loggp applies to --model analytic (SimGrid models the network itself)");
  }
  if (!o.map.empty()) {
    std::string text = o.map;
    if (text[0] == '@') {
      std::ifstream in(text.substr(1));
      if (!in) return fail("cannot read the --map file '" + text.substr(1) + "'");
      std::stringstream buf;
      buf << in.rdbuf();
      text = buf.str();
      std::replace(text.begin(), text.end(), '\n', ',');
    }
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t\r"));
      item.erase(item.find_last_not_of(" \t\r") + 1);
      if (item.empty()) continue;
      char* end = nullptr;
      unsigned long h = std::strtoul(item.c_str(), &end, 10);
      if (*end || item[0] == '-') return fail("bad --map entry '" + item + "' (host numbers, one per rank)");
      so.map.push_back(static_cast<uint32_t>(h));
    }
  }
  so.top = o.top;
  return 0;
}

namespace {

int parse_algo(const SimOpts& o, PointPlan& plan) {
  std::string err;
  if (!o.algo.empty() && !parse_algo_choice(o.algo, plan.algo, err)) return fail(err);
  return 0;
}

}  // namespace

int plan_points(const SimOpts& o, PointPlan& plan) {
  std::string err;
  std::vector<uint64_t> ns;
  if (!parse_geometric(o.ranks, false, ns, err)) return fail("bad -n '" + o.ranks + "': " + err);
  for (uint64_t n : ns)
    if (n == 0 || n > 0xfffffffeULL) return fail("bad -n '" + o.ranks + "': rank counts go from 1 to 4294967294");
  for (const auto& kv : o.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) return fail("--set needs NAME=VALUE, got '" + kv + "'");
    plan.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  std::vector<uint64_t> values;
  if (!o.sweep.empty()) {
    auto eq = o.sweep.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--sweep needs NAME=RANGE, e.g. size=1KiB..1GiB, got '" + o.sweep + "'");
    plan.param = o.sweep.substr(0, eq);
    if (!parse_geometric(o.sweep.substr(eq + 1), true, values, err)) return fail("bad --sweep '" + o.sweep + "': " + err);
  }
  if (o.max_memory.empty()) plan.max_memory = default_memory_limit();
  else if (!parse_size(o.max_memory, plan.max_memory)) return fail("bad --max-memory '" + o.max_memory + "'");
  // Every target must resolve before anything runs.
  for (const auto& t : o.targets) {
    std::stringstream ss(t);
    std::string one;
    while (std::getline(ss, one, ',')) {
      if (one.empty()) continue;
      Session s;
      Target tt = open_target(s, one);
      if (s.diags.has_errors() || !tt.opened()) {
        s.diags.print(std::cerr, s.sources);
        return 2;
      }
      plan.targets.push_back(one);
      plan.names.push_back(tt.name());
    }
  }
  if (plan.targets.empty()) return fail("sim needs a schedule (a file, FILE:SCHEDULE or a library name)");
  for (size_t t = 0; t < plan.targets.size(); ++t)
    for (uint64_t n : ns) {
      if (values.empty()) plan.points.push_back({t, static_cast<uint32_t>(n), 0, false});
      else
        for (uint64_t v : values) plan.points.push_back({t, static_cast<uint32_t>(n), v, true});
    }
  return 0;
}

PointResult run_point(const SimOpts& o, const PointPlan& plan, size_t index) {
  const Point& pt = plan.points[index];
  sim::PointSpec spec;
  spec.target = plan.targets[pt.target];
  spec.n = pt.n;
  spec.sets = plan.sets;
  if (pt.has_value) spec.sets.emplace_back(plan.param, std::to_string(pt.value));
  spec.max_memory = plan.max_memory;
  spec.algo = plan.algo;
  spec.platform = o.platform;
  spec.options = plan.sim;
  spec.quiet = o.quiet;
  if (!o.trace.empty()) {
    // One file per point when there are several: NAME.SCHEDULE.nN[.VALUE].json
    spec.trace_file = o.trace;
    if (plan.points.size() > 1) {
      auto dot = o.trace.rfind('.');
      std::string stem = dot == std::string::npos ? o.trace : o.trace.substr(0, dot);
      std::string ext = dot == std::string::npos ? ".json" : o.trace.substr(dot);
      // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "." + std::to_string(…).
      spec.trace_file = stem;
      spec.trace_file.append(".").append(plan.names[pt.target]).append(".n").append(std::to_string(pt.n));
      if (pt.has_value) spec.trace_file.append(".").append(std::to_string(pt.value));
      spec.trace_file.append(ext);
    }
  }
  PointResult r = sim::run_point(spec);
  r.param = pt.has_value ? plan.param : "";
  r.param_value = pt.value;
  return r;
}

int cmd_sim(const SimOpts& o) {
  PointPlan plan;
  if (int rc = plan_points(o, plan)) return rc;
  if (int rc = sim_options(o, plan.sim)) return rc;
  if (int rc = parse_algo(o, plan)) return rc;
  std::vector<PointResult> results(plan.points.size());
  bool root = true;
  int rc = run_points_distributed(o, plan, results, root);
  if (!root) return rc;
  return std::max(rc, report_points(o, plan, results));
}

}  // namespace sg::cli

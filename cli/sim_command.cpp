// `stepgraph sim`: simulate points — schedules × rank counts × values of one swept parameter —
// and report them as text, JSON, CSV, a gnuplot plot and Chrome traces. Under mpiexec the points
// are split over the processes and rank 0 prints the merged result (cli/sim_mpi.cpp).
#include "cli/sim_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "api/api.hpp"
#include "cli/shared.hpp"
#include "core/base/format.hpp"
#include "core/base/input_file.hpp"
#include "core/base/sizes.hpp"
#include "core/base/units.hpp"
#include "core/pipeline.hpp"
#include "sim/sim.hpp"

namespace sg::cli {

namespace {

using Clock = std::chrono::steady_clock;

// The time options' bounds, as the platform's (docs/sim.md, "Numbers in range"): past them a
// schedule's sizes overflow the simulated time, and SimGrid aborts on the amounts.
constexpr double kMaxOptionSeconds = 3600;  // --message-latency, --loggp o, g, L
constexpr double kMaxOptionPerByte = 1;     // --gamma, --loggp O, G: seconds per byte

}  // namespace

int sim_options(const SimOpts& o, const sim::PlatformChoice& platform, sim::SimOptions& so) {
  if (o.model == "simgrid") so.model = sim::Model::SimGrid;
  else if (o.model == "analytic") so.model = sim::Model::Analytic;
  else return fail("--model is simgrid or analytic, got '" + o.model + "'");
  if (o.protocol == "eager") so.runtime.protocol = sim::Protocol::Eager;
  else if (o.protocol == "rendezvous") so.runtime.protocol = sim::Protocol::Rendezvous;
  else if (o.protocol == "auto") so.runtime.protocol = sim::Protocol::Auto;
  else return fail("--protocol is eager, rendezvous or auto, got '" + o.protocol + "'");
  if (!parse_size(o.eager_limit, so.runtime.eager_limit)) return fail("bad --eager-limit '" + o.eager_limit + "'");
  so.runtime.window = o.window;
  so.symmetry = !o.no_symmetry;
  if (o.collectives != "expand" && o.collectives != "memo") return fail("--collectives is expand or memo, got '" + o.collectives + "'");
  if (o.collectives == "memo" && so.model == sim::Model::SimGrid)
    return fail("--collectives memo runs on the analytic engine: add --model analytic (SimGrid simulates the collectives expanded)");
  if (!parse_size(o.envelope, so.runtime.envelope)) return fail("bad --envelope '" + o.envelope + "'");
  if (!o.message_latency.empty()) {
    std::string why;
    if (!parse_seconds(o.message_latency, so.runtime.message_latency, why) || so.runtime.message_latency < 0 ||
        so.runtime.message_latency > kMaxOptionSeconds)
      return fail("bad --message-latency '" + o.message_latency + "' (a time up to 1 hour, e.g. 2.8us)");
    so.runtime.message_latency_given = true;
  }
  // A platform file from `stepgraph calibrate` carries the measured reduction speed as a
  // `# gamma=…` line: used unless --gamma says otherwise (sim and exec --predict alike).
  std::string gamma = o.gamma.empty() ? platform.gamma : o.gamma;
  std::string why;
  if (!gamma.empty() && (!parse_seconds(gamma, so.runtime.gamma, why) || so.runtime.gamma > kMaxOptionPerByte))
    return fail("bad --gamma '" + gamma + "' (seconds per reduced byte up to 1s, e.g. 0.1ns)");
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
      bool per_byte = k == "O" || k == "G";
      if (!dst || !parse_seconds(v, *dst, why) || *dst > (per_byte ? kMaxOptionPerByte : kMaxOptionSeconds))
        return fail("bad --loggp item '" + kv +
                    "' (o=TIME, g=TIME, O=TIME per byte, L=TIME, G=TIME per byte; times up to 1 hour, per byte up to 1s; e.g. "
                    "o=1.5us,g=1us,L=2.5us,G=6ps)");
    }
    so.loggp.enabled = true;
    if (so.model != sim::Model::Analytic) return fail("--loggp applies to --model analytic (SimGrid models the network itself)");
  }
  if (!o.map.empty()) {
    std::string text = o.map;
    if (text[0] == '@') {
      InputFile in = read_input_file(o.map.substr(1));
      if (!in.ok) return fail("--map: " + in.error);
      text = std::move(in.text);
      std::replace(text.begin(), text.end(), '\n', ',');
    }
    std::stringstream ss(text);
    std::string item;
    std::unordered_map<uint32_t, size_t> rank_on;  // host -> the rank on it (a linear scan is N^2)
    while (std::getline(ss, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t\r"));
      item.erase(item.find_last_not_of(" \t\r") + 1);
      if (item.empty()) continue;
      char* end = nullptr;
      errno = 0;
      unsigned long long h = std::strtoull(item.c_str(), &end, 10);
      if (*end || item[0] == '-' || !std::isdigit(static_cast<unsigned char>(item[0])))
        return fail("bad --map entry '" + item + "' (host numbers, one per rank)");
      if (errno == ERANGE || h >= UINT32_MAX) return fail("bad --map entry '" + item + "': no platform has that many hosts");
      // One rank per host: a host is one endpoint (a node's GPUs are hosts of their own, see
      // the nodes platform), and two ranks on one would share its link without being told.
      auto [first, fresh] = rank_on.emplace(static_cast<uint32_t>(h), so.map.size());
      if (!fresh)
        return fail("--map puts ranks " + std::to_string(first->second) + " and " + std::to_string(so.map.size()) + " both on host " +
                    item + ": one rank per host");
      so.map.push_back(static_cast<uint32_t>(h));
    }
  }
  so.top = o.top;
  return 0;
}

int parse_algo(const SimOpts& o, PointPlan& plan) {
  if (Diagnostics diags; !o.algo.empty() && !parse_algo_choice(o.algo, plan.algo, diags)) return fail(diags.messages());
  // NCCL_ALGO and NCCL_PROTO, read as NCCL reads them (core/graph/nccl_tuning.hpp), for NCCL's
  // choice on a GPU platform; a value NCCL would refuse is refused here, at its token.
  for (const char* var : {"NCCL_ALGO", "NCCL_PROTO"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    size_t at = 0;
    Diagnostics diags;
    if (!parse_nccl_list(v, std::string(var) == "NCCL_PROTO", plan.algo.nccl_enables, diags, at)) {
      Session ses;  // (the variable's value as a source, for the caret under the token at fault)
      diags.locate_from(0, Loc{ses.sources.add(var, v), 1, static_cast<uint32_t>(at + 1)});
      std::cerr << diags.render(ses.sources);
      return 2;
    }
  }
  return 0;
}

int plan_points(const SimOpts& o, PointPlan& plan) {
  Diagnostics diags;
  // -n as every command reads it: a..b is every count, a..b:x2 doubles (cli/shared.cpp).
  std::vector<uint32_t> ns;
  if (!o.ranks.empty() && !parse_rank_list(o.ranks, ns, diags)) return fail("bad -n '" + o.ranks + "': " + diags.messages());
  // --set NAME=VALUE for every target that declares NAME; TARGET:NAME=VALUE for one target (its
  // schedule's name or the target as written).
  struct Set {
    std::string target, key, value;
  };
  std::vector<Set> sets;
  if (std::string twice = repeated_set(o.sets); !twice.empty()) return fail(twice);
  for (const auto& kv : o.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
      return fail("--set needs NAME=VALUE or TARGET:NAME=VALUE, got '" + kv + "'");
    std::string key = kv.substr(0, eq), target;
    if (auto colon = key.rfind(':'); colon != std::string::npos) target = key.substr(0, colon), key = key.substr(colon + 1);
    if (key.empty() || (target.empty() && kv.find(':') < eq)) return fail("--set needs NAME=VALUE or TARGET:NAME=VALUE, got '" + kv + "'");
    sets.push_back({target, key, kv.substr(eq + 1)});
  }
  std::vector<uint64_t> values;
  if (!o.sweep.empty()) {
    auto eq = o.sweep.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--sweep needs NAME=RANGE, e.g. size=1KiB..1GiB, got '" + o.sweep + "'");
    plan.param = o.sweep.substr(0, eq);
    if (!parse_geometric(o.sweep.substr(eq + 1), true, values, diags)) return fail("bad --sweep '" + o.sweep + "': " + diags.messages());
  }
  if (!parse_memory_limit(o.max_memory, plan.max_memory, diags)) return fail(diags.messages());
  // Every target must resolve before anything runs.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Target> opened;
  for (const auto& t : o.targets) {
    std::stringstream ss(t);
    std::string one;
    while (std::getline(ss, one, ',')) {
      if (one.empty()) continue;
      auto s = std::make_unique<Session>();
      Target tt = open_target(*s, one);
      if (s->diags.has_errors() || !tt.opened()) {
        s->diags.print(std::cerr, s->sources);
        return 2;
      }
      plan.targets.push_back(one);
      plan.names.push_back(tt.name());
      opened.push_back(tt);
      sessions.push_back(std::move(s));
    }
  }
  if (plan.targets.empty()) return fail("sim needs a schedule (a file, FILE:SCHEDULE or a library name)");
  // Each target's own values. With several targets a key one of them does not take is left out
  // for it, with a note (one target: the key goes through, and elaboration says it is unknown).
  for (const Set& x : sets)
    if (!x.target.empty() && std::none_of(plan.targets.begin(), plan.targets.end(), [&](const std::string& t) { return t == x.target; }) &&
        std::none_of(plan.names.begin(), plan.names.end(), [&](const std::string& t) { return t == x.target; }))
      return fail("--set " + x.target + ":" + x.key + "=" + x.value + ": '" + x.target + "' is not one of the targets");
  bool several = plan.targets.size() > 1;
  plan.target_sets.resize(plan.targets.size());
  plan.sweeps.assign(plan.targets.size(), true);
  for (size_t t = 0; t < plan.targets.size(); ++t) {
    for (const Set& x : sets) {
      if (!x.target.empty() && x.target != plan.targets[t] && x.target != plan.names[t]) continue;
      if (several && x.target.empty() && !opened[t].declares(x.key)) {
        std::cerr << "stepgraph: note: --set " << x.key << "=" << x.value << " left out for " << plan.names[t]
                  << ", which has no parameter " << x.key << "\n";
        continue;
      }
      plan.target_sets[t].emplace_back(x.key, x.value);
    }
    if (several && !plan.param.empty() && !opened[t].declares(plan.param)) {
      std::cerr << "stepgraph: note: --sweep " << plan.param << " left out for " << plan.names[t] << ", which has no parameter "
                << plan.param << "\n";
      plan.sweeps[t] = false;
    }
  }
  // Without -n, each target runs at the one count it is written for (an MSCCL XML's ngpus), and
  // a target that runs at any count at the count the others are written for, if they agree.
  std::set<uint32_t> fixed;
  for (const Target& t : opened)
    if (t.fixed_ranks) fixed.insert(t.fixed_ranks);
  for (size_t t = 0; t < plan.targets.size(); ++t)
    if (o.ranks.empty() && opened[t].fixed_ranks == 0 && fixed.size() != 1)
      return fail("--ranks (-n) is required (" + plan.targets[t] + " runs at any rank count)");
  for (size_t t = 0; t < plan.targets.size(); ++t)
    for (uint64_t n : !o.ranks.empty()            ? ns
                      : opened[t].fixed_ranks > 0 ? std::vector<uint32_t>{opened[t].fixed_ranks}
                                                  : std::vector<uint32_t>{*fixed.begin()}) {
      if (values.empty()) plan.points.push_back({t, static_cast<uint32_t>(n), 0, false});
      else
        for (uint64_t v : values) plan.points.push_back({t, static_cast<uint32_t>(n), v, true});
    }
  // The platform, read once for every point (sized for each N when it runs).
  try {
    plan.platform = api::read_platform(o.platform);
  } catch (const api::BadInput& e) {
    return fail(e);
  }
  return 0;
}

PointResult run_point(const SimOpts& o, const PointPlan& plan, size_t index) {
  const SweepPoint& pt = plan.points[index];
  sim::PointSpec spec;
  spec.target = plan.targets[pt.target];
  spec.n = pt.n;
  spec.sets = plan.target_sets[pt.target];
  if (pt.has_value && plan.sweeps[pt.target]) spec.sets.emplace_back(plan.param, std::to_string(pt.value));
  spec.max_memory = plan.max_memory;
  spec.algo = plan.algo;
  spec.platform = plan.platform;
  spec.options = plan.sim;
  spec.quiet = o.quiet;
  spec.memo = o.collectives == "memo";
  spec.engine_defaulted = o.engine_defaulted && o.loggp.empty();
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
  // The check before the run (api/precheck.hpp), once per target, N and parameters.
  PointResult r = api::sim_point(spec, o.allow_defects, plan.names[pt.target]);
  r.param = pt.has_value ? plan.param : "";
  r.param_value = pt.value;
  return r;
}

int plan_sim(const SimOpts& o, PointPlan& plan) {
  if (int rc = plan_points(o, plan)) return rc;
  if (int rc = sim_options(o, plan.platform, plan.sim)) return rc;
  return parse_algo(o, plan);
}

int cmd_sim(const SimOpts& o) {
  if (!o.nccl_tests.empty()) return cmd_sim_nccl_tests(o);
  if (o.targets.empty()) return fail("sim needs a TARGET (a schedule file or a library name), or --nccl-tests FILE");
  PointPlan plan;
  if (int rc = plan_sim(o, plan)) return rc;
  std::vector<PointResult> results(plan.points.size());
  bool root = true;
  int rc = run_points_distributed(o, plan, results, root);
  if (!root) return rc;
  return std::max(rc, report_points(o, plan, results));
}

}  // namespace sg::cli

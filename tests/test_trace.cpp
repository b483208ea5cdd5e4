// The Chrome trace of a simulation (core/io/trace.cpp, sim/link_intervals.cpp) as a viewer reads
// it: on every thread track the complete slices nest, every flow has one start and one end (the
// start first), every async begin its end, counters are never negative and every time is finite.
// For the whole library at N = 8 with the analytic engine, one run with SimGrid, and the link
// tracks' cap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/dsl/library.hpp"
#include "core/io/trace.hpp"
#include "core/pipeline.hpp"
#include "sim/link_intervals.hpp"
#include "sim/sim.hpp"

using namespace sg;
using namespace sg::sim;
using nlohmann::json;

namespace {

// What a viewer needs of a trace; problems say what it would draw wrongly or drop.
struct Checked {
  std::vector<std::string> problems;
  size_t slices = 0, async = 0, flows = 0, counters = 0;
  std::map<std::string, double> async_us;  // "name:step" -> duration in µs
  std::set<uint64_t> steps;                // the steps that have a slice
};

Checked check_trace(const json& j) {
  Checked c;
  constexpr double kEps = 1e-6;  // µs; times are whole nanoseconds
  auto problem = [&](const std::string& what, const json& e) {
    if (c.problems.size() < 10) c.problems.push_back(what + ": " + e.dump());
  };
  struct Span {
    double t0, t1;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> tracks;
  struct Flow {
    int outs = 0, ins = 0;
    double out_ts = 0, in_ts = 0;
  };
  std::map<uint64_t, Flow> flows;
  std::map<std::tuple<int64_t, std::string, uint64_t>, std::pair<int, double>> open;  // (pid, cat, id) -> (begins - ends, begin ts)
  for (const json& e : j.at("traceEvents")) {
    std::string ph = e.at("ph");
    if (ph == "M") continue;
    double ts = e.at("ts");
    if (!std::isfinite(ts) || ts < 0) problem("bad ts", e);
    if (ph == "X") {
      double dur = e.at("dur");
      if (!std::isfinite(dur) || dur < 0) problem("bad dur", e);
      tracks[{e.at("pid"), e.at("tid")}].push_back({ts, ts + dur});
      ++c.slices;
      c.steps.insert(e.at("args").at("step").get<uint64_t>());
    } else if (ph == "b" || ph == "e") {
      auto& o = open[{e.at("pid"), e.at("cat"), e.at("id")}];
      if (ph == "b") {
        if (o.first != 0) problem("async id begun twice", e);
        ++o.first;
        o.second = ts;
        ++c.async;
        c.steps.insert(e.at("args").at("step").get<uint64_t>());
      } else {
        if (o.first != 1 || ts < o.second - kEps) problem("async end without its begin", e);
        --o.first;
        c.async_us[e.at("name").get<std::string>() + ":" + std::to_string(e.at("id").get<uint64_t>())] = ts - o.second;
      }
    } else if (ph == "C") {
      ++c.counters;
      for (const auto& [k, v] : e.at("args").items())
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) problem("bad counter", e);
    } else if (ph != "i") {
      problem("unexpected phase", e);
    }
    if (e.contains("bind_id")) {
      Flow& f = flows[e.at("bind_id")];
      if (e.value("flow_out", false)) ++f.outs, f.out_ts = ts;
      if (e.value("flow_in", false)) ++f.ins, f.in_ts = ts;
    }
  }
  for (const auto& [k, o] : open)
    if (o.first != 0) problem("async begin without its end", json{{"id", std::get<2>(k)}});
  for (const auto& [id, f] : flows) {
    if (f.outs != 1 || f.ins != 1) problem("flow without one start and one end", json{{"id", id}});
    else if (f.in_ts < f.out_ts - kEps) problem("flow ends before it starts", json{{"id", id}});
  }
  c.flows = flows.size();
  // Sorted by start, the longer first: a slice that starts inside the open one must end inside it.
  for (auto& [key, spans] : tracks) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.t0 < b.t0 || (a.t0 == b.t0 && a.t1 > b.t1); });
    std::vector<Span> stack;
    for (const Span& s : spans) {
      while (!stack.empty() && stack.back().t1 <= s.t0 + kEps) stack.pop_back();
      if (!stack.empty() && s.t1 > stack.back().t1 + kEps)
        problem("slices overlap without nesting",
                json{{"pid", key.first}, {"tid", key.second}, {"outer", {stack.back().t0, stack.back().t1}}, {"inner", {s.t0, s.t1}}});
      stack.push_back(s);
    }
  }
  return c;
}

std::string problems(const Checked& c) {
  std::string out;
  for (const std::string& p : c.problems) out += p + "\n";
  return out;
}

struct Run {
  Session s;
  std::unique_ptr<StepGraph> g;
  Platform p;
  SimOptions o;
  SimResult r;
  bool unsupported = false;
};

// The pipeline as `stepgraph sim` runs it: collectives expanded for cost, the default platform.
std::unique_ptr<Run> simulate_target(const std::string& target, uint32_t n, Model m, const std::string& spec = default_platform_spec()) {
  auto run = std::make_unique<Run>();
  Target t = open_target(run->s, target);
  REQUIRE(t.opened());
  BuildOptions bo;
  bo.elab.nranks = n;
  bo.expand = Expansion::ForCost;
  Built b = build(run->s, t, bo);
  if (b.unsupported) {
    run->unsupported = true;
    return run;
  }
  INFO(run->s.diags.render(run->s.sources));
  REQUIRE(b.ok());
  run->g = std::move(b.graph);
  sg::SourceManager sm;
  sg::Diagnostics diags;
  REQUIRE(parse_platform(spec, n, run->p, sm, diags));
  run->o.model = m;
  run->o.trace = true;
  run->r = simulate(*run->g, run->p, run->o);
  INFO(run->r.error);
  REQUIRE(run->r.error.empty());
  return run;
}

json trace_of(const Run& run, size_t max_crossings = kMaxLinkCrossings) {
  std::ostringstream os;
  write_chrome_trace(os, *run.g, run.s.sources, trace_run(*run.g, run.p, run.o, run.r, max_crossings));
  return json::parse(os.str());
}

uint64_t links_with_counters(const json& j) {
  std::set<std::string> names;
  for (const json& e : j.at("traceEvents"))
    if (e.at("ph") == "C") names.insert(e.at("name"));
  return names.size();
}

}  // namespace

TEST_CASE("the trace of every library schedule at N = 8 renders: slices nest, flows and async slices pair up", "[trace]") {
  int traced = 0;
  for (const LibraryEntry& e : library()) {
    INFO(e.name);
    auto run = simulate_target(e.name, 8, Model::Analytic);
    if (run->unsupported) continue;
    ++traced;
    json j = trace_of(*run);
    Checked c = check_trace(j);
    INFO(problems(c));
    CHECK(c.problems.empty());
    CHECK(j.at("otherData").at("links") == "every message");
    // Every step that ran has a slice; every message an arrow and its links a counter.
    uint64_t ran = 0;
    for (StepId s = 0; s < run->g->size(); ++s) ran += std::isfinite(run->r.starts[s]) ? 1 : 0;
    CHECK(c.steps.size() == ran);
    if (run->r.completed) CHECK(c.flows == run->r.messages);
    if (run->r.messages > 0) CHECK(links_with_counters(j) > 0);
  }
  CHECK(traced >= 20);
}

TEST_CASE("a send's slice lasts until its data arrived, and the links carry its bytes", "[trace]") {
  // ring_allreduce at N = 4 on the default star: every message is 16 MiB, alone on its links,
  // and takes 1 µs + 16 MiB / 12.5 GB/s.
  auto run = simulate_target("ring_allreduce", 4, Model::Analytic);
  json j = trace_of(*run);
  Checked c = check_trace(j);
  CHECK(c.problems.empty());
  CHECK(c.flows == 24);  // 2 (N - 1) N messages
  const double expect_us = 1 + 16777216 / 12.5e9 * 1e6;
  int sends = 0;
  for (const auto& [key, us] : c.async_us) {
    if (key.rfind("sends in flight:", 0) != 0) continue;
    ++sends;
    CHECK(std::fabs(us - expect_us) < 1e-3);
  }
  CHECK(sends == 24);
  // Four processes of ranks, a links process; each host's up and down link at most 16 MiB in flight.
  std::set<int64_t> pids;
  for (const json& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") pids.insert(e.at("pid").get<int64_t>());
    if (e.at("ph") == "C") CHECK(e.at("args").at("bytes in flight").get<uint64_t>() <= 16777216);
  }
  CHECK(pids.size() == 5);
  CHECK(links_with_counters(j) == 8);
}

TEST_CASE("over the cap, the link tracks stop at a time and the trace says so", "[trace]") {
  auto run = simulate_target("ring_allreduce", 4, Model::Analytic);
  std::string note;
  std::vector<TraceLink> all =
      link_intervals(*run->g, run->p, run->o.map, run->r.transfer_starts, run->r.arrivals, kMaxLinkCrossings, note);
  CHECK(note.empty());
  size_t crossings = 0;
  for (const TraceLink& l : all) crossings += l.uses.size();
  CHECK(crossings == 48);  // 24 messages, each up one host link and down another
  std::vector<TraceLink> some = link_intervals(*run->g, run->p, run->o.map, run->r.transfer_starts, run->r.arrivals, 10, note);
  CHECK(note.find("capped at 10 link crossings") != std::string::npos);
  size_t kept = 0;
  for (const TraceLink& l : some) kept += l.uses.size();
  CHECK(kept > 0);
  CHECK(kept <= 10);
  json j = trace_of(*run, 10);
  CHECK(check_trace(j).problems.empty());
  CHECK(j.at("otherData").at("links").get<std::string>().find("capped") != std::string::npos);
  bool said = false;
  for (const json& e : j.at("traceEvents"))
    if (e.at("ph") == "i" && e.at("name").get<std::string>().find("capped") != std::string::npos) said = true;
  CHECK(said);
}

#ifdef STEPGRAPH_HAVE_SIMGRID
TEST_CASE("a SimGrid run's trace renders too, with its link tracks", "[trace][simgrid]") {
  for (const char* target : {"ring_allreduce", "zigzag_ring_attention"}) {
    INFO(target);
    auto run = simulate_target(target, 8, Model::SimGrid);
    REQUIRE_FALSE(run->unsupported);
    json j = trace_of(*run);
    Checked c = check_trace(j);
    INFO(problems(c));
    CHECK(c.problems.empty());
    CHECK(c.flows == run->r.messages);
    CHECK(links_with_counters(j) > 0);
  }
}
#endif

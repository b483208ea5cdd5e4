// `stepgraph compile`: build one instance and print its step graph (text, JSON, DOT, stats,
// LogGOPSim's GOAL, or the stream order), optionally with collectives expanded.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "core/graph/stream_order.hpp"
#include "core/interp/bus_bandwidth.hpp"
#include "core/io/output_file.hpp"
#include "core/io/writers.hpp"
#include "core/msccl/export.hpp"
#include "core/pipeline.hpp"

namespace sg::cli {

namespace {

// One line per kind of expansion on stderr (stdout is the graph's): which algorithm replaced
// which collectives, and why.
void print_expansion(const ExpandReport& rep) {
  std::map<std::string, uint64_t> lines;  // ordered: the same input prints the same lines
  for (const ExpandedInstance& e : rep.instances) ++lines["expand: " + expansion_line(e)];
  for (const auto& [l, n] : lines) std::cerr << l << (n > 1 ? "; " + std::to_string(n) + " instances" : "") << "\n";
}

}  // namespace

int cmd_compile(const CompileOpts& o) {
  AlgoChoice choice;
  if (Diagnostics diags; !o.algo.empty() && !parse_algo_choice(o.algo, choice, diags)) return fail(diags.messages());
  bool expand = o.expand || !o.algo.empty();
  if (expand && o.rank >= 0) return fail("--expand needs the whole graph: it cannot be combined with --rank");
  Prepared p;
  if (int rc = prepare(o.c, p, false)) return rc;
  p.opts.only_rank = o.format == "stream" ? -1 : o.rank;  // the stream order needs every rank's program
  if (o.format == "goal" && o.rank >= 0)
    return fail("--format goal needs every rank's program: LogGOPSim simulates them all (drop --rank)");
  if (o.format == "msccl" && o.rank >= 0) return fail("--format msccl needs every rank's program: the file holds every gpu (drop --rank)");
  if (o.rank >= 0 && o.rank >= static_cast<int64_t>(p.ns[0]))
    return fail("--rank " + std::to_string(o.rank) + " is out of range for -n " + std::to_string(p.ns[0]));
  auto t0 = std::chrono::steady_clock::now();
  BuildOptions bo = build_options(o.c, p, p.ns[0], std::cout, false);
  bo.expand = expand ? Expansion::Always : Expansion::None;
  bo.algo = choice;
  Built b = build(p.s, p.t, bo);
  if (!b.ok()) {
    // On stderr: stdout is the graph's (it may be redirected into a file or a pipe).
    if (b.unsupported) std::cerr << "compile " << p.t.name() << " N = " << p.ns[0] << ": unsupported (" << b.unsupported_reason << ")\n";
    p.s.diags.print(std::cerr, p.s.sources);
    return 2;
  }
  std::unique_ptr<StepGraph>& g = b.graph;
  if (expand) print_expansion(b.expansion);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  GoalPlan goal;
  std::string stream_text;
  for (uint32_t r = 0; o.format == "stream" && r < g->nranks; ++r) {
    if (o.rank >= 0 && r != static_cast<uint32_t>(o.rank)) continue;
    StreamOrder so;
    if (!stream_order(*g, r, so, p.s.diags)) {
      p.s.diags.print(std::cerr, p.s.sources);
      return 2;
    }
    stream_text += stream_order_text(*g, r, so);
  }
  if (o.format == "goal" && !plan_goal(*g, goal, p.s.diags)) {
    p.s.diags.print(std::cerr, p.s.sources);  // the warnings too
    return 2;
  }
  std::ostringstream msccl_text;
  if (o.format == "msccl") {
    msccl::ExportOptions eo;
    eo.proto = o.proto;
    ExpectKind kind;
    std::string params;
    for (const auto& [k, v] : g->params) params += ", " + k + " = " + std::to_string(v);
    eo.comment = "exported by stepgraph " + std::string(STEPGRAPH_VERSION) + " from " + o.c.target +
                 " at N = " + std::to_string(g->nranks) + params + "; its collective's size is " + std::to_string(expected_size(*g, kind)) +
                 " bytes (set size to that to run it as exported)";
    if (!msccl::write_msccl(msccl_text, *g, eo, p.s.diags)) {
      p.s.diags.print(std::cerr, p.s.sources);
      return 2;
    }
  }
  print_warnings(p.s);
  OutputFile file;
  Diagnostics file_diags;
  std::ostream* os = &std::cout;
  if (!o.output.empty()) {
    if (!file.open(o.output, file_diags)) return fail(file_diags.messages());
    os = &file.stream();
  }
  if (o.format == "stream") *os << stream_text;
  else if (o.format == "msccl") *os << msccl_text.str();
  else if (o.format == "text") write_text(*os, *g, p.s.sources, o.max_steps);
  else if (o.format == "json") write_json(*os, *g, p.s.sources);
  else if (o.format == "dot") write_dot(*os, *g, p.s.sources);
  else if (o.format == "goal") write_goal(*os, *g, goal, o.goal);
  else {
    GraphStats st = compute_stats(*g);
    write_stats(*os, *g, st);
    if (o.timing) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f s", secs);
      *os << "build time    " << buf << "\n";
    }
  }
  if (!o.output.empty() && !file.close(file_diags)) return fail(file_diags.messages());  // standard output: main checks it
  return 0;
}

}  // namespace sg::cli

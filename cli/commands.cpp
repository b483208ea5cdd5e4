#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "cli/sim_command.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/dsl/library.hpp"
#include "core/dsl/printer.hpp"
#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/expand_collectives.hpp"
#include "core/graph/passes.hpp"
#include "core/graph/stream_order.hpp"
#include "core/interp/check.hpp"
#include "core/io/writers.hpp"
#include "verify/verify.hpp"

namespace sg::cli {

namespace {

std::string one_line_description(const std::string& header, const std::string& name) {
  std::istringstream in(header);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    // "name — what it does" or "name.sched — what it does"
    for (const char* sep : {" — ", " - ", ": "}) {
      auto k = line.find(sep);
      if (k != std::string::npos && line.compare(0, name.size(), name) == 0) return line.substr(k + std::string(sep).size());
    }
    return line;
  }
  return "";
}

}  // namespace

// 80% of MemAvailable: the default refusal bound for instances too big to build.
uint64_t default_memory_limit() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024 / 10 * 8;
  return uint64_t{8} << 30;
}

bool parse_size(const std::string& s, uint64_t& out) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(s[i] - '0'), &v)) return false;
    ++i;
  }
  if (i == 0) return false;
  std::string suf = s.substr(i);
  struct S {
    const char* n;
    uint64_t m;
  };
  static const S sufs[] = {{"", 1},         {"B", 1},          {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
                           {"TiB", 1ull << 40}, {"K", 1000},     {"M", 1000000},       {"G", 1000000000},   {"T", 1000000000000ull},
                           {"KB", 1000},    {"MB", 1000000},   {"GB", 1000000000}};
  for (const auto& x : sufs)
    if (suf == x.n) return !__builtin_mul_overflow(v, x.m, &out);
  return false;
}

bool parse_rank_list(const std::string& s, std::vector<uint32_t>& out, std::string& err) {
  out.clear();
  if (s.empty()) return err = "empty", false;
  std::stringstream ss(s);
  std::string part;
  auto num = [&](const std::string& t, uint32_t& v) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos) {
      err = "'" + t + "' is not a rank count";
      return false;
    }
    v = static_cast<uint32_t>(std::stoul(t));
    if (v < 1) {
      err = "the number of ranks must be at least 1";
      return false;
    }
    return true;
  };
  while (std::getline(ss, part, ',')) {
    auto dots = part.find("..");
    if (dots == std::string::npos) {
      uint32_t v;
      if (!num(part, v)) return false;
      out.push_back(v);
    } else {
      uint32_t a, b;
      if (!num(part.substr(0, dots), a) || !num(part.substr(dots + 2), b)) return false;
      if (a > b) return err = "empty range " + part, false;
      if (b - a > 100000) return err = "range " + part + " is too long", false;
      for (uint32_t v = a; v <= b; ++v) out.push_back(v);
    }
  }
  if (out.empty()) return err = "no rank count", false;
  return true;
}

int cmd_list(bool json) {
  nlohmann::json arr = nlohmann::json::array();
  size_t width = 0;
  for (const auto& e : library()) width = std::max(width, e.name.size());
  for (const auto& e : library()) {
    Session s;
    const Program* p = s.load_library(e.name);
    std::string desc = p ? one_line_description(p->header, e.name) : "";
    if (json) {
      arr.push_back({{"name", e.name}, {"path", e.path}, {"description", desc}});
    } else {
      std::cout << e.name << std::string(width + 2 - e.name.size(), ' ') << desc << "\n";
    }
  }
  if (json) std::cout << arr.dump(2) << "\n";
  return 0;
}

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
  std::string err;
  if (!o.algo.empty() && !parse_algo_choice(o.algo, choice, err)) return fail(err);
  bool expand = o.expand || !o.algo.empty();
  if (expand && o.rank >= 0) return fail("--expand needs the whole graph: it cannot be combined with --rank");
  Prepared p;
  if (int rc = prepare(o.c, p, false)) return rc;
  p.opts.nranks = p.ns[0];
  p.opts.only_rank = o.format == "stream" ? -1 : o.rank;  // the stream order needs every rank's program
  if (o.format == "goal" && o.rank >= 0) return fail("--format goal needs every rank's program: LogGOPSim simulates them all (drop --rank)");
  if (o.rank >= 0 && o.rank >= static_cast<int64_t>(p.ns[0]))
    return fail("--rank " + std::to_string(o.rank) + " is out of range for -n " + std::to_string(p.ns[0]));
  auto t0 = std::chrono::steady_clock::now();
  auto g = elaborate(p.s, p.t, p.opts);
  if (!g) {
    // On stderr: stdout is the graph's (it may be redirected into a file or a pipe).
    if (const Diagnostic* why = p.s.diags.unsupported_since(0))
      std::cerr << "compile " << p.t.schedule->name << " N = " << p.ns[0] << ": unsupported (" << unsupported_reason(*why)
                << ")\n";
    p.s.diags.print(std::cerr, p.s.sources);
    return 2;
  }
  auto dump = [&](const std::string& pass) {
    std::cout << "=== after " << pass << " ===\n";
    write_text(std::cout, *g, p.s.sources);
  };
  if (!run_passes(*g, p.s.diags, o.c.dump_after, dump)) {
    p.s.diags.print(std::cerr, p.s.sources);
    return 2;
  }
  if (expand) {
    ExpandReport rep;
    auto eg = expand_collectives(*g, p.s, choice, p.s.diags, &rep, p.opts.max_memory);
    if (!eg) {
      p.s.diags.print(std::cerr, p.s.sources);
      return 2;
    }
    g = std::move(eg);
    print_expansion(rep);
  }
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
  print_warnings(p.s);
  std::ofstream file;
  std::ostream* os = &std::cout;
  if (!o.output.empty()) {
    file.open(o.output);
    if (!file) return fail("cannot write '" + o.output + "'");
    os = &file;
  }
  if (o.format == "stream") *os << stream_text;
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
  return 0;
}

int cmd_check(const CheckOpts& o) {
  Prepared p;
  if (int rc = prepare(o.c, p, true)) return rc;
  int rc = 0;
  nlohmann::json out = nlohmann::json::array();
  FoldedWarnings warnings;
  for (uint32_t n : p.ns) {
    p.opts.nranks = n;
    // Each N reports its own errors (a loop error repeated at another N is not a "repeat").
    p.s.diags.clear();
    uint64_t errors_before = 0;
    size_t diags_before = 0;
    auto g = elaborate(p.s, p.t, p.opts);
    bool dumped_ok = g && run_passes(*g, p.s.diags, o.c.dump_after, [&](const std::string& pass) {
                       std::cout << "=== after " << pass << " (N = " << n << ") ===\n";
                       write_text(std::cout, *g, p.s.sources);
                     });
    if (dumped_ok) dumped_ok = interpreter_fits(*g, *p.t.schedule, p.opts, p.s.diags);
    std::string head = "check " + p.t.schedule->name + " N = " + std::to_string(n) + ": ";
    if (!g || !dumped_ok || p.s.diags.error_count() > errors_before) {
      rc = 2;
      std::string text;
      for (size_t i = diags_before; i < p.s.diags.all().size(); ++i) text += render_diagnostic(p.s.diags.all()[i], p.s.sources);
      // An N the schedule refuses through `require` is not a mistake in the input: it says so,
      // with the reason; -q leaves it out (the exit code still tells).
      if (const Diagnostic* why = p.s.diags.unsupported_since(diags_before)) {
        if (o.json) {
          out.push_back({{"schedule", p.t.schedule->name},
                         {"ranks", n},
                         {"result", "unsupported"},
                         {"message", unsupported_reason(*why)},
                         {"diagnostics", text}});
        } else if (!o.quiet) {
          std::cout << head << "unsupported (" << unsupported_reason(*why) << ")\n";
          std::cerr << text;
        }
        continue;
      }
      if (o.json) {
        out.push_back({{"schedule", p.t.schedule->name}, {"ranks", n}, {"result", "bad-input"}, {"diagnostics", text}});
      } else {
        std::cout << head << "bad input\n";
        std::cerr << text;
      }
      continue;
    }
    warnings.add(p.s.diags, n);  // a failed N above shows its warnings with its errors
    InterpResult r = interpret(*g);
    PostconditionReport post;
    if (r.completed) post = check_postconditions(*g, r.initial, r.final);
    Diagnostics findings;
    render_findings(*g, r, post, findings);
    bool ok = r.completed && post.chunks_wrong == 0 && !findings.has_errors();
    // The verdict names the first kind of defect found, in the design's order.
    std::string verdict = "ok";
    auto has = [&](IssueKind k) {
      for (const auto& is : r.issues)
        if (is.kind == k) return true;
      return false;
    };
    if (!r.completed) verdict = "stuck";
    else if (has(IssueKind::Unmatched)) verdict = "unmatched";
    else if (has(IssueKind::UndefinedRead)) verdict = "undefined-data";
    else if (!ok) verdict = "wrong-result";
    if (!ok) rc = std::max(rc, 1);
    uint64_t transfers = 0;
    for (StepId s = 0; s < g->size(); ++s)
      if (g->kind(s) == StepKind::Send && g->match(s) != kNoStep) ++transfers;
    if (o.json) {
      nlohmann::json f = nlohmann::json::array();
      for (const auto& d : findings.all())
        f.push_back({{"severity", d.severity == Severity::Error ? "error" : "warning"},
                     {"file", d.loc.file ? p.s.sources.file(d.loc.file).name() : ""},
                     {"line", d.loc.line},
                     {"col", d.loc.col},
                     {"message", d.message}});
      out.push_back({{"schedule", p.t.schedule->name},
                     {"ranks", n},
                     {"result", verdict},
                     {"steps", g->size()},
                     {"transfers", transfers},
                     {"chunks_checked", post.chunks_checked},
                     {"chunks_wrong", post.chunks_wrong},
                     {"findings", f}});
      continue;
    }
    if (!ok || !o.quiet) {
      std::cout << head << verdict << "  (" << with_commas(g->size()) << " steps, " << with_commas(transfers) << " transfers, "
                << post.chunks_checked << " chunks checked";
      if (post.chunks_wrong) std::cout << ", " << post.chunks_wrong << " wrong";
      std::cout << ")\n";
    }
    std::cout << findings.render(p.s.sources);
  }
  // After the results, once per statement (-q: only failures are printed).
  if (!o.quiet) warnings.print(std::cerr, p.s.sources);
  if (o.json) std::cout << out.dump(2) << "\n";
  return rc;
}

int cmd_demo(const std::string& ranks) {
  std::vector<uint32_t> ns;
  std::string err;
  if (!parse_rank_list(ranks, ns, err)) return fail("bad -n '" + ranks + "': " + err);
  int rc = 0;
  std::cout << "stepgraph " << STEPGRAPH_VERSION << " — the built-in tour\n\n";
  std::cout << "1. compile ring_allreduce -n 8 --format stats\n\n";
  {
    Session s;
    Target t = s.resolve("ring_allreduce");
    ElabOptions o;
    o.nranks = 8;
    auto g = t.schedule ? elaborate(s, t, o) : nullptr;
    if (!g || !run_passes(*g, s.diags, {}, nullptr)) {
      s.diags.print(std::cerr, s.sources);
      return 2;
    }
    write_stats(std::cout, *g, compute_stats(*g));
    std::cout << "\n   the first steps:\n";
    std::ostringstream text;
    write_text(text, *g, s.sources, 6);
    std::istringstream in(text.str());
    std::string line;
    bool steps = false;
    while (std::getline(in, line)) {
      if (line.rfind("steps ", 0) == 0) steps = true;
      else if (steps) std::cout << "   " << line << "\n";
    }
  }
  std::cout << "\n2. check every library schedule (interpreter + postcondition) at N = " << ranks
            << ",\n   and verify it (explicit and Z3 engines, rendezvous and eager sends) at N = 8\n\n";
  size_t width = 4;
  for (const auto& e : library()) width = std::max(width, e.name.size());
  std::printf("%-*s  %8s  %8s  %10s  %7s  %9s  %s\n", static_cast<int>(width), "schedule", "ok", "refused", "steps@16", "rounds",
              "verify@8", "what it does");
  int total_ok = 0, total_bad = 0;
  uint64_t instances = 0, warned = 0;  // the tour prints no warnings, but counts them
  for (const auto& e : library()) {
    Session s;
    const Program* prog = s.load_library(e.name);
    Target t = s.resolve(e.name);
    if (!t.schedule) {
      s.diags.print(std::cerr, s.sources);
      rc = 2;
      continue;
    }
    int ok = 0, refused = 0, bad = 0;
    std::string first_bad;
    for (uint32_t n : ns) {
      Session one;
      Target tt = one.resolve(e.name);
      ElabOptions o;
      o.nranks = n;
      CheckOutcome c = run_check(one, tt, o);
      ++instances;
      warned += std::any_of(one.diags.all().begin(), one.diags.all().end(),
                            [](const Diagnostic& d) { return d.severity == Severity::Warning; });
      if (!c.built) {
        // Refused: an N the algorithm does not support (a failed `require`). Any other error
        // is a broken library schedule, and a failure.
        if (one.diags.unsupported_since(0)) {
          ++refused;
        } else {
          ++bad;
          if (first_bad.empty()) first_bad = "N = " + std::to_string(n) + ": " + one.diags.render(one.sources);
        }
        continue;
      }
      if (c.ok) ++ok;
      else {
        ++bad;
        if (first_bad.empty()) first_bad = "N = " + std::to_string(n) + ": " + c.findings.render(one.sources);
      }
    }
    std::string steps = "-", rounds = "-";
    {
      Session one;
      Target tt = one.resolve(e.name);
      ElabOptions o;
      o.nranks = 16;
      auto g = elaborate(one, tt, o);
      if (g && run_passes(*g, one.diags, {}, nullptr)) {
        GraphStats st = compute_stats(*g);
        steps = with_commas(st.steps);
        rounds = std::to_string(st.rounds);
      }
    }
    // Both engines, both send semantics, at N = 8 (or the first N the schedule accepts).
    std::string verdict = "-";
    for (uint32_t n : {8u, 12u, 16u}) {
      Session one;
      Target tt = one.resolve(e.name);
      ElabOptions o;
      o.nranks = n;
      o.lifecycle_as_findings = true;
      auto g = elaborate(one, tt, o);
      if (!g || !run_passes(*g, one.diags, {}, nullptr)) continue;
      verify::VerifyReport rep = verify::verify_graph(*g, verify::VerifyOptions{});
      verdict = verify::verdict_name(rep.worst());
      if (rep.worst() != verify::Verdict::Ok) {
        rc = 1;
        bad += 1;
      }
      break;
    }
    std::string desc = prog ? one_line_description(prog->header, e.name) : "";
    if (desc.size() > 52) desc = desc.substr(0, 49) + "...";
    std::printf("%-*s  %8s  %8d  %10s  %7s  %9s  %s\n", static_cast<int>(width), e.name.c_str(),
                (std::to_string(ok) + "/" + std::to_string(ns.size())).c_str(), refused, steps.c_str(), rounds.c_str(),
                verdict.c_str(), desc.c_str());
    total_ok += ok;
    total_bad += bad;
    if (bad) {
      rc = 1;
      std::cout << "   FAILED " << first_bad;
    }
  }
  std::cout << "\n" << total_ok << " checks passed, " << total_bad << " failed"
            << " (a refused N is one the algorithm does not support and says so)\n";
  if (warned)
    std::cout << warned << " of the " << instances << " instances warn that a chunk size rounds down (size / N where N does not\n"
              << "divide size); the tour does not print them: `stepgraph check NAME -n N` does\n";
  std::cout << "\n3. what verify finds in a broken schedule: the naive ring shift (every rank sends first)\n\n";
  {
    Session one;
    const Program* p = one.load_text("ring_shift.sched", R"(# Every rank sends to its right neighbour, then receives from its left.
schedule ring_shift() {
  buffer a[N] bytes 8;
  init a owned;
  on r in 0 .. N {
    send a[r] to (r + 1) % N;
    recv a[(r - 1) % N] from (r - 1) % N;
  }
}
)");
    ElabOptions o;
    o.nranks = 4;
    o.lifecycle_as_findings = true;
    auto g = elaborate(one, Target{p, p->schedules.back().get()}, o);
    if (g && run_passes(*g, one.diags, {}, nullptr)) {
      verify::VerifyReport rep = verify::verify_graph(*g, verify::VerifyOptions{});
      for (const auto& m : rep.modes)
        std::cout << "   " << verify::mode_name(m.mode) << ": " << verify::verdict_name(m.verdict) << "\n";
      if (const verify::Counterexample* cx = rep.counterexample()) std::cout << verify::render_text(*cx, one.sources);
    }
  }
  std::cout << "\n4. the fix, from the library: parity_ring_allgather (even ranks send first, odd ranks receive\n"
               "   first, every message on tag 0, so MPI's matching order decides where each block lands),\n"
               "   as `stepgraph verify parity_ring_allgather -n 4,16,64 --time` prints it: each N as it is\n"
               "   decided, which engines decided, their time and the total\n\n";
  std::cout.flush();
  {
    VerifyOpts vo;
    vo.c.target = "parity_ring_allgather";
    vo.c.ranks = "4,16,64";
    vo.timing = true;
    if (int r = cmd_verify(vo)) rc = std::max(rc, r);
  }
  std::cout << "\n5. a search too large to finish, bounded by a time limit: a reduction that receives from\n"
               "   any source in arrival order, 15 senders (2^15 states to cover), with --timeout 1\n\n";
  {
    Session one;
    const Program* p = one.load_text("any_source_sum.sched", R"(schedule any_source_sum() {
  buffer s[1] bytes 8;
  init s contrib;
  expect reduce(s, 0);
  on 0 { for k in 1 .. N { recv s[0] from any reduce; } }
  on r in 1 .. N { send s[0] to 0; }
}
)");
    ElabOptions o;
    o.nranks = 16;
    o.lifecycle_as_findings = true;
    auto g = elaborate(one, Target{p, p->schedules.back().get()}, o);
    if (g && run_passes(*g, one.diags, {}, nullptr)) {
      verify::VerifyOptions vopt;
      vopt.explicit_opts.max_executions = 1u << 30;
      auto t0 = std::chrono::steady_clock::now();
      vopt.deadline = t0 + std::chrono::seconds(1);
      verify::VerifyReport rep = verify::verify_graph(*g, vopt);
      double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (const auto& m : rep.modes) {
        std::cout << "   " << verify::mode_name(m.mode) << ": "
                  << (m.timed_out ? "undecided (time limit)" : verify::verdict_name(m.verdict));
        if (m.ran_explicit && !m.explicit_result.note.empty()) std::cout << "; explicit " << m.explicit_result.note;
        std::cout << "\n";
      }
      char buf[96];
      std::snprintf(buf, sizeof buf, "   stopped after %.2f s (exit 3); at N = 6 the same search finishes: ", took);
      std::cout << buf;
      o.nranks = 6;
      auto g6 = elaborate(one, Target{p, p->schedules.back().get()}, o);
      if (g6 && run_passes(*g6, one.diags, {}, nullptr)) {
        verify::VerifyReport r6 = verify::verify_graph(*g6, verify::VerifyOptions{});
        std::cout << verify::verdict_name(r6.worst()) << " (" << r6.modes.front().explicit_result.note << ")\n";
      }
    }
  }
  // Simulation: the same graphs, timed.
  namespace fs = std::filesystem;
  std::string tmp = fs::temp_directory_path().string();
  auto sim = [&](const char* title, SimOpts so) {
    std::cout << title;
    std::cout.flush();
    if (int r = cmd_sim(so); r != 0 && r != 1) rc = std::max(rc, r);
  };
  {
    SimOpts so;
    so.targets = {"ring_allreduce"};
    so.ranks = "16";
    so.trace = tmp + "/stepgraph_demo_trace.json";
    sim("\n6. simulate: `stepgraph sim ring_allreduce -n 16 --trace …` on the default platform with SimGrid\n"
        "   (time, algbw and busbw as nccl-tests counts them, the critical path by source line, the busiest\n"
        "   links, and a Chrome trace with a track per rank and an arrow per message)\n\n",
        so);
  }
  {
    SimOpts so;
    so.targets = {"ring_allreduce,rabenseifner_allreduce,recursive_doubling_allreduce"};
    so.ranks = "64";
    so.sweep = "size=16KiB,1MiB,64MiB";
    so.plot = tmp + "/stepgraph_demo_sweep.svg";
    sim("\n7. which all-reduce wins at which size: three algorithms at N = 64, SimGrid, with a gnuplot plot\n"
        "   (`--sweep size=16KiB,1MiB,64MiB --plot …`)\n\n",
        so);
    if (fs::exists(so.plot)) std::cout << "   plot: " << so.plot << " (time and bus bandwidth against size, log axes)\n";
  }
  {
    SimOpts so;
    so.targets = {"dp_bucketed_step"};
    so.ranks = "8";
    so.sets = {"buckets=4"};
    so.model = "analytic";
    sim("\n8. a data-parallel training step with its compute: how much of the gradient all-reduce hides\n"
        "   behind the backward pass (`sim dp_bucketed_step -n 8 --set buckets=4 --model analytic`)\n\n",
        so);
  }
  {
    std::cout << "\n9. contention: an all-to-all of 16 MiB per rank on a fat tree whose leaves have one uplink for\n"
                 "   four hosts, in SimGrid (links shared) and in the analytic model (no contention)\n\n";
    double t[2] = {0, 0};
    int k = 0;
    for (const char* model : {"simgrid", "analytic"}) {
      SimOpts so;
      so.targets = {"linear_alltoall"};
      so.ranks = "16";
      so.sets = {"size=16MiB"};
      so.model = model;
      so.platform = "fat-tree:leaves=4,per_leaf=4,oversub=4,bw=100Gbps,lat=1us,model=ideal";
      PointPlan plan;
      if (plan_points(so, plan) || sim_options(so, plan.sim)) return 2;
      PointResult r = run_point(so, plan, 0);
      t[k++] = r.time_s;
      std::cout << "   " << model << ": " << (r.error.empty() ? std::to_string(r.time_s * 1e3) + " ms" : r.error) << "\n";
    }
    if (t[1] > 0) std::cout << "   SimGrid is " << std::to_string(t[0] / t[1]).substr(0, 4) << "x slower: the shared uplinks\n";
  }
  {
    // Context-parallel attention: the same step graphs, analysed and simulated with their tiles.
    std::cout << "\n10. ring attention variants at N = 8, causal, 64K tokens: `stepgraph analyze` reads each rank's traffic,\n"
                 "    extra memory and compute off the step graph (bytes in Q blocks: --unit Q; the contiguous ring\n"
                 "    is 2 - 1/N out of balance, zigzag even), then `sim` ranks them with their tiles' flops\n\n";
    std::cout.flush();
    for (const char* v : {"ring_attention", "zigzag_ring_attention"}) {
      AnalyzeOpts ao;
      ao.c.target = v;
      ao.c.ranks = "8";
      ao.c.sets = {"seq=64K"};
      ao.unit = "Q";
      if (int r = cmd_analyze(ao)) rc = std::max(rc, r);
    }
    SimOpts so;
    so.targets = {"ring_attention,zigzag_ring_attention,allgather_attention,ringx4_attention,ulysses_ring_attention"};
    so.ranks = "8";
    so.sets = {"seq=64K"};
    so.model = "analytic";
    so.platform = "nodes:count=1,gpus=8,nvlink=900GBps,nic=400Gbps,speed=400Tf";
    sim("\n    `sim ring_attention,zigzag_ring_attention,… -n 8 --model analytic --platform nodes:…,speed=400Tf`\n\n", so);
  }
  // Execution: real processes under mpiexec, the same graphs on real buffers.
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    std::cout << "\n11. exec: skipped (mpiexec is not installed)\n";
    return rc;
  }
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string mpi = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout 120 mpiexec ";
  auto run = [&](const std::string& cmd) {
    std::cout.flush();
    int st = std::system(cmd.c_str());
    if (st != 0) std::cout << "   (exit status " << st << ")\n";
  };
  std::cout << "\n11. execute for real: `mpiexec -n 4 stepgraph exec ring_allreduce --sweep size=1KiB..1MiB --check\n"
               "    --compare native` (4 processes, real buffers, every element checked against the postcondition,\n"
               "    timed next to MPI_Allreduce; speed = MPI's time / ours)\n\n";
  run(mpi + "-n 4 '" + self + "' exec ring_allreduce --sweep size=1KiB..1MiB --check --compare native --iters 10 --warmup 2");
  std::cout << "\n12. the training step for real: `mpiexec -n 4 stepgraph exec dp_bucketed_step --check`, its gradient\n"
               "    all-reduces running while the backward pass computes (real flops)\n\n";
  run(mpi + "-n 4 '" + self + "' exec dp_bucketed_step --set size=4MiB --set flops=50M --check --iters 3 --warmup 1");
  std::cout << "\n13. ring attention for real: `mpiexec -n 4 stepgraph exec zigzag_ring_attention_bwd --sweep seq=512,1024\n"
               "    --set heads=4 --set dim=64 --check`: real backward tiles on bf16 q, k, v, every gradient compared with\n"
               "    full attention computed on one rank from the same inputs; TFLOP/s in FlashAttention's count\n\n";
  run(mpi + "-n 4 '" + self + "' exec zigzag_ring_attention_bwd --sweep seq=512,1024 --set heads=4 --set dim=64 --check --iters 3 --warmup 1");
  std::string stall = tmp + "/stepgraph_demo_stall.sched";
  {
    std::ofstream f(stall);
    f << "# Both ranks receive first: a deadlock.\n"
         "schedule recv_first() {\n"
         "  buffer a[2] bytes 8;\n"
         "  init a owned;\n"
         "  expect allgather(a);\n"
         "  on r in 0 .. 2 {\n"
         "    recv a[1 - r] from 1 - r;\n"
         "    send a[r] to 1 - r;\n"
         "  }\n"
         "}\n";
  }
  std::cout << "\n14. a hang becomes a report: a program whose ranks both receive first, run with `--timeout 1`\n"
               "    (each rank names the step it waits on, its peer and the source line; the job ends with exit 3)\n\n";
  // Open MPI's own abort banner is left out; the exit code is printed.
  run("( " + mpi + "-n 2 '" + self + "' exec " + stall + " --timeout 1; echo \"   exit code $?\" ) 2>&1 | grep -v -e '^---' -e '^$' "
      "-e 'MPI_ABORT' -e 'NOTE:' -e 'You may' -e 'exactly when' -e 'with errorcode' -e 'help message' -e 'orte_base_help'");
  std::string calib = tmp + "/stepgraph_demo.platform";
  std::cout << "\n15. calibrate, then predict: `mpiexec -n 2 stepgraph calibrate` fits latency and bandwidth from a\n"
               "    ping-pong and writes a platform file; `exec --predict @FILE` puts the simulator's time next to the\n"
               "    measured one\n\n";
  run(mpi + "-n 2 '" + self + "' calibrate --sizes 1KiB..4MiB --iters 5 -o " + calib + " | grep -v -e '^ *[0-9]' -e 'bytes  measured'");
  run(mpi + "-n 2 '" + self + "' exec ring_allreduce --sweep size=64KiB,1MiB,4MiB --predict @" + calib + " --iters 5 --warmup 1");

  std::cout << "\n16. what a launcher gave this process: `mpiexec -n 2 stepgraph env --export` (rank, world size, local rank,\n"
               "    PyTorch's master address: `eval` it in a job script before torch.distributed.init_process_group)\n\n";
  run(mpi + "-n 2 '" + self + "' env --export 2>/dev/null | sort");

  std::cout << "\n17. the GPU path: `exec --device cuda` keeps the buffers on each rank's GPU (copies, reductions and attention\n"
               "    tiles in CUDA kernels; MPI staged through host memory or CUDA-aware); where there is no GPU it says why.\n"
               "    Device calls go on two streams, local work beside the copies around MPI, ordered by events; MPI touches\n"
               "    memory only after the events it needs (`--device-sync` makes every call wait instead).\n"
               "    `--device host-staged` runs that same path with host memory as the device, checked: it defers both\n"
               "    streams and runs them in a random interleaving, so a missing wait would show as wrong elements\n\n";
  run("( " + mpi + "-n 2 '" + self + "' exec ring_allreduce --set size=64KiB --device cuda --check --iters 2; echo \"   exit code $?\" ) 2>&1 "
      "| grep -e 'stepgraph: error' -e '^   exit code' -e '# device'");
  run(mpi + "-n 4 '" + self + "' exec ring_allreduce --set size=1MiB --device host-staged --check --iters 5 --warmup 1");
  std::cout << "\n    `--transport nccl`: NCCL has no buffered send and matches transfers by issue order, so every rank issues\n"
               "    them in one global order of groups computed from the whole schedule (a transfer stream beside a compute\n"
               "    stream, events between them). MPI stands in for NCCL here; a program whose blocking sends all go first\n"
               "    is refused at its line, since only buffering saves it\n\n";
  run(mpi + "-n 4 '" + self + "' exec zigzag_ring_attention --set seq=1024 --set heads=4 --set dim=32 --device host-staged --transport nccl "
      "--check --iters 1 --warmup 0 | grep -v '^#  '");
  std::string unsafe = tmp + "/stepgraph_demo_unsafe.sched";
  {
    std::ofstream f(unsafe);
    f << "schedule unsafe_ring(size = 48KiB) {\n  buffer data[N] bytes size / N;\n  init data owned;\n  expect allgather(data);\n"
         "  on r in 0 .. N {\n    for s in 0 .. N - 1 {\n      send data[(r - s) % N] to (r + 1) % N;\n"
         "      recv data[(r - s - 1) % N] from (r - 1) % N;\n    }\n  }\n}\n";
  }
  run("( " + mpi + "-n 3 '" + self + "' exec " + unsafe + " --device host-staged --transport nccl --iters 1; echo \"   exit code $?\" ) 2>&1 "
      "| grep -v -e '^---' -e '^$' -e 'Primary job' -e 'non-zero exit' -e 'mpiexec detected' -e 'the job to be' -e 'Process name' "
      "-e 'Exit code:'");
  return rc;
}

}  // namespace sg::cli

// `stepgraph demo`: the built-in tour. Every capability on small sizes, in under a minute after
// the build: compile, check and verify the library, a deadlock and a truncating receive found, the
// fix, a time limit and bad input refused before it costs anything, simulations, ring attention
// analysed and ranked, then real runs under mpiexec (a child process per step: the tour is one
// process and mpiexec starts its own).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/shared.hpp"
#include "cli/sim_command.hpp"
#include "core/base/sizes.hpp"
#include "core/dsl/library.hpp"
#include "core/interp/run_check.hpp"
#include "core/io/output_file.hpp"
#include "core/io/writers.hpp"
#include "core/pipeline.hpp"
#include "verify/verify.hpp"

namespace sg::cli {

// Step 11: an MSCCL XML file verified and simulated (cli/demo_msccl.cpp); steps 12 on: real runs
// under mpiexec (cli/demo_exec.cpp). Each returns the tour's exit code.
int demo_msccl(int rc);
int demo_exec(int rc);
int demo_nccl_tables(int rc);  // step 9's measured tables (cli/demo_nccl.cpp)

namespace {

// One instance through the pipeline, no dumps, no expansion; null after errors in s.diags.
std::unique_ptr<StepGraph> graph_of(Session& s, const Target& t, const ElabOptions& o) {
  BuildOptions bo;
  bo.elab = o;
  return build(s, t, bo).graph;
}

// Verifies a schedule given as text at n ranks and prints each semantics' verdict and the first
// counterexample; returns the worst verdict (Ok when the text does not build).
verify::Verdict verify_text(const char* file, const char* text, uint32_t n) {
  Session one;
  const Program* p = one.load_text(file, text);
  ElabOptions o;
  o.nranks = n;
  o.lifecycle_as_findings = true;
  auto g = graph_of(one, Target{p, p->schedules.back().get()}, o);
  if (!g) return verify::Verdict::Ok;
  verify::VerifyReport rep = verify::verify_graph(*g, verify::VerifyOptions{});
  for (const auto& m : rep.modes) std::cout << "   " << verify::mode_name(m.mode) << ": " << verify::verdict_name(m.verdict) << "\n";
  if (const verify::Counterexample* cx = rep.counterexample()) std::cout << verify::render_text(*cx, one.sources);
  return rep.worst();
}

// Checks a schedule given as text at n ranks and prints the first finding with its notes.
void check_first_finding(const char* file, const char* text, uint32_t n) {
  Session one;
  const Program* p = one.load_text(file, text);
  ElabOptions o;
  o.nranks = n;
  CheckOutcome c = run_check(one, Target{p, p->schedules.back().get()}, o);
  if (!c.built || c.findings.all().empty()) return;
  Diagnostics first;
  first.set_fold_repeats(false);
  Diagnostic& d = first.error(c.findings.all().front().loc, c.findings.all().front().message);
  d.notes = c.findings.all().front().notes;
  std::cout << "   " << check_verdict(c.interp, c.ok) << ", " << c.post.chunks_wrong << " chunks wrong; the first:\n"
            << first.render(one.sources);
}

}  // namespace

int cmd_demo(const std::string& ranks) {
  std::vector<uint32_t> ns;
  if (Diagnostics diags; !parse_rank_list(ranks, ns, diags)) return fail("bad -n '" + ranks + "': " + diags.messages());
  int rc = 0;
  std::cout << "stepgraph " << STEPGRAPH_VERSION << " — the built-in tour\n\n";
  std::cout << "1. compile ring_allreduce -n 8 --format stats\n\n";
  {
    Session s;
    Target t = open_target(s, "ring_allreduce");
    ElabOptions o;
    o.nranks = 8;
    auto g = graph_of(s, t, o);
    if (!g) {
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
    Target t = open_target(s, e.name);
    if (!t.opened()) {
      s.diags.print(std::cerr, s.sources);
      rc = 2;
      continue;
    }
    int ok = 0, refused = 0, bad = 0;
    std::string first_bad;
    for (uint32_t n : ns) {
      Session one;
      Target tt = open_target(one, e.name);
      ElabOptions o;
      o.nranks = n;
      CheckOutcome c = run_check(one, tt, o);
      ++instances;
      warned +=
          std::any_of(one.diags.all().begin(), one.diags.all().end(), [](const Diagnostic& d) { return d.severity == Severity::Warning; });
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
      Target tt = open_target(one, e.name);
      ElabOptions o;
      o.nranks = 16;
      auto g = graph_of(one, tt, o);
      if (g) {
        GraphStats st = compute_stats(*g);
        steps = with_commas(st.steps);
        rounds = std::to_string(st.rounds);
      }
    }
    // Both engines, both send semantics, at N = 8 (or the first N the schedule accepts).
    std::string verdict = "-";
    for (uint32_t n : {8u, 12u, 16u}) {
      Session one;
      Target tt = open_target(one, e.name);
      ElabOptions o;
      o.nranks = n;
      o.lifecycle_as_findings = true;
      auto g = graph_of(one, tt, o);
      if (!g) continue;
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
                (std::to_string(ok) + "/" + std::to_string(ns.size())).c_str(), refused, steps.c_str(), rounds.c_str(), verdict.c_str(),
                desc.c_str());
    total_ok += ok;
    total_bad += bad;
    if (bad) {
      rc = 1;
      std::cout << "   FAILED " << first_bad;
    }
  }
  std::cout << "\n"
            << total_ok << " checks passed, " << total_bad << " failed"
            << " (a refused N is one the algorithm does not support and says so)\n";
  if (warned)
    std::cout << warned << " of the " << instances << " instances warn that a chunk size rounds down (size / N where N does not\n"
              << "divide size); the tour does not print them: `stepgraph check NAME -n N` does\n";
  std::cout << "\n3. what verify finds in a broken schedule: the naive ring shift (every rank sends first)\n\n";
  verify_text("ring_shift.sched", R"(# Every rank sends to its right neighbour, then receives from its left.
schedule ring_shift() {
  buffer a[N] bytes 8;
  init a owned;
  on r in 0 .. N {
    send a[r] to (r + 1) % N;
    recv a[(r - 1) % N] from (r - 1) % N;
  }
}
)",
              4);
  std::cout << "\n   and a receive from any rank that can take a larger message than it has room for (at run time,\n"
               "   MPI_ERR_TRUNCATE): `unmatched`, with the receive's and the send's lines\n\n";
  if (verify_text("trunc.sched", R"(schedule trunc() {
  buffer a[4] bytes 64;
  init a contrib;
  expect nothing;
  on 0 { send a[0 .. 2] to 1 tag 3; }
  on 1 { recv a[0] from any tag 3; }
}
)",
                  2) != verify::Verdict::Unmatched)
    rc = 1;
  std::cout << "\n   and a wrong result that points at its cause: a hierarchical all-reduce on 2 nodes of 4 whose\n"
               "   inter-node hop goes to the next rail on its wrap-around. `check` says which chunks are wrong, which\n"
               "   step last wrote them, and where their missing terms went: to the wrong rank by the misrouted send\n"
               "   (line 14), and overwritten there before anything read them\n\n";
  std::cout.flush();
  check_first_finding("hier_misrouted.sched", R"(# phases: node reduce-scatter, rail all-reduce across nodes, node all-gather
schedule hier_misrouted(mp = 4) {
  let dp = N / mp;
  buffer data[N] bytes 64;
  init data contrib;
  expect allreduce(data);
  for d in 0 .. dp { for s in 0 .. mp - 1 { for k in 0 .. mp {
    let b = (k - s - 1) % mp;
    send data[b * dp .. (b + 1) * dp] from d * mp + k to d * mp + (k + 1) % mp reduce;
  } } }
  for t in 0 .. mp {
    for s in 0 .. dp - 1 {
      for j in 0 .. dp - 1 { send data[t * dp + (j - s - 1) % dp] from j * mp + t to (j + 1) * mp + t reduce; }
      send data[t * dp + (dp - s - 2) % dp] from (dp - 1) * mp + t to (t + 1) % mp reduce;   # the wrap: next rail
    }
    for s in 0 .. dp - 1 { for j in 0 .. dp { send data[t * dp + (j - s) % dp] from j * mp + t to ((j + 1) % dp) * mp + t; } }
  }
  for d in 0 .. dp { for s in 0 .. mp - 1 { for k in 0 .. mp {
    let b = (k - s) % mp;
    send data[b * dp .. (b + 1) * dp] from d * mp + k to d * mp + (k + 1) % mp;
  } } }
}
)",
                      8);
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
    auto g = graph_of(one, Target{p, p->schedules.back().get()}, o);
    if (g) {
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
      auto g6 = graph_of(one, Target{p, p->schedules.back().get()}, o);
      if (g6) {
        verify::VerifyReport r6 = verify::verify_graph(*g6, verify::VerifyOptions{});
        std::cout << verify::verdict_name(r6.worst()) << " (" << r6.modes.front().explicit_result.note << ")\n";
      }
    }
  }
  std::cout << "\n   Bad input is bounded before anything is spent: a loop of 2^62 iterations that builds nothing,\n"
               "   and check ring_allreduce at N = 8192 (its graph and the interpreter's state past the memory\n"
               "   limit), each refused from elaboration's count, with a located error (exit 2)\n\n";
  {
    Session one;
    const Program* p = one.load_text("spin.sched", R"(schedule spin() {
  buffer a[1] bytes 8;
  init a contrib;
  expect nothing;
  for t in 0 .. 4611686018427387904 { }
}
)");
    auto bounded = [&](Session& s, const Target& t, ElabOptions o, const char* what) {
      auto t0 = std::chrono::steady_clock::now();
      auto g = graph_of(s, t, o);
      double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string first = s.diags.has_errors() ? s.diags.all().front().message : std::string("built (not refused)");
      if (first.size() > 92) first = first.substr(0, 89) + "...";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f s", took);
      std::cout << "   " << what << ": refused in " << buf << "\n     " << first << "\n";
      if (g) rc = 1;
    };
    ElabOptions o;
    o.nranks = 2;
    bounded(one, Target{p, p->schedules.back().get()}, o, "spin.sched:5");
    Session big;
    ElabOptions ob;
    ob.nranks = 8192;
    ob.max_memory = std::min<uint64_t>(default_memory_limit(), uint64_t{16} << 30);
    count_interpreter(ob);
    bounded(big, open_target(big, "ring_allreduce"), ob, "check ring_allreduce -n 8192");
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
    SimOpts big;
    big.targets = {"ring_allreduce"};
    big.ranks = "1024";
    big.model = "analytic";
    sim("\n   the same at N = 1,024 with the analytic engine: the ranks of a ring are alike on this platform, as the\n"
        "   schedule's text proves, so it builds rank 0's program alone and simulates it for all (the `symmetry:`\n"
        "   line; --no-symmetry builds and simulates all 1,024, with the same answer)\n\n",
        big);
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
    // The whole step in 4D parallelism (schedules/train_step.sched), a small slice of its
    // Llama-3-405B defaults: 4 stages of 2 layers, tensor parallelism over each node's GPUs.
    SimOpts ts;
    ts.targets = {"train_step"};
    ts.ranks = "32";
    ts.sets = {"tp=4", "pp=4", "layers=8", "buckets=2", "microbatches=4", "seq=4096"};
    ts.model = "analytic";
    ts.platform = "dgx-h100:nodes=8,gpus=4";
    ts.top = 3;
    sim("\n   A whole training step in 4D parallelism (`train_step`: 1F1B pipeline, tensor-parallel reduce-scatter\n"
        "   and all-gather per block, bucketed data-parallel all-reduce): tp 4, pp 4, dp 2 on 8 H100 nodes of 4 GPUs\n"
        "   (`sim train_step -n 32 --set tp=4 --set pp=4 --set layers=8 --set buckets=2 --set microbatches=4\n"
        "   --set seq=4096 --platform dgx-h100:nodes=8,gpus=4 --model analytic`)\n\n",
        ts);
    // Its defaults at N = 1,024: every collective instance costed from one run of its algorithm
    // alone per shape, instead of 370 M steps of expansion (docs/sim.md).
    SimOpts big;
    big.targets = {"train_step"};
    big.ranks = "131072";
    big.model = "analytic";
    big.platform = "dgx-h100:nodes=16384";
    big.collectives = "memo";
    big.top = 3;
    sim("\n   The defaults (Llama 3 405B: tp 8, pp 16, dp 1,024) on 131,072 H100s: the schedule's text proves the\n"
        "   data-parallel replicas alike, so only one rank of each class is built and simulated (128 of them), and\n"
        "   each collective instance is costed from its algorithm run alone on its members' GPUs, once per shape\n"
        "   (`sim train_step -n 131072 --platform dgx-h100:nodes=16384 --collectives memo --model analytic`; the\n"
        "   `collectives costed` line says what that leaves out)\n\n",
        big);
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
      if (plan_points(so, plan) || sim_options(so, plan.platform, plan.sim)) return 2;
      PointResult r = run_point(so, plan, 0);
      t[k++] = r.time_s;
      std::cout << "   " << model << ": " << (r.error.empty() ? std::to_string(r.time_s * 1e3) + " ms" : r.error) << "\n";
    }
    if (t[1] > 0) std::cout << "   SimGrid is " << std::to_string(t[0] / t[1]).substr(0, 4) << "x slower: the shared uplinks\n";
    // GPU nodes: NCCL's algorithm, and the two engines agreeing where only the ports are shared.
    std::string wrapper = (std::filesystem::temp_directory_path() / "stepgraph_demo_allreduce.sched").string();
    if (Diagnostics diags;
        !write_output_file(wrapper,
                           "# One all-reduce over every rank.\nschedule allreduce_all(size = 256MiB) {\n  buffer data[1] bytes size;\n"
                           "  init data contrib;\n  expect allreduce(data);\n  allreduce data;\n}\n",
                           diags))
      return fail(diags.messages());
    std::cout << "\n   On GPU nodes nothing inside the network is shared: an all-reduce of 256 MiB over 2 nodes of 8 GPUs\n"
                 "   expands as NCCL's tuning model picks (its ring over channels), and the analytic engine's ports (NVLink and\n"
                 "   NIC at once, each link shared by what crosses it) agree with SimGrid\n\n";
    std::string line;
    for (const char* model : {"simgrid", "analytic"}) {
      SimOpts so;
      so.targets = {wrapper};
      so.ranks = "16";
      so.model = model;
      so.platform = "nodes:count=2,gpus=8";
      PointPlan plan;
      if (plan_points(so, plan) || sim_options(so, plan.platform, plan.sim)) return 2;
      PointResult r = run_point(so, plan, 0);
      if (!r.error.empty()) {
        std::cout << "   " << model << ": " << r.error << "\n";
        continue;
      }
      std::cout << "   " << model << ": " << std::to_string(r.time_s * 1e3).substr(0, 6) << " ms, busbw "
                << std::to_string(r.busbw).substr(0, 5) << " GB/s\n";
      if (!r.expansions.empty()) line = r.expansions[0];
    }
    if (!line.empty()) std::cout << "   collective: " << line << "\n";
    // Presets: the machines people own, and NCCL's choice on each (its tables by GPU generation,
    // the NICs and their PCIe path, the host CPU); NCCL_ALGO forces it as it forces NCCL.
    std::cout << "\n   The same 1 MiB all-reduce over 4 nodes on presets named after the hardware (`--platform\n"
                 "   dgx-a100:nodes=4`, `dgx-h100:nodes=4`; also dgx-h200, dgx-b200, gb200-nvl72), then with\n"
                 "   `NCCL_ALGO=Ring` in the environment, read with NCCL's own syntax. The time pays NCCL's own costs\n"
                 "   (base and per-hop latency, the protocol's bandwidth and per-channel caps, one chunk in flight per\n"
                 "   channel): one H100 node's ring within 2-10 % of measured nccl-tests from 1 MiB up (bench/README.md):\n\n";
    for (const char* preset : {"dgx-a100:nodes=4", "dgx-h100:nodes=4", "dgx-h100:nodes=4 NCCL_ALGO=Ring"}) {
      std::string spec = preset;
      bool forced = spec.find(' ') != std::string::npos;
      if (forced) {
        spec = spec.substr(0, spec.find(' '));
        setenv("NCCL_ALGO", "Ring", 1);
      }
      SimOpts so;
      so.targets = {wrapper};
      so.ranks = "32";
      so.sets = {"size=1MiB"};
      so.model = "analytic";
      so.platform = spec;
      PointPlan plan;
      int prc = plan_sim(so, plan);
      PointResult r = prc ? PointResult{} : run_point(so, plan, 0);
      if (forced) unsetenv("NCCL_ALGO");
      if (prc) return 2;
      std::cout << "   " << preset << ": " << (r.error.empty() ? std::string() : r.error)
                << (r.expansions.empty() || r.expansions[0].find("(NCCL") == std::string::npos
                        ? std::string()
                        : r.expansions[0].substr(r.expansions[0].find("(NCCL")))
                << "\n";
    }
    rc = demo_nccl_tables(rc);
  }
  {
    // Context-parallel attention: the same step graphs, analysed and simulated with their tiles.
    std::cout << "\n10. ring attention variants at N = 8, causal, 64Ki (65,536) tokens: `stepgraph analyze` reads each rank's traffic,\n"
                 "    extra memory and compute off the step graph (bytes in Q blocks: --unit Q; the contiguous ring\n"
                 "    is 2 - 1/N out of balance, zigzag even), then `sim` ranks them with their tiles' flops\n\n";
    std::cout.flush();
    for (const char* v : {"ring_attention", "zigzag_ring_attention"}) {
      AnalyzeOpts ao;
      ao.c.target = v;
      ao.c.ranks = "8";
      ao.c.sets = {"seq=64Ki"};
      ao.unit = "Q";
      if (int r = cmd_analyze(ao)) rc = std::max(rc, r);
    }
    SimOpts so;
    so.targets = {"ring_attention,zigzag_ring_attention,allgather_attention,ringx4_attention,ulysses_ring_attention"};
    so.ranks = "8";
    so.sets = {"seq=64Ki"};
    so.model = "analytic";
    so.platform = "nodes:count=1,gpus=8,nvlink=450GBps,nic=400Gbps,speed=400Tf";
    sim("\n    `sim ring_attention,zigzag_ring_attention,… -n 8 --model analytic --platform nodes:…,speed=400Tf`\n\n", so);
  }
  return demo_exec(demo_msccl(rc));
}

}  // namespace sg::cli

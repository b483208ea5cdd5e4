// The simulator: accuracy against closed forms on an ideal star in both backends, agreement of
// the backends where links carry one message at a time, contention where they do not, overlap of
// computation and communication, deadlocks reported (never a hang), and the CLI's sweeps, CSV,
// plots and MPI-split runs. Traces: test_trace.cpp.
#include <catch2/catch.hpp>

#include "run_command.hpp"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/dsl/session.hpp"
#include "core/graph/elaborate.hpp"
#include "core/graph/expand_collectives.hpp"
#include "core/graph/passes.hpp"
#include "sim/result_io.hpp"
#include "sim/sim.hpp"

using namespace sg;
using namespace sg::sim;
namespace fs = std::filesystem;

namespace {

#ifdef STEPGRAPH_HAVE_SIMGRID
const std::vector<Model> kModels = {Model::Analytic, Model::SimGrid};
#else
const std::vector<Model> kModels = {Model::Analytic};
#endif

constexpr double kAlpha = 1e-6;         // the star's latency
constexpr double kBeta = 1.0 / 12.5e9;  // 100 Gbps
const char* kStar = "star:bw=100Gbps,lat=1us,model=ideal";

struct Built {
  Session s;
  std::unique_ptr<StepGraph> g;
};

std::unique_ptr<Built> build(const std::string& target, uint32_t n, std::vector<std::pair<std::string, std::string>> sets = {},
                             const std::string& text = "") {
  auto b = std::make_unique<Built>();
  Target t;
  if (text.empty()) {
    t = b->s.open_schedule(target);
  } else {
    const Program* p = b->s.load_text(target + ".sched", text);
    INFO(b->s.diags.render(b->s.sources));
    REQUIRE(!b->s.diags.has_errors());
    t = Target{p, p->schedules.back().get()};
  }
  REQUIRE(t.schedule);
  ElabOptions o;
  o.nranks = n;
  o.sets = std::move(sets);
  b->g = elaborate(b->s, t, o);
  INFO(b->s.diags.render(b->s.sources));
  REQUIRE(b->g);
  REQUIRE(run_passes(*b->g, b->s.diags, {}, nullptr));
  return b;
}

SimResult run(const StepGraph& g, Model m, const std::string& spec = kStar, SimOptions o = {}) {
  Platform p;
  sg::SourceManager sm;
  sg::Diagnostics diags;
  REQUIRE(parse_platform(spec, g.nranks, p, sm, diags));
  o.model = m;
  SimResult r = simulate(g, p, o);
  INFO(r.error);
  REQUIRE(r.error.empty());
  return r;
}

double rel(double a, double b) { return std::fabs(a - b) / b; }

uint32_t ceil_log2(uint32_t n) {
  uint32_t k = 0;
  while ((1u << k) < n) ++k;
  return k;
}

}  // namespace

TEST_CASE("on an ideal star both backends match the closed forms within 0.5%", "[sim][accuracy]") {
  const double n = 64.0 * 1024 * 1024;  // the schedules' default size
  for (Model m : kModels) {
    for (uint32_t N : {4u, 8u, 12u, 16u}) {
      INFO(model_name(m) << " N=" << N);
      double NN = N;
      auto ring = build("ring_allreduce", N);
      CHECK(rel(run(*ring->g, m).time_s, 2 * (NN - 1) * (kAlpha + n / NN * kBeta)) < 0.005);
      auto bruck = build("bruck_allgather", N);
      CHECK(rel(run(*bruck->g, m).time_s, ceil_log2(N) * kAlpha + (NN - 1) / NN * n * kBeta) < 0.005);
      // Blocking sends of 64 MiB go by rendezvous: each parent sends to one child at a time.
      auto bcast = build("binomial_bcast", N);
      CHECK(rel(run(*bcast->g, m).time_s, ceil_log2(N) * (kAlpha + n * kBeta)) < 0.005);
      if ((N & (N - 1)) == 0) {
        auto rd = build("recursive_doubling_allreduce", N);
        CHECK(rel(run(*rd->g, m).time_s, ceil_log2(N) * (kAlpha + n * kBeta)) < 0.005);
      }
    }
  }
}

TEST_CASE("the backends agree within 1% where every link carries one message at a time", "[sim][agree]") {
#ifdef STEPGRAPH_HAVE_SIMGRID
  struct Case {
    const char* target;
    uint32_t n;
    const char* platform;
  };
  for (const Case& c : {Case{"ring_allreduce", 16, kStar}, Case{"pairwise_alltoall", 8, kStar}, Case{"parity_ring_allgather", 9, kStar},
                        Case{"recursive_halving_reduce_scatter", 8, kStar}, Case{"ring_allreduce", 16, "torus:4x4,bw=100Gbps,lat=1us"},
                        Case{"ring_allgather", 16, "nodes:count=2,gpus=8,model=ideal"},
                        Case{"linear_alltoall", 16, "fat-tree:leaves=4,per_leaf=4,bw=100Gbps,lat=1us,model=ideal"}}) {
    INFO(c.target << " N=" << c.n << " on " << c.platform);
    auto b = build(c.target, c.n);
    double a = run(*b->g, Model::Analytic, c.platform).time_s;
    double s = run(*b->g, Model::SimGrid, c.platform).time_s;
    CHECK(rel(a, s) < 0.01);
  }
#endif
}

TEST_CASE("an all-to-all on an oversubscribed fat tree is slower in SimGrid than the analytic model says", "[sim][contention]") {
#ifdef STEPGRAPH_HAVE_SIMGRID
  auto b = build("linear_alltoall", 16, {{"size", "16MiB"}});
  const char* over = "fat-tree:leaves=4,per_leaf=4,oversub=4,bw=100Gbps,lat=1us,model=ideal";
  double a = run(*b->g, Model::Analytic, over).time_s;
  double s = run(*b->g, Model::SimGrid, over).time_s;
  CHECK(s > 2 * a);  // four hosts share each leaf's one uplink
  double full = run(*b->g, Model::SimGrid, "fat-tree:leaves=4,per_leaf=4,bw=100Gbps,lat=1us,model=ideal").time_s;
  CHECK(rel(full, a) < 0.01);  // with full bisection, no contention: the two agree
#endif
}

TEST_CASE("the training step hides part of its all-reduce behind the backward pass, more with more buckets", "[sim][overlap]") {
  for (Model m : kModels) {
    INFO(model_name(m));
    auto one = build("dp_bucketed_step", 8, {{"buckets", "1"}});
    auto four = build("dp_bucketed_step", 8, {{"buckets", "4"}});
    SimResult r1 = run(*one->g, m), r4 = run(*four->g, m);
    double compute = 8 * 1e9 / 1e12;  // 8 layers of 1 Gflop at the star's 1 Tflop/s
    CHECK(std::fabs(r4.compute_s - compute) < 1e-9);
    CHECK(r4.time_s < r4.compute_s + r4.comm_s);  // some communication is hidden
    CHECK(r4.overlap_s > 0.3 * r4.comm_s);
    CHECK(r4.time_s < r1.time_s);  // buckets overlap more
    CHECK(r4.overlap_s > r1.overlap_s);
  }
}

TEST_CASE("train_step's 1F1B pipeline takes (M + pp - 1)·3·F·L: the bubble and the passes", "[sim][train_step]") {
  // One rank a stage (tp = cp = dp = 1) and no vocabulary: every stage does the same work, F a
  // layer's forward (the header's formula), 2F its backward, and on a star this fast the
  // activations' transfers take picoseconds. 1F1B's makespan is then (M + pp - 1)(f + b) with
  // f = F·L, b = 2·F·L (Narayanan et al., SC 2021): M passes and pp - 1 slots of bubble.
  const double T = 64, h = 64, ffn = 128, kvd = 64 / 8 * 2;
  const double F = 2 * T * h * (h + 2 * kvd) + 2 * T * T * h + 2 * T * h * h + 6 * T * h * ffn;
  const std::string fast = "star:bw=1000TBps,lat=0us,speed=1Tf,model=ideal";
  for (uint32_t pp : {2u, 4u}) {
    for (int M : {1, 3, 8}) {
      const int L = 2;
      auto b = build("train_step", pp,
                     {{"tp", "1"},
                      {"pp", std::to_string(pp)},
                      {"layers", std::to_string(L * static_cast<int>(pp))},
                      {"microbatches", std::to_string(M)},
                      {"buckets", "1"},
                      {"seq", "64"},
                      {"hidden", "64"},
                      {"ffn", "128"},
                      {"heads", "8"},
                      {"kv_heads", "2"},
                      {"vocab", "0"}});
      for (Model m : kModels) {
        INFO(model_name(m) << " pp=" << pp << " M=" << M);
        double want = (M + pp - 1) * 3 * F * L / 1e12;
        SimResult r = run(*b->g, m, fast);
        CHECK(rel(r.time_s, want) < 1e-6);
        // The first stage ends last; its step time: M passes computed, the pp - 1 slots of the
        // bubble idle, and next to nothing exposed (the transfers take picoseconds here).
        CHECK(r.slowest_rank == 0);
        CHECK(rel(r.compute_s, M * 3 * F * L / 1e12) < 1e-6);
        CHECK(rel(r.idle_s, (pp - 1) * 3 * F * L / 1e12) < 1e-6);
        CHECK(r.exposed_total_s < 1e-6 * want);
      }
    }
  }
}

TEST_CASE("the step time's breakdown: compute, communication exposed by statement, and idle, adding up", "[sim][breakdown]") {
  // Rank 1 computes 2 ms, then sends 12.5 MB to rank 0 (1 us + 1 ms on the star), which
  // computes 3 ms with it, ending last: 2 ms idle (waiting for rank 1's work), 1.001 ms of that
  // send exposed, 3 ms computing. An eager isend beside it, overlapped with rank 0's compute,
  // is not exposed at all.
  const std::string text =
      "schedule parts(size = 12500000) { buffer a[2] bytes size; buffer c[1] bytes 1000; init a contrib; init c contrib;"
      " expect nothing;\n"
      "  on r in 0 .. 2 {\n"
      "    if r == 1 { compute work flops 2000000000 reads a[1] writes a[1]; }\n"
      "    if r == 1 { send a[1] to 0 tag 0; }\n"
      "    if r == 0 { recv a[1] from 1 tag 0; }\n"
      "    if r == 0 { isend c[0] to 1 tag 1 as h; compute more flops 3000000000 reads a[1] writes a[0]; wait h; }\n"
      "    if r == 1 { recv c[0] from 0 tag 1; }\n"
      "  }\n"
      "}\n";
  auto b = build("parts", 2, {}, text);
  const char* star = "star:bw=100Gbps,lat=1us,speed=1Tf,model=ideal";
  for (Model m : kModels) {
    INFO(model_name(m));
    SimResult r = run(*b->g, m, star);
    CHECK(r.time_s == Approx(2e-3 + 1e-6 + 1e-3 + 3e-3).epsilon(1e-6));
    CHECK(r.slowest_rank == 0);
    CHECK(r.compute_s == Approx(3e-3).epsilon(1e-6));
    CHECK(r.idle_s == Approx(2e-3).epsilon(1e-6));
    CHECK(r.exposed_total_s == Approx(1e-3 + 1e-6).epsilon(1e-6));
    REQUIRE(r.exposed_by.size() == 1);
    CHECK(r.exposed_by[0].loc.line == 4);  // the send, not the overlapped isend
    CHECK(r.compute_s + r.exposed_total_s + r.idle_s == Approx(r.time_s).epsilon(1e-9));
  }
}

TEST_CASE("a simulated deadlock ends with the ranks, steps and lines that wait, never a hang", "[sim][deadlock]") {
  Session s;
  Target t = s.open_schedule((fs::path(STEPGRAPH_SOURCE_DIR) / "tests" / "verify_cases" / "ring_shift.sched").string() + ":bad");
  REQUIRE(t.schedule);
  ElabOptions o;
  o.nranks = 4;
  auto g = elaborate(s, t, o);
  REQUIRE(g);
  REQUIRE(run_passes(*g, s.diags, {}, nullptr));
  for (Model m : kModels) {
    INFO(model_name(m));
    SimOptions so;
    so.runtime.protocol = Protocol::Rendezvous;  // every rank sends first: a zero-buffer deadlock
    SimResult r = run(*g, m, kStar, so);
    CHECK_FALSE(r.completed);
    REQUIRE(r.stuck.ranks.size() == 4);
    for (const auto& sr : r.stuck.ranks) {
      CHECK(sr.step != kNoStep);
      CHECK(g->loc(sr.step).line == 11);  // the send
    }
    CHECK(r.stuck.cycle.size() == 5);
    so.runtime.protocol = Protocol::Eager;  // buffered sends: it completes
    CHECK(run(*g, m, kStar, so).completed);
  }
  // A receive nothing sends to: stuck, reported, not hung.
  auto b = build("lonely", 2, {}, R"(schedule lonely() {
  buffer d[1] bytes 8;
  init d contrib;
  on 1 { recv d[0] from 0 tag 3; }
  on 0 { send d[0] to 1 tag 4; }
}
)");
  for (Model m : kModels) {
    SimResult r = run(*b->g, m);
    CHECK_FALSE(r.completed);
    REQUIRE_FALSE(r.stuck.ranks.empty());
    CHECK(r.stuck.ranks.front().rank == 1);
  }
}

TEST_CASE("wildcard receives take messages in arrival order", "[sim][wildcard]") {
  // Rank 0 gathers by arrival from three senders that start 1, 2 and 3 ms late: whatever the
  // program order, the receives complete as the messages arrive.
  const char* text = R"(schedule arrive() {
  buffer g[N] bytes 1MiB;
  buffer w[1] bytes 8;
  init g owned;
  init w contrib;
  expect nothing;
  on r in 1 .. N { compute delay flops (N - r) * 1G reads w[0] writes w[0]; send g[r] to 0; }
  on 0 { for k in 1 .. N { recv g[k] from any; } }
}
)";
  auto b = build("arrive", 4, {}, text);
  for (Model m : kModels) {
    INFO(model_name(m));
    SimOptions so;
    so.trace = true;
    SimResult r = run(*b->g, m, kStar, so);
    REQUIRE(r.completed);
    // The first receive took rank 3's message (its compute is the shortest), the last rank 1's.
    std::vector<StepId> recvs;
    for (StepId s = 0; s < b->g->size(); ++s)
      if (b->g->kind(s) == StepKind::Recv) recvs.push_back(s);
    REQUIRE(recvs.size() == 3);
    CHECK(b->g->rank(r.partners[recvs[0]]) == 3);
    CHECK(b->g->rank(r.partners[recvs[2]]) == 1);
    CHECK(r.ends[recvs[0]] < r.ends[recvs[1]]);
    CHECK(rel(r.time_s, 3e-3 + kAlpha + 1048576 * kBeta) < 1e-6);
  }
}

// ---------------------------------------------------------------- the command line
namespace {

using sgtest::Ran;

Ran sh(const std::string& cmd) { return sgtest::run_command(cmd + " 2>/dev/null"); }

const std::string kBin = STEPGRAPH_BIN;

}  // namespace

TEST_CASE("sim with no platform uses the default and says so; bad input is exit 2", "[sim][cli]") {
  Ran r = sh("'" + kBin + "' sim ring_allreduce -n 8 --model analytic");
  CHECK(r.rc == 0);
  CHECK(r.out.find("(the default; --platform to choose)") != std::string::npos);
  CHECK(r.out.find("critical path") != std::string::npos);
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 8 --platform star:bw=fast").rc == 2);
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 8 --platform /nonexistent.xml").rc == 2);
  CHECK(sh("'" + kBin + "' sim nosuchschedule -n 8").rc == 2);
  Ran u = sh("'" + kBin + "' sim recursive_doubling_allgather -n 6");
  CHECK(u.rc == 2);
  CHECK(u.out.find("unsupported") != std::string::npos);
}

// Both streams, for the tests that read the error and the located diagnostic.
Ran sh2(const std::string& cmd) { return sgtest::run_command(cmd + " 2>&1"); }

std::string write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

std::string xml_link(const std::string& attrs) {
  return "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
         "  <zone id=\"world\" routing=\"Full\">\n    <host id=\"h0\" speed=\"1Gf\"/>\n    <host id=\"h1\" speed=\"1Gf\"/>\n"
         "    <link id=\"l\" " +
         attrs + "/>\n    <route src=\"h0\" dst=\"h1\"><link_ctn id=\"l\"/></route>\n  </zone>\n</platform>\n";
}

TEST_CASE("a platform's numbers out of range are located errors in both engines, never a time of inf or a crash", "[sim][cli][range]") {
  fs::path dir = fs::temp_directory_path() / ("sg_sim_range_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> engines = {"analytic"};
#ifdef STEPGRAPH_HAVE_SIMGRID
  engines.push_back("simgrid");
#endif
  // Before: bw=-5MBps gave "time 0.0 ns" (analytic) and SimGrid died of signal 6; -50us and 0 passed.
  for (const auto& [attrs, where] : std::vector<std::pair<std::string, std::string>>{
           {"bandwidth=\"-5MBps\" latency=\"50us\"", ":7:29: error: link 'l': bandwidth=-5MBps: below 1Bps"},
           {"bandwidth=\"5MBps\" latency=\"-50us\"", ":7:45: error: link 'l': latency=-50us: a latency cannot be negative"},
           {"bandwidth=\"0\" latency=\"50us\"", ":7:29: error: link 'l': bandwidth=0: below 1Bps"},
       })
    for (const std::string& engine : engines) {
      std::string path = write_file(dir / "bad.xml", xml_link(attrs));
      Ran r = sh2("'" + kBin + "' sim ring_allreduce -n 2 --model " + engine + " --platform '" + path + "'");
      INFO(engine << " " << attrs << "\n" << r.out);
      CHECK(r.rc == 2);
      CHECK(r.out.find(path + where) != std::string::npos);
      CHECK(r.out.find("^") != std::string::npos);  // the line and a caret under the value
      CHECK(r.out.find("time ") == std::string::npos);
      CHECK(r.out.find("signal") == std::string::npos);
    }
  // Before: a time of 60 digits, "seconds": null in the JSON, and SimGrid's result unreadable.
  for (const std::string& engine : engines) {
    Ran r = sh2("'" + kBin + "' sim ring_allreduce -n 4 --json --model " + engine + " --platform star:bw=1e-300bps");
    INFO(r.out);
    CHECK(r.rc == 2);
    CHECK(r.out.find("--platform:1:9: error: star: bw=1e-300bps: below 1Bps (8bps)") != std::string::npos);
    CHECK(r.out.find("  star:bw=1e-300bps\n          ^~~~~~~~~") != std::string::npos);
    CHECK(r.out.find("type_error") == std::string::npos);
  }
  // A sweep fails each point alike: the located error once.
  Ran many = sh2("'" + kBin + "' sim ring_allreduce -n 2..4 --model analytic --platform star:lat=2h");
  CHECK(many.rc == 2);
  size_t first = many.out.find("--platform:1:10: error: star: lat=2h: unknown unit 'h'");
  CHECK(first != std::string::npos);
  CHECK(many.out.find("--platform:1:10", first + 1) == std::string::npos);
  // In range, it runs (1 hour of latency, SimGrid's unit).
  std::string ok = write_file(dir / "ok.xml", xml_link("bandwidth=\"125MBps\" latency=\"1h\""));
  for (const std::string& engine : engines) {
    Ran r = sh2("'" + kBin + "' sim ring_allreduce -n 2 --set size=1KiB --model " + engine + " --platform '" + ok + "'");
    INFO(r.out);
    CHECK(r.rc == 0);
    CHECK(r.out.find("time 7200.") != std::string::npos);  // two steps of an hour each
  }
  // A platform file that is a FIFO is refused, not waited on.
  std::string fifo = (dir / "fifo.xml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  Ran f = sh2("timeout 20 '" + kBin + "' sim ring_allreduce -n 2 --platform '" + fifo + "'");
  CHECK(f.rc == 2);
  CHECK(f.out.find("is not a regular file") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a time that overflows is refused with a reason, never printed as inf or null", "[sim][range]") {
  SimResult r;
  r.model = "analytic";
  r.time_s = 2.0;
  r.critical.push_back(CriticalEntry{});
  r.critical[0].seconds = std::numeric_limits<double>::infinity();
  r.ends = {1.0, std::numeric_limits<double>::quiet_NaN()};  // NaN: a step that never ran, not an overflow
  refuse_non_finite_times(r);
  CHECK(r.error.find("a time on the critical path is not a finite number") != std::string::npos);
  CHECK(r.critical.empty());
  CHECK(r.time_s == 0);
  SimResult fine;
  fine.time_s = 1.0;
  fine.ends = {std::numeric_limits<double>::quiet_NaN()};
  refuse_non_finite_times(fine);
  CHECK(fine.error.empty());
  // The options that scale times are bounded like the platform's numbers.
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 4 --gamma 1e300").rc == 2);
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 4 --message-latency 2e4s").rc == 2);
  CHECK(sh("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --loggp L=1e9s").rc == 2);
}

TEST_CASE("sim says when it cannot write its output: the path and the OS's reason, exit 2", "[sim][cli][output]") {
  // Before: --trace /proc/version and a full standard output exited 0 in silence.
  Ran t = sh2("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --trace /proc/version");
  CHECK(t.rc == 2);
  CHECK(t.out.find("--trace: cannot write '/proc/version': ") != std::string::npos);
  Ran c = sh2("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --csv /dev/full");
  CHECK(c.rc == 2);
  CHECK(c.out.find("--csv: cannot write '/dev/full': No space left on device") != std::string::npos);
  Ran d = sh2("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --csv /nonexistent/dir/x.csv");
  CHECK(d.rc == 2);
  CHECK(d.out.find("cannot write '/nonexistent/dir/x.csv': No such file or directory") != std::string::npos);
  Ran o = sgtest::run_command("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --json 2>&1 >/dev/full");
  CHECK(o.rc == 2);
  CHECK(o.out.find("cannot write to standard output: No space left on device") != std::string::npos);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {  // gnuplot itself exits 0 on a file it cannot write
    Ran p = sh2("'" + kBin + "' sim ring_allreduce -n 2..4 --model analytic --plot /dev/full");
    CHECK(p.rc == 2);
    CHECK(p.out.find("--plot: cannot write '/dev/full': No space left on device") != std::string::npos);
  }
}

TEST_CASE("a sweep over sizes and schedules as CSV, and its plot", "[sim][cli][sweep]") {
  Ran r = sh("'" + kBin + "' sim ring_allreduce,recursive_doubling_allreduce -n 8 --model analytic --sweep size=1KiB..1MiB --csv -");
  REQUIRE(r.rc == 0);
  std::istringstream in(r.out);
  std::string line;
  int rows = 0;
  std::getline(in, line);
  CHECK(line.rfind("schedule,ranks,size,size_bytes,time_s,algbw_GBps,busbw_GBps", 0) == 0);
  while (std::getline(in, line)) ++rows;
  CHECK(rows == 2 * 11);  // 1 KiB, 2 KiB, … 1 MiB for each
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    WARN("gnuplot is not installed: the plot is not checked (bash run.sh installs it)");
    return;
  }
  fs::path svg = fs::temp_directory_path() / ("sg_plot_" + std::to_string(::getpid()) + ".svg");
  Ran p = sh("'" + kBin + "' sim ring_allreduce,recursive_doubling_allreduce -n 8 --model analytic --sweep size=1KiB..1MiB --plot '" +
             svg.string() + "'");
  CHECK(p.rc == 0);
  std::ifstream f(svg);
  std::stringstream text;
  text << f.rdbuf();
  CHECK(text.str().find("<svg") != std::string::npos);
  CHECK(text.str().find("ring_allreduce") != std::string::npos);
  fs::remove(svg);
}

TEST_CASE("under mpiexec a sweep's points are split over the processes and rank 0 prints what a serial run does", "[sim][cli][mpi]") {
  if (std::system("command -v mpiexec >/dev/null 2>&1") != 0) {
    WARN("mpiexec is not installed: the split run is not checked");
    return;
  }
  std::string args = " sim ring_allreduce,bruck_allgather -n 4..16:x2 --model analytic --sweep size=1KiB..64KiB --csv - | cut -d, -f1-8";
  Ran serial = sh("'" + kBin + "'" + args);
  REQUIRE(serial.rc == 0);
  Ran split = sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpiexec -n 3 '" + kBin +
                 "'" + args);
  CHECK(split.rc == 0);
  CHECK(split.out == serial.out);
}

TEST_CASE("--map: one host per rank, each once, every number in range", "[sim][cli][bounds]") {
  // Issue 23: `--map 99999999999999999999,…` named host 4294967295, and a map with an extra or a
  // repeated host was accepted silently.
  auto run = [](const std::string& map) { return sh2("'" + kBin + "' sim ring_allreduce -n 4 --model analytic --map " + map); };
  Ran big = run("99999999999999999999,1,2,3");
  CHECK(big.rc == 2);
  CHECK(big.out.find("bad --map entry '99999999999999999999': no platform has that many hosts") != std::string::npos);
  CHECK(big.out.find("4294967295") == std::string::npos);
  Ran twice = run("0,1,1,3");
  CHECK(twice.rc == 2);
  CHECK(twice.out.find("--map puts ranks 1 and 2 both on host 1: one rank per host") != std::string::npos);
  Ran extra = run("0,1,2,3,4");
  CHECK(extra.rc == 2);
  CHECK(extra.out.find("--map gives hosts for 5 ranks; N = 4: one host per rank") != std::string::npos);
  Ran past = run("0,1,2,9");
  CHECK(past.rc == 2);
  CHECK(past.out.find("--map puts rank 3 on host 9, but the platform has 4 hosts") != std::string::npos);
  CHECK(run("3,2,1,0").rc == 0);
}

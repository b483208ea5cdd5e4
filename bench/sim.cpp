// bench/sim: how fast the simulators are, each against a baseline measured in the same run.
//
// 1. SimGrid mode against a hand-written S4U program of the same ring traffic, on the same
//    platform (star:bw=100Gbps,lat=1us,model=ideal, built by sim::parse_platform and
//    sim::build_simgrid in both): N actors, each doing 2(N-1) steps of put_async(size/N bytes) to
//    its right neighbour's mailbox, get_async from its own, wait both — the natural fast S4U ring
//    all-reduce. Our side elaborates ring_allreduce and runs sim::simulate_simgrid; its own
//    SimResult::wall_s (engine, platform, actors, run) is held against the hand-written program's
//    (engine, platform, actors, run), and the end-to-end time of our process (elaboration
//    included) is reported beside it. Both must give the closed form 2(N-1)(α + n/N·β).
//    Then the structure the engine rejected: one driver actor starting every message with
//    Comm::sendto_async and waiting on everything in flight with Activity::wait_any.
// 2. The analytic backend on the same ring: events per second and peak memory at N = 1,024 and
//    4,096, its speed against the hand-written SimGrid program's at N = 1,024, and the ring at
//    N = 4,096 end to end (elaboration included) against the goal of 30 s and 3 GiB.
// 3. A 1,048,576-rank recursive-doubling all-reduce (size 1 MiB) simulated analytically, end to
//    end; if it does not fit, the largest power of two that does.
//
// Each measurement runs in a child process (bench/child_process.hpp), for its own peak memory
// (wait4's maxrss: the largest of the child and the processes it waited for, so it includes the
// SimGrid child that simulate_simgrid forks) and a time limit (the child's whole process group
// is killed). Times of parts 1 and 2 are the fastest of --reps runs (default 3), peaks the
// largest. `--quick` runs tiny sizes as a smoke test; it asserts nothing about time.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/child_process.hpp"
#include "core/dsl/session.hpp"
#include "core/pipeline.hpp"
#include "sim/platform.hpp"
#include "sim/sim.hpp"

#ifdef STEPGRAPH_HAVE_SIMGRID
#include <simgrid/s4u.hpp>

#include "sim/simgrid_platform.hpp"
#endif

using namespace sg;
using Clock = std::chrono::steady_clock;

namespace {

const char* kPlatform = "star:bw=100Gbps,lat=1us,model=ideal";
constexpr double kAlpha = 1e-6;            // the star's end-to-end latency
constexpr double kBeta = 8.0 / 100e9;      // seconds per byte at 100 Gbps
constexpr uint64_t kRingSize = 64u << 20;  // ring_allreduce's default size

struct Row {
  bool ok = false;
  bool killed = false;
  double sim_time = 0;  // simulated seconds
  double sim_s = 0;     // the simulation's wall time (hand-written: engine, platform, actors, run)
  double elab_s = 0;    // elaboration and passes
  double total_s = 0;   // the whole measurement, end to end
  uint64_t events = 0, messages = 0, steps = 0, estimate_bytes = 0;
  long peak_kb = 0;
  char error[160] = {};
};

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void set_error(Row& r, const std::string& what) { std::snprintf(r.error, sizeof r.error, "%s", what.c_str()); }

double ring_closed_form(uint32_t n) { return 2.0 * (n - 1) * (kAlpha + static_cast<double>(kRingSize / n) * kBeta); }

// A child past its time limit takes its process group with it: simulate_simgrid's own child too.
void on_alarm(int) { kill(0, SIGKILL); }

template <class Fn>
Row in_child(Fn fn, unsigned limit_s) {
  bool finished = false;
  long peak = 0;
  std::fflush(stdout);  // the child's SimGrid flushes what it inherited: print it once
  Row r = run_in_child<Row>(
      [&] {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGALRM, on_alarm);
        return fn();
      },
      limit_s, finished, peak);
  r.killed = !finished;
  r.peak_kb = peak;
  return r;
}

// The fastest of `reps` runs (times), the largest peak.
template <class Fn>
Row best_of(Fn fn, unsigned limit_s, int reps) {
  Row r = in_child(fn, limit_s);
  for (int k = 1; k < reps && r.ok; ++k) {
    Row x = in_child(fn, limit_s);
    if (!x.ok) break;
    if (x.sim_s < r.sim_s) r.sim_s = x.sim_s;
    if (x.total_s < r.total_s) r.total_s = x.total_s;
    if (x.elab_s < r.elab_s) r.elab_s = x.elab_s;
    r.peak_kb = std::max(r.peak_kb, x.peak_kb);
  }
  return r;
}

// Elaborates a library schedule (and runs the passes) into g; false with r.error set.
bool build(const char* schedule, uint32_t n, const char* size, std::unique_ptr<StepGraph>& g, Row& r) {
  Session s;
  Target t = open_target(s, schedule);
  BuildOptions bo;
  bo.elab.nranks = n;
  if (size) bo.elab.sets.emplace_back("size", size);
  SizeEstimate est;
  bo.estimate = &est;
  g = build(s, t, bo).graph;
  if (!g) {
    std::string d = s.diags.render(s.sources);
    set_error(r, d.empty() ? std::string("cannot elaborate ") + schedule : d);
    return false;
  }
  r.estimate_bytes = est.bytes;
  r.steps = g->size();
  return true;
}

// stepgraph end to end: elaborate, then simulate with `model` on kPlatform.
Row run_stepgraph(const char* schedule, uint32_t n, const char* size, sim::Model model) {
  Row r;
  auto t0 = Clock::now();
  std::unique_ptr<StepGraph> g;
  if (!build(schedule, n, size, g, r)) return r;
  r.elab_s = since(t0);
  sim::Platform p;
  if (Session ps; !sim::parse_platform(kPlatform, n, p, ps.sources, ps.diags)) {
    set_error(r, ps.diags.render(ps.sources));
    return r;
  }
  sim::SimOptions so;
  so.model = model;
  sim::SimResult res = model == sim::Model::Analytic ? sim::simulate_analytic(*g, p, so) : sim::simulate(*g, p, so);
  r.total_s = since(t0);
  if (!res.error.empty() || !res.completed) {
    set_error(r, res.error.empty() ? std::string("the simulation did not complete (deadlock)") : res.error);
    return r;
  }
  r.sim_time = res.time_s;
  r.sim_s = res.wall_s;
  r.events = res.events;
  r.messages = res.messages;
  r.ok = true;
  return r;
}

#ifdef STEPGRAPH_HAVE_SIMGRID
namespace sg4 = simgrid::s4u;

// The hand-written S4U ring all-reduce: one actor per rank (driver = false), or one driver actor
// over Comm::sendto_async and wait_any (driver = true). Timed from the engine's creation to the
// end of its run, as SimResult::wall_s is.
Row run_handwritten(uint32_t n, bool driver) {
  Row r;
  sim::Platform p;
  if (Session ps; !sim::parse_platform(kPlatform, n, p, ps.sources, ps.diags)) {
    set_error(r, ps.diags.render(ps.sources));
    return r;
  }
  auto t0 = Clock::now();
  std::vector<std::string> args = {"bench_sim", "--log=root.thres:critical", "--log=root.app:file:/dev/null"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  sg4::Engine e(&argc, argv.data());
  std::vector<sg4::Host*> hosts;
  sim::build_simgrid(p, e, hosts);
  const uint64_t bytes = kRingSize / n;
  const uint32_t steps = 2 * (n - 1);
  static int token;  // the payload: no data changes hands
  if (!driver) {
    for (uint32_t k = 0; k < n; ++k) {
      std::string name = "r";  // not "r" + std::to_string(k): GCC 12's false -Wrestrict
      name += std::to_string(k);
      sg4::Actor::create(name, hosts[k], [k, n, bytes, steps] {
        std::string me = "m", right = "m";
        me += std::to_string(k);
        right += std::to_string((k + 1) % n);
        sg4::Mailbox* mine = sg4::Mailbox::by_name(me);
        sg4::Mailbox* next = sg4::Mailbox::by_name(right);
        for (uint32_t s = 0; s < steps; ++s) {
          sg4::CommPtr snd = next->put_async(&token, bytes);
          int* got = nullptr;
          sg4::CommPtr rcv = mine->get_async<int>(&got);
          rcv->wait();
          snd->wait();
        }
      });
    }
  } else {
    sg4::Actor::create("driver", hosts[0], [&hosts, n, bytes, steps] {
      // Rank q starts step s + 1 when its step-s message has been sent and its left neighbour's
      // has arrived (a comm host to host ends when both are true of it).
      std::vector<uint32_t> step(n, 0), sent(n, 0), arrived(n, 0);
      std::vector<sg4::ActivityPtr> inflight;
      std::vector<uint32_t> owner;
      for (uint32_t q = 0; q < n; ++q) {
        inflight.push_back(sg4::Comm::sendto_async(hosts[q], hosts[(q + 1) % n], bytes));
        owner.push_back(q);
      }
      while (!inflight.empty()) {
        auto i = static_cast<size_t>(sg4::Activity::wait_any(inflight));
        uint32_t q = owner[i];
        inflight[i] = inflight.back();
        inflight.pop_back();
        owner[i] = owner.back();
        owner.pop_back();
        uint32_t d = (q + 1) % n;
        ++sent[q];
        ++arrived[d];
        for (uint32_t x : {q, d}) {
          if (step[x] + 1 < steps && sent[x] > step[x] && arrived[x] > step[x]) {
            ++step[x];
            inflight.push_back(sg4::Comm::sendto_async(hosts[x], hosts[(x + 1) % n], bytes));
            owner.push_back(x);
          }
        }
      }
    });
  }
  e.run();
  r.sim_s = since(t0);
  r.total_s = r.sim_s;
  r.sim_time = sg4::Engine::get_clock();
  r.messages = uint64_t{n} * steps;
  r.ok = true;
  return r;
}
#endif

double mib(long kb) { return static_cast<double>(kb) / 1024.0; }
double gib(long kb) { return static_cast<double>(kb) / (1024.0 * 1024.0); }
double rel(double a, double b) { return b != 0 ? std::fabs(a - b) / b : std::fabs(a); }

void print_failure(const char* what, uint32_t n, const Row& r, unsigned limit) {
  if (r.killed) std::printf("  %-26s N = %7u: killed after %u s (or out of memory), peak %.1f MiB\n", what, n, limit, mib(r.peak_kb));
  else std::printf("  %-26s N = %7u: failed: %s\n", what, n, r.error);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 3;
  int part = 0;  // 0: all three parts
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true, reps = 1;
    else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--part") == 0 && i + 1 < argc) part = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_sim [--quick] [--reps K] [--part 1|2|3]\n");
      return 2;
    }
  }
  const std::vector<uint32_t> ring_ns = quick ? std::vector<uint32_t>{16, 64} : std::vector<uint32_t>{256, 1024};
  [[maybe_unused]] const std::vector<uint32_t> driver_ns =
      quick ? std::vector<uint32_t>{16, 64} : std::vector<uint32_t>{256, 512};  // 1,024 passes 120 s
  const std::vector<uint32_t> analytic_ns = quick ? std::vector<uint32_t>{16, 64} : std::vector<uint32_t>{1024, 4096};
  const uint32_t big_n = quick ? 1024 : 1u << 20;
  const unsigned limit = quick ? 60 : 300, big_limit = 600;
  [[maybe_unused]] const unsigned driver_limit = quick ? 60 : 120;
  const char* ring = "ring_allreduce";
  int status = 0;

  std::printf("bench/sim: stepgraph's simulators against hand-written programs of the same traffic, measured in this run\n");
  std::printf("platform %s; ring all-reduce of %llu MiB (size/N bytes per message); each run in its own process\n", kPlatform,
              static_cast<unsigned long long>(kRingSize >> 20));
  std::printf("times: the fastest of %d runs; peak: the largest resident set%s\n\n", reps,
              quick ? " (--quick: tiny sizes; the goals are for the full run)" : "");

  // ---- 1. SimGrid mode against the hand-written S4U ring ------------------------------------
  [[maybe_unused]] double hand_1024 = 0, hand_1024_msgs = 0;
  uint32_t hand_ref_n = ring_ns.back();
#ifdef STEPGRAPH_HAVE_SIMGRID
  if (part == 0 || part == 1) {
    std::printf("1. SimGrid mode vs a hand-written S4U ring (an actor per rank: put_async right, get_async own, wait both)\n");
    std::printf("   hand s: engine + platform + actors + run; sim s: SimResult::wall_s (the same); total s: our process end to end\n\n");
    std::printf("%6s %10s %13s %13s %13s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n", "N", "messages", "hand sim t", "our sim t", "closed form",
                "hand s", "hand MiB", "elab s", "sim s", "total s", "our MiB", "events", "sim/hand", "tot/hand");
    bool goal1 = true;
    for (uint32_t n : ring_ns) {
      Row h = best_of([n] { return run_handwritten(n, false); }, limit, reps);
      Row s = best_of([n, ring] { return run_stepgraph(ring, n, nullptr, sim::Model::SimGrid); }, limit, reps);
      if (!h.ok || !s.ok) {
        if (!h.ok) print_failure("hand-written", n, h, limit);
        if (!s.ok) print_failure("stepgraph simgrid", n, s, limit);
        status = 1;
        goal1 = false;
        continue;
      }
      double cf = ring_closed_form(n);
      std::printf("%6u %10llu %11.6fms %11.6fms %11.6fms %9.3f %9.1f %9.3f %9.3f %9.3f %9.1f %9llu %7.2fx %7.2fx\n", n,
                  static_cast<unsigned long long>(s.messages), h.sim_time * 1e3, s.sim_time * 1e3, cf * 1e3, h.sim_s, mib(h.peak_kb),
                  s.elab_s, s.sim_s, s.total_s, mib(s.peak_kb), static_cast<unsigned long long>(s.events), s.sim_s / h.sim_s,
                  s.total_s / h.sim_s);
      std::fflush(stdout);
      if (rel(h.sim_time, cf) > 1e-9 || rel(s.sim_time, cf) > 1e-9) {
        std::printf("       simulated times differ from the closed form: hand %.3g, ours %.3g (relative)\n", rel(h.sim_time, cf),
                    rel(s.sim_time, cf));
        status = 1;
      }
      if (s.sim_s > 1.5 * h.sim_s) goal1 = false;
      hand_1024 = h.sim_s;
      hand_1024_msgs = static_cast<double>(h.messages);
    }
    std::printf("\n   goal: SimGrid mode within 1.5x the hand-written wall time at N = %u and %u: %s\n\n", ring_ns[0], ring_ns[1],
                quick   ? "(not judged in --quick)"
                : goal1 ? "met"
                        : "NOT met");

    std::printf("   the rejected structure: one driver actor, Comm::sendto_async host to host, Activity::wait_any over all in flight\n\n");
    std::printf("%6s %10s %13s %11s %9s %12s\n", "N", "messages", "sim t", "driver s", "MiB", "vs actors");
    double actors_s = 0;
    for (uint32_t n : driver_ns) {
      Row a = best_of([n] { return run_handwritten(n, false); }, limit, 1);
      actors_s = a.ok ? a.sim_s : 0;
      Row d = in_child([n] { return run_handwritten(n, true); }, driver_limit);
      if (!d.ok) {
        print_failure("driver", n, d, driver_limit);
        break;  // larger N only take longer
      }
      std::printf("%6u %10llu %11.6fms %10.3fs %9.1f %11.1fx\n", n, static_cast<unsigned long long>(d.messages), d.sim_time * 1e3, d.sim_s,
                  mib(d.peak_kb), actors_s > 0 ? d.sim_s / actors_s : 0.0);
      std::fflush(stdout);
    }
    std::printf("   (vs actors: against the one-actor-per-rank program's time measured just before it)\n\n");
  }
#else
  std::printf("1. skipped: built without SimGrid (STEPGRAPH_WITH_SIMGRID=OFF)\n\n");
#endif

  // ---- 2. the analytic backend ---------------------------------------------------------------
  if (part == 0 || part == 2) {
    std::printf("2. the analytic backend (sim::simulate_analytic) on ring_allreduce, elaboration included in total s\n\n");
    std::printf("%6s %12s %13s %13s %9s %9s %12s %12s %9s %9s\n", "N", "messages", "sim t", "closed form", "elab s", "sim s", "events",
                "events/s", "total s", "peak MiB");
    Row at_ref, at_big;
    for (uint32_t n : analytic_ns) {
      Row a = best_of([n, ring] { return run_stepgraph(ring, n, nullptr, sim::Model::Analytic); }, limit, reps);
      if (!a.ok) {
        print_failure("analytic", n, a, limit);
        status = 1;
        continue;
      }
      double cf = ring_closed_form(n);
      std::printf("%6u %12llu %11.6fms %11.6fms %9.3f %9.3f %12llu %12.4g %9.3f %9.1f\n", n, static_cast<unsigned long long>(a.messages),
                  a.sim_time * 1e3, cf * 1e3, a.elab_s, a.sim_s, static_cast<unsigned long long>(a.events),
                  static_cast<double>(a.events) / a.sim_s, a.total_s, mib(a.peak_kb));
      std::fflush(stdout);
      if (rel(a.sim_time, cf) > 1e-6) {
        std::printf("       simulated time differs from the closed form by %.3g (relative)\n", rel(a.sim_time, cf));
        status = 1;
      }
      if (n == hand_ref_n) at_ref = a;
      if (n == analytic_ns.back()) at_big = a;
    }
    std::printf("\n");
    if (hand_1024 > 0 && at_ref.ok) {
      std::printf("   speed against the hand-written SimGrid ring at N = %u (%.3f s, %.3g messages/s):\n", hand_ref_n, hand_1024,
                  hand_1024_msgs / hand_1024);
      std::printf("     simulation alone   %.3f s, %.3g messages/s: %.1fx faster\n", at_ref.sim_s,
                  static_cast<double>(at_ref.messages) / at_ref.sim_s, hand_1024 / at_ref.sim_s);
      std::printf("     end to end         %.3f s (elaboration included): %.1fx faster\n", at_ref.total_s, hand_1024 / at_ref.total_s);
      std::printf("     goal: at least 10x: %s\n", quick ? "(not judged in --quick)" : hand_1024 / at_ref.sim_s >= 10 ? "met" : "NOT met");
    }
    if (at_big.ok) {
      bool met = at_big.total_s <= 30 && gib(at_big.peak_kb) <= 3.0;
      std::printf("   ring all-reduce at N = %u end to end: %.1f s, %.2f GiB peak (%llu messages, %llu steps); goal 30 s and 3 GiB: %s\n",
                  analytic_ns.back(), at_big.total_s, gib(at_big.peak_kb), static_cast<unsigned long long>(at_big.messages),
                  static_cast<unsigned long long>(at_big.steps),
                  quick ? "(not judged in --quick)"
                  : met ? "met"
                        : "NOT met");
      std::printf("   reference: LogGOPSim needed 304 s and 9.4 GB for it on a machine like this one (issue 7; not run here)\n");
    }
    std::printf("\n");
  }

  // ---- 3. a million ranks ----------------------------------------------------------------------
  if (part == 0 || part == 3) std::printf("3. recursive_doubling_allreduce, size 1 MiB, simulated analytically end to end (one run)\n\n");
  const char* rd = "recursive_doubling_allreduce";
  bool fitted = part != 0 && part != 3;
  for (uint32_t n = big_n; n >= 2 && !fitted; n /= 2) {
    Row b = in_child([n, rd] { return run_stepgraph(rd, n, "1MiB", sim::Model::Analytic); }, big_limit);
    if (!b.ok) {
      print_failure("recursive doubling", n, b, big_limit);
      continue;  // report the largest power of two that fits
    }
    fitted = true;
    double cf = std::log2(static_cast<double>(n)) * (kAlpha + static_cast<double>(1u << 20) * kBeta);
    std::printf("   N = %u: %llu steps, %llu messages, %llu events\n", n, static_cast<unsigned long long>(b.steps),
                static_cast<unsigned long long>(b.messages), static_cast<unsigned long long>(b.events));
    std::printf("   simulated %.6f ms (closed form log2(N)(α + nβ) = %.6f ms)\n", b.sim_time * 1e3, cf * 1e3);
    std::printf("   elaboration %.2f s, simulation %.2f s (%.3g events/s), total %.2f s, peak %.2f GiB (elaboration's estimate %.2f GiB)\n",
                b.elab_s, b.sim_s, static_cast<double>(b.events) / b.sim_s, b.total_s, gib(b.peak_kb),
                static_cast<double>(b.estimate_bytes) / static_cast<double>(1u << 30));
    if (rel(b.sim_time, cf) > 1e-6) {
      std::printf("   simulated time differs from the closed form by %.3g (relative)\n", rel(b.sim_time, cf));
      status = 1;
    }
    if (n != big_n) std::printf("   (the largest power of two that fits: %u ranks did not)\n", big_n);
  }
  if (!fitted) status = 1;
  return status;
}
